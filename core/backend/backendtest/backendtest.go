// Package backendtest is a conformance suite for backend.Backend: it runs
// every method of a candidate backend and of a reference (the CPU backend)
// on the same random inputs and reports where they disagree. It talks to
// both only through the backend.Backend interface, so it can check a
// backend whose memory the test cannot see (a GPU, or a mock of one).
//
// Conventions the suite checks beyond the interface's doc comments (they
// are what the reference does):
//   - An output that a call overwrites is pre-filled with NaN (floats) or
//     -7 (ints), so an element left unwritten, or a beta of 0 that still
//     reads the output (0·NaN), shows up. BLAS convention: beta 0 means the
//     output is not read.
//   - Accumulating outputs (ScatterAdd, ScatterArgmax, HeadDotBackward) are
//     pre-filled with random values.
//   - Index results (argmax, ArgmaxRows), DropoutMask, Gather, CopyCols,
//     Fill, transfers, maxima and selections must match exactly.
//   - Every other float result is checked element by element against its
//     exact value, computed on the host in float64 from the inputs, within
//     a bound derived from the op (package ref): the length and magnitude of
//     each reduction, the dtype, the conditioning of the functions on the
//     way (internal/floattol). Both backends must be within it, so it
//     holds whichever BLAS kernels, threads or summation orders they use.
//     DropoutGEMM, whose mask the host does not draw, compares the two
//     within the sum of their bounds.
//   - Graphs have rows without edges, duplicate edges and self loops; the
//     square ones list each row's sources unsorted (LSTMAggregate depends
//     on that order), and one graph has no edges at all.
//   - The float64 results of graph ops with CSR Values use the float32
//     values widened exactly.
//   - Gather, CopyCols and Fill also run on Int32 and Int64 tensors; Alloc
//     accepts an empty shape ([0,5]) and edge tensors of a graph without
//     edges are [0,H].
//   - SoftmaxCrossEntropy and TargetLoss count a row repeated in idx once
//     per occurrence (loss and gradient); DropoutMask with p = 1 is all zeros.
//
// Subtests are named "Op/dtype/case/...", e.g. "SpMM/f32/sq/trans/w=EH3/beta=0.5";
// Options.Skip takes such names or their prefixes.
package backendtest

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"strata/core/backend"
	"strata/core/graph"
	"strata/core/tensor"
	"strata/internal/floattol"
)

// Options configures Run.
type Options struct {
	// Tier is the tier the candidate computes in (e.g. "device0"); the
	// reference always computes in tensor.Host. Empty means tensor.Host.
	Tier tensor.Tier
	// Seed seeds the random inputs; each subtest derives its own stream
	// from Seed and its name, so skipping one changes no other.
	Seed uint64
	// Skip lists subtests not to run: an op ("LSTMAggregate") or any
	// prefix of a subtest name at a "/" boundary ("SpMM/f64",
	// "Gather/i64"). Skipped subtests are reported with t.Skip. Every entry
	// must be justified by the caller (say why in a comment next to it): a
	// skip hides a disagreement with the reference.
	Skip []string
}

func (o Options) withDefaults() Options {
	if o.Tier == "" {
		o.Tier = tensor.Host
	}
	return o
}

// suite is one Run: the two backends and the options.
type suite struct {
	ref, got backend.Backend
	opts     Options
}

// group is the subtests of one op.
type group struct {
	name string
	run  func(s *suite, t *testing.T)
}

