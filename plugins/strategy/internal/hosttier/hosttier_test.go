package hosttier

import (
	"fmt"
	"slices"
	"testing"

	"strata/core/tensor"
	"strata/plugins/strategy/internal/steprun"
)

// TestHostRows checks the host tier's row gathers, writes, additions
// and clearing, in RAM (split over goroutines for many rows) and in a
// host file (sorted into runs: scattered rows, runs longer than one
// read, rows a page apart; additions deferred through the log, in small
// buckets and segments, and dropped by a clear), against plain loops
// over a reference.
func TestHostRows(t *testing.T) {
	type matrix struct {
		name string
		new  func(n, cols int) (Rows, error)
	}
	dir := t.TempDir()
	files := 0 // a host file is a new file: one path per matrix
	// file returns a matrix in a host file whose log holds up to
	// cacheBuckets of its buckets in RAM.
	file := func(cacheBuckets int64) func(n, cols int) (Rows, error) {
		return func(n, cols int) (Rows, error) {
			size := Bytes(tensor.Float64, n, []int{1, cols})
			files++
			f, closeFile, err := OpenFile(fmt.Sprintf("%s/host%d.bin", dir, files), size)
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { closeFile() })
			log, err := NewAddLog(dir, nil)
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { log.Close() })
			// Several buckets and segments, and a log bound that applies
			// the additions early many times in a pass.
			log.bucketBytes, log.segBytes, log.limitBytes = 5000, 700, 3000
			log.SetCache(cacheBuckets * 5000)
			a := &Arena{DT: tensor.Float64, File: f, Log: log, Size: size}
			if _, err := a.Matrix(n, 1); err != nil { // the matrix under test starts at a later offset
				return nil, err
			}
			return a.Matrix(n, cols)
		}
	}
	matrices := []matrix{
		{"ram", func(n, cols int) (Rows, error) { return newHostRows(tensor.Float64, n, cols, nil) }},
		{"file", file(0)},
		{"file, 3 buckets in RAM", file(3)},          // the others through the log
		{"file, every bucket in RAM", file(1 << 20)}, // no log
	}
	for _, m := range matrices {
		for _, n := range []int{3, 20000} {
			for _, cols := range []int{3, 128} {
				h, err := m.new(n, cols)
				if err != nil {
					t.Fatal(err)
				}
				want := make([]float64, n*cols)
				// A permutation of every row, then every third row (gaps), then
				// the rows of a contiguous range.
				sets := [][]int32{make([]int32, n), nil, nil}
				for i := range sets[0] {
					sets[0][i] = int32((i*7919 + 11) % n) // n is not a multiple of 7919
				}
				for i := 0; i < n; i += 3 {
					sets[1] = append(sets[1], int32(i))
				}
				for i := n / 3; i < 2*n/3+1; i++ {
					sets[2] = append(sets[2], int32(i))
				}
				var prev any // the last gather's buffer, reused with stale rows
				for si, ids := range sets {
					vals := make([]float64, len(ids)*cols)
					for i := range vals {
						vals[i] = float64(si*1000 + i)
					}
					if err := h.Put(ids, vals); err != nil {
						t.Fatal(err)
					}
					if err := h.Add(ids, vals); err != nil {
						t.Fatal(err)
					}
					for i, u := range ids {
						for j := range cols {
							want[int(u)*cols+j] = 2 * vals[i*cols+j]
						}
					}
					all := sets[0]
					got, err := h.Gather(all, prev)
					if err != nil {
						t.Fatal(err)
					}
					prev = got
					for i, u := range all {
						for j := range cols {
							if g := got.([]float64)[i*cols+j]; g != want[int(u)*cols+j] {
								t.Fatalf("%s n=%d cols=%d set %d: row %d column %d is %v, want %v", m.name, n, cols, si, u, j, g, want[int(u)*cols+j])
							}
						}
					}
				}
				ones := make([]float64, len(sets[1])*cols)
				for i := range ones {
					ones[i] = 1
				}
				if err := h.Add(sets[1], ones); err != nil { // pending, then dropped
					t.Fatal(err)
				}
				if err := h.Zero(); err != nil {
					t.Fatal(err)
				}
				got, err := h.Gather(sets[1], prev)
				if err != nil {
					t.Fatal(err)
				}
				for i, v := range got.([]float64) {
					if v != 0 {
						t.Fatalf("%s n=%d: element %d is %v after zero", m.name, n, i, v)
					}
				}
				// Additions into the cleared matrix (a hole).
				if err := h.Add(sets[1], ones); err != nil {
					t.Fatal(err)
				}
				if got, err = h.Gather(sets[0], got); err != nil {
					t.Fatal(err)
				}
				for i, u := range sets[0] {
					for j := range cols {
						want := float64(1 - min(1, int(u)%3))
						if g := got.([]float64)[i*cols+j]; g != want {
							t.Fatalf("%s n=%d cols=%d after zero: row %d column %d is %v, want %v", m.name, n, cols, u, j, g, want)
						}
					}
				}
				// The file keeps its old rows when cleared: writes into a
				// part of a cleared matrix (a put of a range, additions to
				// the first rows only, most buckets untouched) leave every
				// other row zero.
				first := sets[1][:len(sets[1])/8+1]
				for _, write := range []func() error{
					func() error { return h.Put(sets[2], make([]float64, len(sets[2])*cols)) },
					func() error { return h.Add(first, ones[:len(first)*cols]) },
				} {
					if err := h.Zero(); err != nil {
						t.Fatal(err)
					}
					if err := write(); err != nil {
						t.Fatal(err)
					}
					if got, err = h.Gather(sets[0], got); err != nil {
						t.Fatal(err)
					}
					for i, u := range sets[0] {
						if g := got.([]float64)[i*cols]; g != 0 && !slices.Contains(first, u) {
							t.Fatalf("%s n=%d cols=%d: row %d is %v after a clear and a write of other rows", m.name, n, cols, u, g)
						}
					}
				}
			}
		}
	}
}

