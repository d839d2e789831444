package backendtest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"strata/core/backend"
	"strata/core/tensor"
)

// Memory, transfers, accounting and error parity. These run on the
// candidate alone (the reference only where a call must fail on both).

// gotAlloc allocates on the candidate and releases when the case ends.
func (c *tc) gotAlloc(dt tensor.DType, tier tensor.Tier, shape ...int) *tensor.Tensor {
	c.Helper()
	var x *tensor.Tensor
	err := protect(func() (err error) { x, err = c.s.got.Alloc(dt, shape, tier); return err })
	if err != nil {
		c.Fatalf("%s: candidate Alloc %v%v in %q: %v", c.name, dt, shape, tier, err)
	}
	c.Cleanup(func() { c.s.got.Release(x) })
	return x
}

// gotDo runs one candidate call and stops the case when it fails.
func (c *tc) gotDo(what string, f func() error) {
	c.Helper()
	if err := protect(f); err != nil {
		c.Fatalf("%s: candidate %s: %v", c.name, what, err)
	}
}

var roundTripShapes = [][]int{{1}, {257}, {13, 7}}

// shapeName is a shape in a subtest name: "13x7".
func shapeName(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = fmt.Sprint(d)
	}
	return strings.Join(parts, "x")
}

// testAlloc checks the tier list, the handle Alloc returns and that its
// memory is zero-filled, including for an empty shape.
func testAlloc(s *suite, t *testing.T) {
	if tiers := s.got.Tiers(); !slices.Contains(tiers, s.opts.Tier) {
		t.Errorf("candidate Tiers() = %v does not list %q", tiers, s.opts.Tier)
	}
	for _, dt := range allTypes {
		for _, shape := range append(slices.Clone(roundTripShapes), []int{0, 5}) {
			s.each(t, "Alloc", dt.Short()+"/"+shapeName(shape), func(c *tc) {
				x := c.gotAlloc(dt, s.opts.Tier, shape...)
				if x.DType() != dt || !slices.Equal(x.Shape(), shape) || x.Tier() != s.opts.Tier {
					c.Errorf("%s: Alloc returned %v, want %v%v@%s", c.name, x, dt, shape, s.opts.Tier)
				}
				got, err := fetch(s.got, x)
				if err != nil {
					c.Fatalf("%s: Download: %v", c.name, err)
				}
				c.compare("zero fill", dt, newSlice(dt, numel(shape)), got, 0)
			})
		}
	}
}

// specials returns n host values of dt for a bitwise round trip, led by
// the edge cases of the type (NaN, infinities, -0, subnormals, extremes).
func (c *tc) specials(dt tensor.DType, n int) any {
	switch dt {
	case tensor.Float32:
		sp := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1)),
			math.SmallestNonzeroFloat32, math.MaxFloat32, -1.5}
		v := make([]float32, n)
		for i := range v {
			if i < len(sp) {
				v[i] = sp[i]
			} else {
				v[i] = math.Float32frombits(c.rng.Uint32())
			}
		}
		return v
	case tensor.Float64:
		sp := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1),
			math.SmallestNonzeroFloat64, math.MaxFloat64, -1.5}
		v := make([]float64, n)
		for i := range v {
			if i < len(sp) {
				v[i] = sp[i]
			} else {
				v[i] = math.Float64frombits(c.rng.Uint64())
			}
		}
		return v
	case tensor.Int32:
		sp := []int32{math.MinInt32, math.MaxInt32, -1, 0}
		v := make([]int32, n)
		for i := range v {
			if i < len(sp) {
				v[i] = sp[i]
			} else {
				v[i] = int32(c.rng.Uint32())
			}
		}
		return v
	}
	sp := []int64{math.MinInt64, math.MaxInt64, 1<<53 + 1, -1}
	v := make([]int64, n)
	for i := range v {
		if i < len(sp) {
			v[i] = sp[i]
		} else {
			v[i] = int64(c.rng.Uint64())
		}
	}
	return v
}

// bits returns the bit patterns of a host slice, for bitwise comparison.
func bits(v any) []uint64 {
	var out []uint64
	switch s := v.(type) {
	case []float32:
		for _, x := range s {
			out = append(out, uint64(math.Float32bits(x)))
		}
	case []float64:
		for _, x := range s {
			out = append(out, math.Float64bits(x))
		}
	case []int32:
		for _, x := range s {
			out = append(out, uint64(uint32(x)))
		}
	case []int64:
		for _, x := range s {
			out = append(out, uint64(x))
		}
	}
	return out
}