// groups lists every op group in the order Run runs them. Leaks must stay
// last: it checks that everything before it released its memory.
var groups = []group{
	{"Alloc", testAlloc},
	{"RoundTrip", testRoundTrip},
	{"Copy", testCopy},
	{"Stats", testStats},
	{"UploadGraph", testUploadGraph},
	{"GEMM", testGEMM},
	{"SpMM", testSpMM},
	{"SpMMMax", testSpMMMax},
	{"ScatterArgmax", testScatterArgmax},
	{"SDDMM", testSDDMM},
	{"UAddV", testUAddV},
	{"EdgeReduce", testEdgeReduce},
	{"EdgeSoftmax", testEdgeSoftmax},
	{"EdgeSoftmaxBackward", testEdgeSoftmaxBackward},
	{"SegmentSelect", testSegmentSelect},
	{"SegmentProd", testSegmentProd},
	{"LSTMAggregate", testLSTMAggregate},
	{"LSTMAggregateBackward", testLSTMAggregateBackward},
	{"Gather", testGather},
	{"ScatterAdd", testScatterAdd},
	{"CopyCols", testCopyCols},
	{"Apply", testApply},
	{"ApplyBackward", testApplyBackward},
	{"Elementwise", testElementwise},
	{"Axpby", testAxpby},
	{"Fill", testFill},
	{"SumRows", testSumRows},
	{"HeadDot", testHeadDot},
	{"HeadDotBackward", testHeadDotBackward},
	{"DropoutMask", testDropoutMask},
	{"DropoutSplit", testDropoutSplit},
	{"DropoutGEMM", testDropoutGEMM},
	{"SparseInput", testSparseInput},
	{"SpMMBiasAct", testSpMMBiasAct},
	{"BatchNorm", testBatchNorm},
	{"BatchNormBackward", testBatchNormBackward},
	{"BatchNormInfer", testBatchNormInfer},
	{"SoftmaxCrossEntropy", testSoftmaxCrossEntropy},
	{"TargetLoss", testTargetLoss},
	{"ArgmaxRows", testArgmaxRows},
	{"AdamStep", testAdamStep},
	{"Errors", testErrors},
	{"Leaks", nil}, // run by Run itself
}

// Groups returns the names of the top-level subtests Run runs, in order.
func Groups() []string {
	out := make([]string, len(groups))
	for i, g := range groups {
		out[i] = g.name
	}
	return out
}

// Run checks got against ref, one subtest per op and case, e.g.
// t.Run("SpMM/f32/sq/trans/w=EH3/beta=0.5"). ref computes in tensor.Host
// and got in opts.Tier. Both must be otherwise idle: the last subtest,
// "Leaks", checks that the memory in use on both is back where it was.
func Run(t *testing.T, ref, got backend.Backend, opts Options) {
	s := &suite{ref: ref, got: got, opts: opts.withDefaults()}
	before := [2]backend.Stats{ref.Stats(), got.Stats()}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			if s.skipped(g.name) {
				t.Skipf("skipped by Options.Skip")
			}
			if g.run != nil {
				g.run(s, t)
				return
			}
			s.testLeaks(t, before)
		})
	}
}

// skipped reports whether Options.Skip names the subtest or a prefix of it.
func (s *suite) skipped(name string) bool {
	for _, e := range s.opts.Skip {
		if e = strings.Trim(e, "/"); name == e || strings.HasPrefix(name, e+"/") {
			return true
		}
	}
	return false
}

// testLeaks checks that both backends' memory in use is back to before.
func (s *suite) testLeaks(t *testing.T, before [2]backend.Stats) {
	for i, b := range []backend.Backend{s.ref, s.got} {
		now := b.Stats()
		for tier, n := range now.InUse {
			if n != before[i].InUse[tier] {
				t.Errorf("%s backend: %d bytes in use in tier %q after the suite, %d before: a release is missing (in the suite or the backend)",
					b.Name(), n, tier, before[i].InUse[tier])
			}
		}
	}
}

// tc is one case: a subtest with its own random stream and the suite.
type tc struct {
	*testing.T
	s    *suite
	name string // "Op/dtype/case", relative to Run
	rng  *rand.Rand
	ctx  context.Context
	errs map[side]*adj // graphs of an error case (see errGraph)
}

// each runs f as the subtest name of group op, with the name's own
// random stream.
func (s *suite) each(t *testing.T, op, name string, f func(c *tc)) {
	t.Helper()
	full := op + "/" + name
	t.Run(name, func(t *testing.T) {
		if s.skipped(full) {
			t.Skipf("skipped by Options.Skip")
		}
		h := fnv.New64a()
		h.Write([]byte(full))
		c := &tc{T: t, s: s, name: full, rng: rand.New(rand.NewPCG(s.opts.Seed, h.Sum64())), ctx: context.Background()}
		f(c)
	})
}