// TestHostFileCounts checks the host file's byte counts against
// hand-counted calls: a write of a run of rows, a gather of rows a page
// apart (one read of the range between them), and additions through the
// log (the rows appended with their ids, then the log read back and the
// bucket's range read and written once), and a cleared matrix, which
// is not read until written.
func TestHostFileCounts(t *testing.T) {
	dir := t.TempDir()
	const n, cols = 1000, 4 // 32-byte rows of float64: a page holds 128
	size := Bytes(tensor.Float64, n, []int{cols})
	f, closeFile, err := OpenFile(dir+"/host.bin", size)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFile()
	io := &IOCount{}
	log, err := NewAddLog(dir, io)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	a := &Arena{DT: tensor.Float64, File: f, Log: log, Size: size, IO: io}
	h, err := a.Matrix(n, cols)
	if err != nil {
		t.Fatal(err)
	}
	const row = cols * 8
	steps := []struct {
		name          string
		do            func() error
		read, written int64
	}{
		{"put rows 10-19", func() error { return h.Put(steprun.Iota32From(10, 20), make([]float64, 10*cols)) }, 0, 10 * row},
		// 100 rows apart: two reads of one row each (hostGapBytes).
		{"gather rows 0 and 100", func() error { _, err := h.Gather([]int32{100, 0}, nil); return err }, 2 * row, 0},
		{"add rows 5 and 7", func() error { return h.Add([]int32{7, 5}, make([]float64, 2*cols)) }, 0, 0},
		// The two rows spill to the log when the bucket is applied:
		// none were spilled (a segment holds more), so the gather reads
		// the bucket's range (the whole matrix) and writes it back, then
		// reads the row.
		{"gather row 3 (applies the additions)", func() error { _, err := h.Gather([]int32{3}, nil); return err }, n*row + row, n * row},
		// A cleared matrix is read without reading the file until
		// something is written to it: the additions' range is not read
		// before they are applied. Clearing touches nothing.
		{"zero", h.Zero, 0, 0},
		{"gather rows 1-3 of the cleared matrix", func() error { _, err := h.Gather([]int32{1, 2, 3}, nil); return err }, 0, 0},
		{"add rows 5 and 7, gather row 3", func() error {
			if err := h.Add([]int32{7, 5}, make([]float64, 2*cols)); err != nil {
				return err
			}
			_, err := h.Gather([]int32{3}, nil)
			return err
		}, row, n * row},
	}
	for _, s := range steps {
		r0, w0 := io.Bytes()
		if err := s.do(); err != nil {
			t.Fatal(err)
		}
		r1, w1 := io.Bytes()
		if r1-r0 != s.read || w1-w0 != s.written {
			t.Errorf("%s: read %d, wrote %d bytes; want %d, %d", s.name, r1-r0, w1-w0, s.read, s.written)
		}
	}
}

