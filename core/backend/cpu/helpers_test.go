package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"strata/core/backend/backendtest/ref"
	"strata/core/graph"
	"strata/core/tensor"
	"strata/internal/floattol"
)

// tinyGrains makes the small test inputs run in many chunks for the rest
// of the test, so that the thread-count comparisons exercise the parallel
// paths and the fixed reduction chunking.
func tinyGrains(t *testing.T) {
	g, e, r := grain, elemGrain, redElems
	grain, elemGrain, redElems = 1, 1, 7
	t.Cleanup(func() { grain, elemGrain, redElems = g, e, r })
}

var dtypes = []tensor.DType{tensor.Float32, tensor.Float64}

// tc is one test run: a backend, a dtype and a seeded generator. Two runs
// with the same seed build the same inputs.
type tc struct {
	t   *testing.T
	be  *Backend
	dt  tensor.DType
	rng *rand.Rand
}

func newTC(t *testing.T, threads int, dt tensor.DType, seed uint64) *tc {
	return &tc{t: t, be: New(Options{Threads: threads}), dt: dt, rng: rand.New(rand.NewPCG(seed, 99))}
}

// round returns v as stored in dtype dt.
func round(dt tensor.DType, v float64) float64 {
	if dt == tensor.Float32 {
		return float64(float32(v))
	}
	return v
}

// put allocates a float tensor of c.dt holding data.
func (c *tc) put(shape []int, data []float64) *tensor.Tensor {
	c.t.Helper()
	return putAs(c.t, c.be, c.dt, shape, data)
}

func putAs(t *testing.T, be *Backend, dt tensor.DType, shape []int, data []float64) *tensor.Tensor {
	t.Helper()
	x, err := be.Alloc(dt, shape, tensor.Host)
	if err != nil {
		t.Fatal(err)
	}
	switch dt {
	case tensor.Float32:
		for i, v := range data {
			F32(x)[i] = float32(v)
		}
	case tensor.Float64:
		copy(F64(x), data)
	case tensor.Int32:
		for i, v := range data {
			I32(x)[i] = int32(v)
		}
	case tensor.Int64:
		for i, v := range data {
			I64(x)[i] = int64(v)
		}
	}
	return x
}

// rand returns a random tensor with entries in [-1,1) and its values.
func (c *tc) rand(shape ...int) (*tensor.Tensor, []float64) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = round(c.dt, 2*c.rng.Float64()-1)
	}
	return c.put(shape, v), v
}

// zeros allocates a zero tensor of c.dt.
func (c *tc) zeros(shape ...int) *tensor.Tensor {
	c.t.Helper()
	x, err := c.be.Alloc(c.dt, shape, tensor.Host)
	if err != nil {
		c.t.Fatal(err)
	}
	return x
}

// randKeys allocates n random 64-bit dropout row keys (negative ones
// among them: the kernels read them unsigned).
func (c *tc) randKeys(n int) *tensor.Tensor {
	c.t.Helper()
	v := make([]int64, n)
	for i := range v {
		v[i] = int64(c.rng.Uint64())
	}
	t, err := c.be.Alloc(tensor.Int64, []int{n}, tensor.Host)
	c.ok(err)
	c.ok(c.be.Upload(t, v))
	return t
}

// ints allocates an integer tensor.
func (c *tc) ints(dt tensor.DType, v []int64) *tensor.Tensor {
	d := make([]float64, len(v))
	for i, x := range v {
		d[i] = float64(x)
	}
	return putAs(c.t, c.be, dt, []int{len(v)}, d)
}

// get returns a tensor's values as float64.
func get(t *tensor.Tensor) []float64 {
	switch {
	case F32(t) != nil:
		out := make([]float64, len(F32(t)))
		for i, v := range F32(t) {
			out[i] = float64(v)
		}
		return out
	case F64(t) != nil:
		return append([]float64(nil), F64(t)...)
	case I32(t) != nil:
		out := make([]float64, len(I32(t)))
		for i, v := range I32(t) {
			out[i] = float64(v)
		}
		return out
	}
	out := make([]float64, len(I64(t)))
	for i, v := range I64(t) {
		out[i] = float64(v)
	}
	return out
}

// ar is the arithmetic the tests derive their bounds in: the dtype's plus
// float64's, which covers the float64 reference's own rounding
// (internal/floattol).
func (c *tc) ar() ref.Arith {
	if c.dt == tensor.Float32 {
		return floattol.Checked32
	}
	return floattol.Checked64
}