// floats are the float dtypes every float op runs in.
var floats = []tensor.DType{tensor.Float32, tensor.Float64}

// indexTypes are the index dtypes of index operands.
var indexTypes = []tensor.DType{tensor.Int32, tensor.Int64}

// allTypes are every dtype.
var allTypes = []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64}

// pair is one tensor on both backends: r on the reference in tensor.Host,
// g on the candidate in the candidate's tier, and h the values the suite
// uploaded to both, as the dtype stores them (NaN for a poisoned output).
type pair struct {
	r, g *tensor.Tensor
	h    []float64
}

// side picks one backend's half of the pairs in a call.
type side struct{ got bool }

// T returns the side's tensor of p, or nil for a nil p.
func (sd side) T(p *pair) *tensor.Tensor {
	if p == nil {
		return nil
	}
	if sd.got {
		return p.g
	}
	return p.r
}

// A returns the side's adjacency of g.
func (sd side) A(g *adj) backend.Adj {
	if sd.got {
		return g.g
	}
	return g.r
}

// adj is one graph on both backends.
type adj struct {
	csr  *graph.CSR
	r, g backend.Adj
}

// backend returns the side's backend and tier.
func (c *tc) backend(sd side) (backend.Backend, tensor.Tier) {
	if sd.got {
		return c.s.got, c.s.opts.Tier
	}
	return c.s.ref, tensor.Host
}

var sides = [2]side{{false}, {true}}

// panicError is a panic caught by protect.
type panicError struct{ v any }

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v", e.v) }

// protect runs f, turning a panic into a *panicError.
func protect(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{r}
		}
	}()
	return f()
}

// call runs op on both backends (reference first) and stops the case when
// either fails.
func (c *tc) call(op string, f func(b backend.Backend, sd side) error) {
	c.Helper()
	for _, sd := range sides {
		b, _ := c.backend(sd)
		if err := protect(func() error { return f(b, sd) }); err != nil {
			c.Fatalf("%s: %s on the %s backend (%s): %v", c.name, op, who(sd), b.Name(), err)
		}
	}
}

func who(sd side) string {
	if sd.got {
		return "candidate"
	}
	return "reference"
}

// alloc allocates dt[shape] on both backends, zero-filled, and releases
// both when the case ends.
func (c *tc) alloc(dt tensor.DType, shape ...int) *pair {
	c.Helper()
	var p pair
	for _, sd := range sides {
		b, tier := c.backend(sd)
		var x *tensor.Tensor
		err := protect(func() (err error) { x, err = b.Alloc(dt, shape, tier); return err })
		if err != nil {
			c.Fatalf("%s: Alloc %v%v in %q on the %s backend: %v", c.name, dt, shape, tier, who(sd), err)
		}
		if sd.got {
			p.g = x
		} else {
			p.r = x
		}
	}
	c.Cleanup(func() { c.s.ref.Release(p.r); c.s.got.Release(p.g) })
	return &p
}

// put allocates dt[shape] on both backends holding v (converted to dt).
func (c *tc) put(dt tensor.DType, v []float64, shape ...int) *pair {
	c.Helper()
	p := c.alloc(dt, shape...)
	c.upload(p, v)
	return p
}

// upload copies v (converted to p's dtype) into both halves of p.
func (c *tc) upload(p *pair, v []float64) {
	c.Helper()
	p.h = round(p.r.DType(), v)
	src := hostSlice(p.r.DType(), v)
	c.call("Upload", func(b backend.Backend, sd side) error { return b.Upload(sd.T(p), src) })
}

// rand allocates dt[shape] on both backends holding uniform values in [lo, hi).
func (c *tc) rand(dt tensor.DType, lo, hi float64, shape ...int) *pair {
	c.Helper()
	return c.put(dt, c.uniform(numel(shape), lo, hi), shape...)
}