// sameBits reports the first element whose bits differ (-1 for none).
func (c *tc) sameBits(what string, want, got any) {
	c.Helper()
	w, g := bits(want), bits(got)
	if len(w) != len(g) {
		c.Errorf("%s: %s: %d elements, want %d", c.name, what, len(g), len(w))
		return
	}
	for i := range w {
		if w[i] != g[i] {
			c.Errorf("%s: %s: element %d has bits %#x, want %#x (exact round trip)", c.name, what, i, g[i], w[i])
			return
		}
	}
}

// testRoundTrip uploads every dtype, special values included, to the
// candidate's tier and downloads it again, bit for bit.
func testRoundTrip(s *suite, t *testing.T) {
	for _, dt := range allTypes {
		for _, shape := range roundTripShapes {
			s.each(t, "RoundTrip", dt.Short()+"/"+shapeName(shape), func(c *tc) {
				src := c.specials(dt, numel(shape))
				x := c.gotAlloc(dt, s.opts.Tier, shape...)
				c.gotDo("Upload", func() error { return s.got.Upload(x, src) })
				got, err := fetch(s.got, x)
				if err != nil {
					c.Fatalf("%s: Download: %v", c.name, err)
				}
				c.sameBits("Upload/Download", src, got)
			})
		}
	}
}

// testCopy copies host → tier → tier → host on the candidate, bit for bit.
func testCopy(s *suite, t *testing.T) {
	for _, dt := range allTypes {
		s.each(t, "Copy", dt.Short(), func(c *tc) {
			shape := []int{19, 5}
			src := c.specials(dt, numel(shape))
			h1 := c.gotAlloc(dt, tensor.Host, shape...)
			d1 := c.gotAlloc(dt, s.opts.Tier, shape...)
			d2 := c.gotAlloc(dt, s.opts.Tier, shape...)
			h2 := c.gotAlloc(dt, tensor.Host, shape...)
			c.gotDo("Upload", func() error { return s.got.Upload(h1, src) })
			c.gotDo("Copy host→tier", func() error { return s.got.Copy(d1, h1) })
			c.gotDo("Copy tier→tier", func() error { return s.got.Copy(d2, d1) })
			c.gotDo("Copy tier→host", func() error { return s.got.Copy(h2, d2) })
			for _, x := range []struct {
				what string
				t    *tensor.Tensor
			}{{"host→tier", d1}, {"tier→tier", d2}, {"tier→host", h2}} {
				got, err := fetch(s.got, x.t)
				if err != nil {
					c.Fatalf("%s: Download after %s: %v", c.name, x.what, err)
				}
				c.sameBits("Copy "+x.what, src, got)
			}
		})
	}
}

// testStats checks that Alloc and UploadGraph show in the candidate's
// Stats for its tier and that Release and ReleaseGraph take them out.
func testStats(s *suite, t *testing.T) {
	tier := s.opts.Tier
	s.each(t, "Stats", "tensor", func(c *tc) {
		const rows, cols = 1000, 3
		n := int64(rows * cols * 4)
		before := s.got.Stats()
		var x *tensor.Tensor
		c.gotDo("Alloc", func() (err error) { x, err = s.got.Alloc(tensor.Float32, []int{rows, cols}, tier); return err })
		during := s.got.Stats()
		if d := during.InUse[tier] - before.InUse[tier]; d < n {
			c.Errorf("%s: InUse[%q] grew by %d bytes after allocating %d", c.name, tier, d, n)
		}
		if during.Peak[tier] < during.InUse[tier] {
			c.Errorf("%s: Peak[%q] = %d < InUse %d", c.name, tier, during.Peak[tier], during.InUse[tier])
		}
		s.got.Release(x)
		after := s.got.Stats()
		if after.InUse[tier] != before.InUse[tier] {
			c.Errorf("%s: InUse[%q] = %d after Release, %d before Alloc", c.name, tier, after.InUse[tier], before.InUse[tier])
		}
		if after.Peak[tier] < during.InUse[tier] {
			c.Errorf("%s: Peak[%q] fell to %d after Release, below the %d in use before it", c.name, tier, after.Peak[tier], during.InUse[tier])
		}
	})
	s.each(t, "Stats", "graph", func(c *tc) {
		g := c.randCSR(graphSpecs[0])
		before := s.got.Stats()
		var a backend.Adj
		c.gotDo("UploadGraph", func() (err error) { a, err = s.got.UploadGraph(g, tier); return err })
		during := s.got.Stats()
		if during.InUse[tier] <= before.InUse[tier] {
			c.Errorf("%s: InUse[%q] = %d after UploadGraph of %d edges, %d before", c.name, tier, during.InUse[tier], g.NNZ(), before.InUse[tier])
		}
		s.got.ReleaseGraph(a)
		if after := s.got.Stats(); after.InUse[tier] != before.InUse[tier] {
			c.Errorf("%s: InUse[%q] = %d after ReleaseGraph, %d before UploadGraph", c.name, tier, after.InUse[tier], before.InUse[tier])
		}
	})
}