// near checks got against the exact values of want, each element within
// its bound (package ref: derived from the op, its reductions and dtype).
func (c *tc) near(name string, got []float64, want []ref.Val) {
	c.t.Helper()
	if i, r := floattol.Exceeds(got, floattol.Values(want), floattol.Errors(want)); i >= 0 {
		if i >= len(want) {
			c.t.Fatalf("%s %v: %d values, want %d", name, c.dt, len(got), len(want))
		}
		c.t.Fatalf("%s %v: [%d] = %v, exact %v (off by %.3g times the bound %.3g)", name, c.dt, i, got[i], want[i].V, r, want[i].E)
	}
}

// same checks that got equals want exactly (copies, selections).
func (c *tc) same(name string, got, want []float64) {
	c.t.Helper()
	c.near(name, got, floattol.Ins(want))
}

func (c *tc) ok(err error) {
	c.t.Helper()
	if err != nil {
		c.t.Fatal(err)
	}
}

// randGraph returns a random rows×cols CSR with empty rows, self loops and
// repeated edges; wide stores 64-bit ids, values adds edge values.
func randGraph(rng *rand.Rand, rows, cols int, wide, values bool) *graph.CSR {
	g := &graph.CSR{NumRows: rows, NumCols: cols, Indptr: make([]int64, rows+1)}
	var idx []int64
	for i := range rows {
		if rng.IntN(5) > 0 && cols > 0 {
			deg := 1 + rng.IntN(9)
			if rng.IntN(7) == 0 {
				deg += 40 // a few hubs
			}
			for range deg {
				idx = append(idx, int64(rng.IntN(cols)))
			}
			if i < cols && rng.IntN(2) == 0 {
				idx = append(idx, int64(i))
			}
		}
		g.Indptr[i+1] = int64(len(idx))
	}
	if wide {
		g.Idx64 = idx
	} else {
		g.Idx32 = make([]int32, len(idx))
		for k, v := range idx {
			g.Idx32[k] = int32(v)
		}
	}
	if values {
		g.Values = make([]float32, len(idx))
		for k := range g.Values {
			g.Values[k] = float32(rng.Float64() + 0.5)
		}
	}
	return g
}

// edges lists (dst, src) per edge of g.
func edges(g *graph.CSR) (dst, src []int) {
	for i := range g.NumRows {
		for k := g.Indptr[i]; k < g.Indptr[i+1]; k++ {
			dst = append(dst, i)
			src = append(src, int(g.Col(k)))
		}
	}
	return dst, src
}

// graphCase is one graph variant of the sparse tests.
type graphCase struct {
	name                 string
	rows, cols           int
	wide, values, square bool
}

var graphCases = []graphCase{
	{name: "square", rows: 37, cols: 37},
	{name: "rect-values", rows: 29, cols: 41, values: true},
	{name: "wide", rows: 33, cols: 33, wide: true, values: true},
	{name: "empty", rows: 5, cols: 4},
}

func (c *tc) graph(gc graphCase) *graph.CSR {
	if gc.name == "empty" {
		return &graph.CSR{NumRows: gc.rows, NumCols: gc.cols, Indptr: make([]int64, gc.rows+1), Idx32: []int32{}}
	}
	return randGraph(c.rng, gc.rows, gc.cols, gc.wide, gc.values)
}

// forAll runs fn for both dtypes with 1 and 4 threads and checks that the
// outputs it returns are bitwise identical across thread counts.
func forAll(t *testing.T, fn func(c *tc) []float64) {
	tinyGrains(t)
	for _, dt := range dtypes {
		t.Run(dt.String(), func(t *testing.T) {
			var ref []float64
			for _, th := range []int{1, 4} {
				out := fn(newTC(t, th, dt, 12345))
				if th == 1 {
					ref = out
					continue
				}
				if len(out) != len(ref) {
					t.Fatalf("threads %d: %d outputs, want %d", th, len(out), len(ref))
				}
				for i := range ref {
					if math.Float64bits(out[i]) != math.Float64bits(ref[i]) && !(math.IsNaN(out[i]) && math.IsNaN(ref[i])) {
						t.Fatalf("threads %d: output %d = %v, threads 1 gave %v", th, i, out[i], ref[i])
					}
				}
			}
		})
	}
}