// out allocates an output dt[shape] on both backends, poisoned: NaN for
// floats, -7 for ints, so that an element the op does not write shows.
func (c *tc) out(dt tensor.DType, shape ...int) *pair {
	c.Helper()
	v := make([]float64, numel(shape))
	fill := math.NaN()
	if !dt.IsFloat() {
		fill = -7
	}
	for i := range v {
		v[i] = fill
	}
	return c.put(dt, v, shape...)
}

// graph uploads g to both backends and releases it when the case ends.
func (c *tc) graph(g *graph.CSR) *adj {
	c.Helper()
	if err := g.Validate(); err != nil {
		c.Fatalf("%s: generated graph is invalid: %v", c.name, err)
	}
	a := &adj{csr: g}
	for _, sd := range sides {
		b, tier := c.backend(sd)
		var x backend.Adj
		err := protect(func() (err error) { x, err = b.UploadGraph(g, tier); return err })
		if err != nil {
			c.Fatalf("%s: UploadGraph %d×%d (%d edges) to %q on the %s backend: %v", c.name, g.NumRows, g.NumCols, g.NNZ(), tier, who(sd), err)
		}
		if sd.got {
			a.g = x
		} else {
			a.r = x
		}
	}
	c.Cleanup(func() { c.s.ref.ReleaseGraph(a.r); c.s.got.ReleaseGraph(a.g) })
	return a
}

// uniform returns n values uniform in [lo, hi).
func (c *tc) uniform(n int, lo, hi float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = lo + (hi-lo)*c.rng.Float64()
	}
	return v
}

// distinct returns n distinct values in (-1, 1), in random order; they stay
// distinct in float32.
func (c *tc) distinct(n int) []float64 {
	v := make([]float64, n)
	for i, k := range c.rng.Perm(n) {
		v[i] = 2*(float64(k)+0.5)/float64(n) - 1
	}
	return v
}

// ints returns n integers uniform in [lo, hi), as float64.
func (c *tc) ints(n, lo, hi int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(lo + c.rng.IntN(hi-lo))
	}
	return v
}

// fetch downloads t from b into a new host slice of t's type.
func fetch(b backend.Backend, t *tensor.Tensor) (any, error) {
	dst := newSlice(t.DType(), t.Numel())
	err := protect(func() error { return b.Download(t, dst) })
	return dst, err
}

// exact compares both halves of p for equality.
func (c *tc) exact(what string, p *pair) {
	c.Helper()
	want, got := c.fetchBoth(what, p)
	c.compare(what, p.r.DType(), want, got, 0)
}

// fetchBoth downloads both halves of p.
func (c *tc) fetchBoth(what string, p *pair) (want, got any) {
	c.Helper()
	return c.download(what, p, sides[0]), c.download(what, p, sides[1])
}

// refValues downloads the reference's half of p as float64.
func (c *tc) refValues(what string, p *pair) []float64 {
	c.Helper()
	return toFloat64s(c.download(what, p, sides[0]))
}

// download downloads one side's half of p, stopping the case on failure.
func (c *tc) download(what string, p *pair, sd side) any {
	c.Helper()
	b, _ := c.backend(sd)
	v, err := fetch(b, sd.T(p))
	if err != nil {
		c.Fatalf("%s: Download %s from the %s: %v", c.name, what, who(sd), err)
	}
	return v
}

// near checks both halves of p against the exact values of want (computed
// on the host), each element within its derived bound: the reference and
// the candidate are both correct implementations, so both must be within.
func (c *tc) near(what string, p *pair, want []floattol.Val) {
	c.Helper()
	refv, got := c.fetchBoth(what, p)
	c.nearValues(what, p.r.DType(), toFloat64s(refv), toFloat64s(got), want)
}

// nearValues is near on downloaded values.
func (c *tc) nearValues(what string, dt tensor.DType, refv, got []float64, want []floattol.Val) {
	c.Helper()
	v, e := floattol.Values(want), floattol.Errors(want)
	if !c.sound(what, dt, v, e) {
		return
	}
	for _, s := range []struct {
		who  string
		vals []float64
	}{{"reference (" + c.s.ref.Name() + ")", refv}, {"candidate (" + c.s.got.Name() + ")", got}} {
		if i, r := floattol.Exceeds(s.vals, v, e); i >= 0 {
			var gv any = "?"
			if i < len(s.vals) {
				gv = s.vals[i]
			}
			c.Errorf("%s (%v): %s: the %s is off the exact value by %.3g times the bound at index %d of %d (exact %v, got %v, bound %.3g)",
				c.name, dt, what, s.who, r, i, len(v), v[i], gv, e[i])
		}
	}
}