// TestHostFileGapRule checks the reads and writes of scattered rows:
// a gather reads every row it needs and, of the others, only those in
// gaps below hostGapBytes between two needed rows, one call per run so
// joined; a put writes exactly its rows, one call per run of adjacent
// rows. The expected runs are counted here from the sorted rows, for
// rows narrower, as wide as and wider than the gap.
func TestHostFileGapRule(t *testing.T) {
	dir := t.TempDir()
	const n = 4000
	for _, cols := range []int{8, 128, 256} { // 64, 1024 and 2048-byte rows of float64
		t.Run(fmt.Sprint(cols), func(t *testing.T) {
			size := Bytes(tensor.Float64, n, []int{cols})
			f, closeFile, err := OpenFile(fmt.Sprintf("%s/gap%d.bin", dir, cols), size)
			if err != nil {
				t.Fatal(err)
			}
			defer closeFile()
			io := &IOCount{}
			a := &Arena{DT: tensor.Float64, File: f, Size: size, IO: io}
			h, err := a.Matrix(n, cols)
			if err != nil {
				t.Fatal(err)
			}
			all := steprun.Iota32From(0, n)
			vals := make([]float64, n*cols)
			for i := range vals {
				vals[i] = float64(i)
			}
			if err := h.Put(all, vals); err != nil {
				t.Fatal(err)
			}
			// Under 1024 rows (one goroutine) in descending order, with
			// gaps of 1 to 40 rows: some below the rule's, some above.
			var ids []int32
			for u, k := n-1, 0; u >= 0 && len(ids) < 1000; k++ {
				ids = append(ids, int32(u))
				u -= 1 + (k*k*7)%40
			}
			row := int64(cols * 8)
			gap := max(1, hostGapBytes/row) // rows v - u <= gap are joined
			var wantRead, wantReads, wantWrites int64
			for i := len(ids) - 1; i >= 0; {
				lo, j := ids[i], i
				for j > 0 && int64(ids[j-1]-ids[j]) <= gap {
					j--
				}
				wantRead += int64(ids[j]-lo+1) * row
				wantReads++
				i = j - 1
			}
			for i := range ids {
				if i == 0 || ids[i-1] != ids[i]+1 {
					wantWrites++
				}
			}
			r0, _ := io.Bytes()
			c0, _ := io.Calls()
			got, err := h.Gather(ids, nil)
			if err != nil {
				t.Fatal(err)
			}
			r1, _ := io.Bytes()
			c1, _ := io.Calls()
			if r1-r0 != wantRead || c1-c0 != wantReads {
				t.Errorf("gather: read %d bytes in %d calls, want %d in %d", r1-r0, c1-c0, wantRead, wantReads)
			}
			for i, u := range ids {
				if g := got.([]float64)[i*cols : (i+1)*cols]; g[0] != vals[int(u)*cols] || g[cols-1] != vals[(int(u)+1)*cols-1] {
					t.Fatalf("gather: row %d holds %v..., want row %d", i, g[0], u)
				}
			}
			_, w0 := io.Bytes()
			_, c0 = io.Calls()
			if err := h.Put(ids, got); err != nil {
				t.Fatal(err)
			}
			_, w1 := io.Bytes()
			_, c1 = io.Calls()
			if w1-w0 != int64(len(ids))*row || c1-c0 != wantWrites {
				t.Errorf("put: wrote %d bytes in %d calls, want %d in %d", w1-w0, c1-c0, int64(len(ids))*row, wantWrites)
			}
		})
	}
}

// TestGatherTo checks gathers into given rows of a larger buffer, in RAM
// and in a host file: row ids[i] lands in row to[i], the other rows keep
// what they held, and a place outside the buffer is an error.
func TestGatherTo(t *testing.T) {
	for _, c := range []struct {
		cols    int
		ids, to []int32
	}{
		// Rows of 12 bytes: every row within the gap, read in one run
		// through the buffer.
		{3, []int32{7, 3, 49, 20, 21}, []int32{9, 0, 4, 2, 8}},
		// Rows of 1200 bytes (each its own run unless adjacent): 20-22
		// to places 5-7 and 40 to place 0 are read straight into the
		// destination, 30-31 to places 9 and 8 through the buffer.
		{300, []int32{21, 40, 31, 20, 30, 22}, []int32{6, 0, 8, 5, 9, 7}},
	} {
		t.Run(fmt.Sprint(c.cols), func(t *testing.T) { testGatherTo(t, c.cols, c.ids, c.to) })
	}
}

// testGatherTo gathers the rows ids of a 50-row matrix of cols columns
// into places to of 10 rows, in RAM and in a host file, and checks every
// place against the rows put.
func testGatherTo(t *testing.T, cols int, ids, to []int32) {
	const n = 50
	size := Bytes(tensor.Float32, n, []int{cols})
	f, closeFile, err := OpenFile(t.TempDir()+"/host.bin", size)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFile()
	inFile, err := (&Arena{DT: tensor.Float32, File: f, Size: size}).Matrix(n, cols)
	if err != nil {
		t.Fatal(err)
	}
	inRAM, err := newHostRows(tensor.Float32, n, cols, nil)
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]float32, n*cols)
	for i := range vals {
		vals[i] = float32(i + 1)
	}
	for name, h := range map[string]Rows{"ram": inRAM, "file": inFile} {
		if err := h.Put(steprun.Iota32From(0, n), vals); err != nil {
			t.Fatal(err)
		}
		dst := make([]float32, 10*cols)
		for i := range dst {
			dst[i] = -1
		}
		if err := h.GatherTo(ids, dst, to); err != nil {
			t.Fatal(err)
		}
		for r := range 10 {
			for j := range cols {
				want := float32(-1)
				if k := slices.Index(to, int32(r)); k >= 0 {
					want = vals[int(ids[k])*cols+j]
				}
				if got := dst[r*cols+j]; got != want {
					t.Fatalf("%s: row %d column %d holds %v, want %v", name, r, j, got, want)
				}
			}
		}
		bad := slices.Clone(to)
		bad[len(bad)-1] = 10
		if err := h.GatherTo(ids, dst, bad); err == nil {
			t.Errorf("%s: a gather to row 10 of 10 gave no error", name)
		}
	}
}
