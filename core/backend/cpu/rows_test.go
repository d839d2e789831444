package cpu

import (
	"fmt"
	"slices"
	"testing"

	"strata/core/tensor"
)

// TestRowCopier checks the host-index row moves against Gather and
// ScatterAdd on the same indices, bit for bit: CopyRows and UploadRows
// against gathering the rows and adding them into zeros (where that sum is
// exact), AddRows against ScatterAdd, DownloadRows against Gather.
func TestRowCopier(t *testing.T) {
	for _, f := range []int{1, 16, 37, 128} {
		t.Run(fmt.Sprintf("f=%d", f), func(t *testing.T) {
			forAll(t, func(c *tc) []float64 {
				m, n := 29, 53 // source rows; destination rows, of which the first m are written
				from := make([]int32, m)
				for i := range from {
					from[i] = int32(c.rng.IntN(m)) // repeats
				}
				to := make([]int32, m)
				for i, p := range c.rng.Perm(n)[:m] {
					to[i] = int32(p) // distinct
				}
				x, _ := c.rand(m, f)
				gathered := c.zeros(m, f)
				c.ok(c.be.Gather(x, c.ints32(from), gathered))

				// CopyRows over rows that held values: only rows to change.
				y, yv := c.rand(n, f)
				gv := get(gathered)
				for i, r := range to {
					copy(yv[int(r)*f:int(r+1)*f], gv[i*f:(i+1)*f])
				}
				c.ok(c.be.CopyRows(x, from, y, to))
				c.same("CopyRows", get(y), yv)

				// AddRows = ScatterAdd of the gathered rows.
				want := c.zeros(n, f)
				c.ok(c.be.Copy(want, y))
				c.ok(c.be.AddRows(x, from, y, to))
				c.ok(c.be.ScatterAdd(gathered, c.ints32(to), want))
				c.same("AddRows", get(y), get(want))

				// DownloadRows = Gather; UploadRows puts them back at to.
				host := rowsHostBuf(c.dt, m*f)
				c.ok(c.be.DownloadRows(x, from, host))
				c.same("DownloadRows", rowsHostVals(host), get(gathered))
				z := c.zeros(n, f)
				c.ok(c.be.UploadRows(host, z, to))
				back := c.zeros(n, f)
				c.ok(c.be.ScatterAdd(gathered, c.ints32(to), back))
				c.same("UploadRows", get(z), get(back))

				// Identity indices (nil).
				w := c.zeros(m, f)
				c.ok(c.be.CopyRows(x, nil, w, nil))
				c.same("CopyRows identity", get(w), get(x))
				return slices.Concat(get(y), get(z))
			})
		})
	}
}

// TestRowCopierErrors checks that bad indices and mismatched operands are
// errors, not out-of-range writes.
func TestRowCopierErrors(t *testing.T) {
	c := newTC(t, 2, tensor.Float32, 1)
	x, _ := c.rand(4, 3)
	y := c.zeros(5, 3)
	narrow := c.zeros(5, 2)
	cases := []struct {
		name string
		err  error
	}{
		{"row to out of range", c.be.CopyRows(x, []int32{0}, y, []int32{5})},
		{"row from out of range", c.be.AddRows(x, []int32{4}, y, []int32{0})},
		{"negative row", c.be.CopyRows(x, []int32{-1}, y, []int32{0})},
		{"counts differ", c.be.CopyRows(x, []int32{0, 1}, y, []int32{0})},
		{"widths differ", c.be.CopyRows(x, nil, narrow, nil)},
		{"identity from a shorter x", c.be.CopyRows(x, nil, y, nil)},
		{"host buffer of another dtype", c.be.UploadRows(make([]float64, 3), y, []int32{0})},
		{"host buffer too short", c.be.DownloadRows(x, []int32{0, 1}, make([]float32, 3))},
	}
	for _, tc := range cases {
		if tc.err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// ints32 uploads v as an int32 index tensor.
func (c *tc) ints32(v []int32) *tensor.Tensor {
	w := make([]int64, len(v))
	for i, x := range v {
		w[i] = int64(x)
	}
	return c.ints(tensor.Int32, w)
}

func rowsHostBuf(dt tensor.DType, n int) any {
	if dt == tensor.Float32 {
		return make([]float32, n)
	}
	return make([]float64, n)
}

func rowsHostVals(v any) []float64 {
	switch s := v.(type) {
	case []float32:
		out := make([]float64, len(s))
		for i, x := range s {
			out[i] = float64(x)
		}
		return out
	case []float64:
		return s
	}
	return nil
}

// TestRowView: a view of rows [lo, hi) holds those rows of every dtype,
// writing it writes the tensor, releasing it leaves the tensor alone,
// and rows outside the tensor are refused.
func TestRowView(t *testing.T) {
	be := New(Options{Threads: 2})
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Float16} {
		for _, rng := range [][2]int{{0, 5}, {2, 4}, {5, 5}, {4, 5}} {
			t.Run(fmt.Sprintf("%v/%d-%d", dt, rng[0], rng[1]), func(t *testing.T) {
				x, err := be.Alloc(dt, []int{5, 3}, tensor.Host)
				if err != nil {
					t.Fatal(err)
				}
				defer be.Release(x)
				v, err := be.RowView(x, rng[0], rng[1])
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(v.Shape(), []int{rng[1] - rng[0], 3}) {
					t.Fatalf("shape %v, want [%d 3]", v.Shape(), rng[1]-rng[0])
				}
				if rng[1] > rng[0] { // the view's first element is the tensor's element lo*3
					be.Release(v)
					v, _ = be.RowView(x, rng[0], rng[1])
					if err := be.Fill(v, 1); err != nil {
						t.Fatal(err)
					}
					for i, w := range get(x) {
						in := i >= rng[0]*3 && i < rng[1]*3
						if (w == 1) != in {
							t.Fatalf("element %d is %v after filling rows [%d, %d)", i, w, rng[0], rng[1])
						}
					}
				}
			})
		}
	}
	x, _ := be.Alloc(tensor.Float32, []int{5, 3}, tensor.Host)
	defer be.Release(x)
	for _, rng := range [][2]int{{-1, 2}, {3, 2}, {0, 6}} {
		if _, err := be.RowView(x, rng[0], rng[1]); err == nil {
			t.Errorf("rows [%d, %d) of 5: no error", rng[0], rng[1])
		}
	}
}