// agree checks the candidate's half of p against the reference's, each
// element within the sum of the two backends' bounds (2·bound): for a
// result whose exact value the host cannot compute.
func (c *tc) agree(what string, p *pair, bound []float64) {
	c.Helper()
	want, got := c.fetchBoth(what, p)
	w, g := toFloat64s(want), toFloat64s(got)
	two := make([]float64, len(bound))
	for i, b := range bound {
		two[i] = floattol.Orders(b)
	}
	dt := p.r.DType()
	if !c.sound(what, dt, w, two) {
		return
	}
	if i, r := floattol.Exceeds(g, w, two); i >= 0 {
		var gv any = "?"
		if i < len(g) {
			gv = g[i]
		}
		c.Errorf("%s (%v): %s: the candidate is off the reference by %.3g times the bound at index %d of %d (want %v, got %v, bound %.3g)",
			c.name, dt, what, r, i, len(w), w[i], gv, two[i])
	}
}

// sound reports whether the exact values are finite and every bound is
// informative: no looser than loosest(dt) relative to max(1, |value|),
// else the case checks too little and its inputs must change.
func (c *tc) sound(what string, dt tensor.DType, v, e []float64) bool {
	c.Helper()
	lim := loosest(dt)
	for i := range v {
		switch {
		case math.IsNaN(v[i]) || math.IsInf(v[i], 0):
			c.Errorf("%s: %s: the exact value at index %d is %v: the suite's inputs are bad", c.name, what, i, v[i])
			return false
		case !(e[i] <= lim*max(1, math.Abs(v[i]))):
			c.Errorf("%s: %s: the bound derived at index %d is %.3g for a value %v, looser than %.3g relative: the case checks too little",
				c.name, what, i, e[i], v[i], lim)
			return false
		}
	}
	return true
}

// unit is the unit roundoff of a float dtype.
func unit(dt tensor.DType) float64 {
	if dt == tensor.Float32 {
		return floattol.UFloat32
	}
	return floattol.UFloat64
}

// arithOf is the arithmetic a case derives its bounds in: dt's plus
// float64's, so that each bound covers the backend's rounding and that of
// the float64 computation of the exact value on the host.
func arithOf(dt tensor.DType) floattol.Arith {
	if dt == tensor.Float32 {
		return floattol.Checked32
	}
	return floattol.Checked64
}

// loosest is the largest bound the suite accepts, relative to
// max(1, |value|): 2^21 unit roundoffs (0.125 in float32, 2.3e-10 in
// float64), twice the loosest case's (DropoutGEMM's dot products of length
// 1100: 2γ_1104·Σ|x||b|/(1-p)). The mutant backend is off by ten times it.
func loosest(dt tensor.DType) float64 { return 0x1p21 * unit(dt) }

// compare reports a difference beyond tol between host slices.
func (c *tc) compare(what string, dt tensor.DType, want, got any, tol float64) {
	c.Helper()
	w := toFloat64s(want)
	for i, v := range w {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			c.Errorf("%s: %s: the reference produced %v at index %d: the suite's inputs are bad", c.name, what, v, i)
			return
		}
	}
	if rel, i := Compare(want, got, tol); i >= 0 {
		g := toFloat64s(got)
		var wv, gv any = "?", "?"
		if i < len(w) {
			wv = w[i]
		}
		if i < len(g) {
			gv = g[i]
		}
		c.Errorf("%s (%v): %s: max rel err %.3g at index %d of %d (want %v, got %v; tol %g)",
			c.name, dt, what, rel, i, len(w), wv, gv, tol)
	}
}