// testUploadGraph checks the shape an uploaded adjacency reports.
func testUploadGraph(s *suite, t *testing.T) {
	for _, sp := range graphSpecs {
		s.each(t, "UploadGraph", sp.name, func(c *tc) {
			g := c.randCSR(sp)
			a := c.graph(g)
			if a.g.Rows() != g.NumRows || a.g.Cols() != g.NumCols || a.g.NNZ() != g.NNZ() || a.g.Tier() != s.opts.Tier {
				c.Errorf("%s: adjacency is %d×%d with %d edges in %q, want %d×%d with %d in %q", c.name,
					a.g.Rows(), a.g.Cols(), a.g.NNZ(), a.g.Tier(), g.NumRows, g.NumCols, g.NNZ(), s.opts.Tier)
			}
		})
	}
}

// testErrors makes malformed calls that must fail on both backends,
// without a panic.
func testErrors(s *suite, t *testing.T) {
	type errCase struct {
		name string
		call func(c *tc, b backend.Backend, sd side) error
	}
	f32, f64 := tensor.Float32, tensor.Float64
	cases := []errCase{
		{"GEMM/inner", func(c *tc, b backend.Backend, sd side) error {
			return b.GEMM(false, false, 1, sd.T(c.alloc(f32, 3, 4)), sd.T(c.alloc(f32, 5, 2)), 0, sd.T(c.alloc(f32, 3, 2)))
		}},
		{"GEMM/c-shape", func(c *tc, b backend.Backend, sd side) error {
			return b.GEMM(false, true, 1, sd.T(c.alloc(f32, 3, 4)), sd.T(c.alloc(f32, 2, 4)), 0, sd.T(c.alloc(f32, 2, 3)))
		}},
		{"GEMM/dtype", func(c *tc, b backend.Backend, sd side) error {
			return b.GEMM(false, false, 1, sd.T(c.alloc(f32, 3, 4)), sd.T(c.alloc(f64, 4, 2)), 0, sd.T(c.alloc(f32, 3, 2)))
		}},
		{"Elementwise/dtype", func(c *tc, b backend.Backend, sd side) error {
			return b.Elementwise(backend.Add, sd.T(c.alloc(f32, 4, 3)), sd.T(c.alloc(f64, 4, 3)), sd.T(c.alloc(f32, 4, 3)))
		}},
		{"Elementwise/broadcast", func(c *tc, b backend.Backend, sd side) error {
			return b.Elementwise(backend.Mul, sd.T(c.alloc(f32, 4, 3)), sd.T(c.alloc(f32, 4)), sd.T(c.alloc(f32, 4, 3)))
		}},
		{"Upload/length", func(c *tc, b backend.Backend, sd side) error {
			return b.Upload(sd.T(c.alloc(f32, 4, 3)), make([]float32, 13))
		}},
		{"Upload/type", func(c *tc, b backend.Backend, sd side) error {
			return b.Upload(sd.T(c.alloc(f32, 4, 3)), make([]float64, 12))
		}},
		{"Download/length", func(c *tc, b backend.Backend, sd side) error {
			return b.Download(sd.T(c.alloc(tensor.Int32, 5)), make([]int32, 4))
		}},
		{"Alloc/negative", func(c *tc, b backend.Backend, sd side) error {
			_, tier := c.backend(sd)
			x, err := b.Alloc(f32, []int{-1, 3}, tier)
			if x != nil {
				b.Release(x)
			}
			return err
		}},
		{"UploadGraph/indptr", func(c *tc, b backend.Backend, sd side) error {
			_, tier := c.backend(sd)
			g := c.randCSR(graphSpecs[1])
			g.Indptr = g.Indptr[:len(g.Indptr)-1]
			a, err := b.UploadGraph(g, tier)
			if a != nil {
				b.ReleaseGraph(a)
			}
			return err
		}},
		{"SpMM/x-rows", func(c *tc, b backend.Backend, sd side) error {
			a := c.errGraph(sd)
			return b.SpMM(c.ctx, a, false, nil, sd.T(c.alloc(f32, a.Cols()+1, 4)), 0, sd.T(c.alloc(f32, a.Rows(), 4)))
		}},
		{"SpMM/trans-x-rows", func(c *tc, b backend.Backend, sd side) error {
			a := c.errGraph(sd) // rectangular: Aᵀ takes Rows() rows
			return b.SpMM(c.ctx, a, true, nil, sd.T(c.alloc(f32, a.Cols(), 4)), 0, sd.T(c.alloc(f32, a.Cols(), 4)))
		}},
		{"SpMM/y-shape", func(c *tc, b backend.Backend, sd side) error {
			a := c.errGraph(sd)
			return b.SpMM(c.ctx, a, false, nil, sd.T(c.alloc(f32, a.Cols(), 4)), 0, sd.T(c.alloc(f32, a.Rows(), 5)))
		}},
		{"SDDMM/out-rows", func(c *tc, b backend.Backend, sd side) error {
			a := c.errGraph(sd)
			return b.SDDMM(c.ctx, a, sd.T(c.alloc(f32, a.Rows(), 4)), sd.T(c.alloc(f32, a.Cols(), 4)), sd.T(c.alloc(f32, int(a.NNZ())+1, 1)))
		}},
		{"ArgmaxRows/out-dtype", func(c *tc, b backend.Backend, sd side) error {
			return b.ArgmaxRows(sd.T(c.alloc(f32, 4, 3)), sd.T(c.alloc(f32, 4)))
		}},
		{"SoftmaxCrossEntropy/labels-dtype", func(c *tc, b backend.Backend, sd side) error {
			_, err := b.SoftmaxCrossEntropy(sd.T(c.alloc(f32, 4, 3)), sd.T(c.alloc(tensor.Int64, 4)), sd.T(c.alloc(tensor.Int32, 2)), nil)
			return err
		}},
		{"TargetLoss/targets-shape", func(c *tc, b backend.Backend, sd side) error {
			_, err := b.TargetLoss(backend.LossBCE, sd.T(c.alloc(f32, 4, 3)), sd.T(c.alloc(f32, 4, 2)), sd.T(c.alloc(tensor.Int32, 2)), nil)
			return err
		}},
		{"TargetLoss/idx-range", func(c *tc, b backend.Backend, sd side) error {
			idx := c.put(tensor.Int32, []float64{1, 4}, 2)
			_, err := b.TargetLoss(backend.LossMSE, sd.T(c.alloc(f32, 4, 3)), sd.T(c.alloc(f32, 4, 3)), sd.T(idx), nil)
			return err
		}},
	}
	for _, ec := range cases {
		s.each(t, "Errors", ec.name, func(c *tc) {
			c.errs = map[side]*adj{}
			for _, sd := range sides {
				b, _ := c.backend(sd)
				err := protect(func() error { return ec.call(c, b, sd) })
				var pe *panicError
				if err == nil {
					c.Errorf("%s: the %s backend (%s) accepted a malformed call", c.name, who(sd), b.Name())
				} else if errors.As(err, &pe) {
					c.Errorf("%s: the %s backend (%s) panicked instead of returning an error: %v", c.name, who(sd), b.Name(), err)
				}
			}
		})
	}
}

// errGraph returns the side's half of a rectangular graph shared by the
// two sides of an error case.
func (c *tc) errGraph(sd side) backend.Adj {
	a, ok := c.errs[sd]
	if !ok {
		a = c.graph(c.randCSR(graphSpec{name: "err", rows: 7, cols: 9, maxDeg: 3}))
		c.errs[side{false}], c.errs[side{true}] = a, a
	}
	return sd.A(a)
}