// Compare returns the largest relative error |got-want|/max(1,|want|)
// between two host slices of the same type ([]float32, []float64, []int32
// or []int64) and length. idx is the index of that largest error when it
// exceeds tol, and -1 when every element is within tol (tol 0 asks for
// equality). A NaN matches only a NaN and an infinity only itself; any
// other difference involving them counts as +Inf. Ints are compared
// exactly: a difference too small to show in float64 still counts.
// Slices of different types or lengths give (+Inf, 0).
func Compare(want, got any, tol float64) (maxRel float64, idx int) {
	if fmt.Sprintf("%T", want) != fmt.Sprintf("%T", got) || sliceLen(want) != sliceLen(got) || sliceLen(want) < 0 {
		return math.Inf(1), 0
	}
	at := -1
	note := func(i int, r float64) {
		if r > maxRel {
			maxRel, at = r, i
		}
	}
	switch w := want.(type) {
	case []int32:
		g := got.([]int32)
		for i := range w {
			note(i, intRel(int64(w[i]), int64(g[i])))
		}
	case []int64:
		g := got.([]int64)
		for i := range w {
			note(i, intRel(w[i], g[i]))
		}
	default:
		wf, gf := toFloat64s(want), toFloat64s(got)
		for i := range wf {
			note(i, floatRel(wf[i], gf[i]))
		}
	}
	if at < 0 || maxRel <= tol {
		return maxRel, -1
	}
	return maxRel, at
}

func intRel(w, g int64) float64 {
	if w == g {
		return 0
	}
	r := math.Abs(float64(w)-float64(g)) / max(1, math.Abs(float64(w)))
	if r == 0 {
		return math.Inf(1)
	}
	return r
}

func floatRel(w, g float64) float64 {
	switch {
	case w == g, math.IsNaN(w) && math.IsNaN(g):
		return 0
	case math.IsNaN(w), math.IsNaN(g), math.IsInf(w, 0), math.IsInf(g, 0):
		return math.Inf(1)
	}
	return math.Abs(g-w) / max(1, math.Abs(w))
}

func sliceLen(v any) int {
	switch s := v.(type) {
	case []float32:
		return len(s)
	case []float64:
		return len(s)
	case []int32:
		return len(s)
	case []int64:
		return len(s)
	}
	return -1
}

// hostSlice converts v to the host slice type of dt.
func hostSlice(dt tensor.DType, v []float64) any {
	switch dt {
	case tensor.Float32:
		s := make([]float32, len(v))
		for i, x := range v {
			s[i] = float32(x)
		}
		return s
	case tensor.Float64:
		return append([]float64(nil), v...)
	case tensor.Int32:
		s := make([]int32, len(v))
		for i, x := range v {
			s[i] = int32(x)
		}
		return s
	case tensor.Int64:
		s := make([]int64, len(v))
		for i, x := range v {
			s[i] = int64(x)
		}
		return s
	}
	panic(fmt.Sprintf("backendtest: dtype %v", dt))
}

// newSlice returns a zeroed host slice of dt with n elements.
func newSlice(dt tensor.DType, n int) any {
	switch dt {
	case tensor.Float32:
		return make([]float32, n)
	case tensor.Float64:
		return make([]float64, n)
	case tensor.Int32:
		return make([]int32, n)
	case tensor.Int64:
		return make([]int64, n)
	}
	panic(fmt.Sprintf("backendtest: dtype %v", dt))
}

// toFloat64s converts a host slice to float64.
func toFloat64s(v any) []float64 {
	switch s := v.(type) {
	case []float64:
		return s
	case []float32:
		out := make([]float64, len(s))
		for i, x := range s {
			out[i] = float64(x)
		}
		return out
	case []int32:
		out := make([]float64, len(s))
		for i, x := range s {
			out[i] = float64(x)
		}
		return out
	case []int64:
		out := make([]float64, len(s))
		for i, x := range s {
			out[i] = float64(x)
		}
		return out
	}
	return nil
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// round returns v as dtype dt stores it.
func round(dt tensor.DType, v []float64) []float64 {
	if dt != tensor.Float32 {
		return v
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(float32(x))
	}
	return out
}
