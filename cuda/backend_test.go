//go:build cuda

package cuda

import (
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"strata/core/backend"
	"strata/core/backend/backendtest"
	hostref "strata/core/backend/backendtest/ref"
	"strata/core/backend/cpu"
	"strata/core/graph"
	"strata/core/tensor"
	"strata/internal/floattol"
)

func open(t testing.TB, opts Options) *Backend {
	t.Helper()
	b, err := Open(opts)
	if err != nil {
		t.Fatalf("opening the GPU: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

// Every op agrees with the CPU backend on random inputs, with operands in
// device memory and, through zero-copy, in pinned host memory.
func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tier  tensor.Tier
		heavy int
	}{
		{"device", DeviceTier, 0},
		{"pinned host", tensor.Host, 0},
		// Every row of more than 3 entries takes the chunked path of
		// the power-law graphs' heavy rows.
		{"heavy rows", DeviceTier, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := cpu.New(cpu.Options{Threads: 2})
			backendtest.Run(t, ref, open(t, Options{HeavyRow: tc.heavy}), backendtest.Options{Tier: tc.tier, Seed: 7})
		})
	}
}

func TestHeavyChunks(t *testing.T) {
	indptr := []int64{0, 2, 2, 9, 10, 17}
	hrow, hoff, ck0, ck1 := heavyChunks(indptr, 3)
	want := [][]int64{{2, 4}, {0, 3, 6}, {2, 5, 8, 10, 13, 16}, {5, 8, 9, 13, 16, 17}}
	for i, got := range [][]int64{hrow, hoff, ck0, ck1} {
		if !slices.Equal(got, want[i]) {
			t.Errorf("heavyChunks: array %d = %v, want %v", i, got, want[i])
		}
	}
}

// Gather reads host-pinned rows in place: no staging copy of x.
func TestZeroCopyGather(t *testing.T) {
	b := open(t, Options{})
	const n, c, m = 1000, 24, 300
	rng := rand.New(rand.NewPCG(1, 2))
	xs := make([]float32, n*c)
	for i := range xs {
		xs[i] = rng.Float32()
	}
	ids := make([]int64, m)
	for i := range ids {
		ids[i] = rng.Int64N(n)
	}
	x := mustAlloc(t, b, tensor.Float32, tensor.Host, n, c)
	idx := mustAlloc(t, b, tensor.Int64, DeviceTier, m)
	y := mustAlloc(t, b, tensor.Float32, DeviceTier, m, c)
	must(t, b.Upload(x, xs))
	must(t, b.Upload(idx, ids))
	before := b.Stats().InUse[DeviceTier]
	must(t, b.Gather(x, idx, y))
	if after := b.Stats().InUse[DeviceTier]; after != before {
		t.Errorf("Gather from pinned memory allocated %d device bytes", after-before)
	}
	got := make([]float32, m*c)
	must(t, b.Download(y, got))
	for i, r := range ids {
		for j := range c {
			if got[i*c+j] != xs[int(r)*c+j] {
				t.Fatalf("y[%d,%d] = %v, want x[%d,%d] = %v", i, j, got[i*c+j], r, j, xs[int(r)*c+j])
			}
		}
	}
	// An index out of range is an error naming it, not a fault.
	must(t, b.Upload(idx, append([]int64{n}, ids[1:]...)))
	if err := b.Gather(x, idx, y); err == nil || !strings.Contains(err.Error(), "idx[0]") {
		t.Errorf("Gather with idx[0] = %d: err = %v", n, err)
	}
}

// A training step that allocates the same shapes every time reaches a
// steady state without driver allocations.
func TestAllocatorSteadyState(t *testing.T) {
	b := open(t, Options{})
	g := randomCSR(500, 4000, 3)
	a, err := b.UploadGraph(g, DeviceTier)
	must(t, err)
	defer b.ReleaseGraph(a)
	step := func() {
		x := mustAlloc(t, b, tensor.Float32, DeviceTier, 500, 32)
		w := mustAlloc(t, b, tensor.Float32, DeviceTier, 32, 16)
		h := mustAlloc(t, b, tensor.Float32, DeviceTier, 500, 16)
		y := mustAlloc(t, b, tensor.Float32, DeviceTier, 500, 16)
		must(t, b.GEMM(false, false, 1, x, w, 0, h))
		must(t, b.SpMM(t.Context(), a, false, nil, h, 0, y))
		must(t, b.SumRows(y, mustAlloc(t, b, tensor.Float32, DeviceTier, 16)))
		for _, t := range []*tensor.Tensor{x, w, h, y} {
			b.Release(t)
		}
	}
	step()
	dev, _ := b.PoolStats()
	for range 5 {
		step()
	}
	dev2, _ := b.PoolStats()
	// Each step leaks one SumRows output above, which needs one block.
	if grew := dev2.DriverAllocs - dev.DriverAllocs; grew > 5 {
		t.Errorf("%d driver allocations in 5 steady steps, want at most 5 (stats %+v)", grew, dev2)
	}
	if dev2.Hits <= dev.Hits {
		t.Errorf("no cache hits: %+v", dev2)
	}
}

// A cap on device memory turns into a clear allocation error, and cached
// blocks are freed to satisfy a request that fits.
func TestMemoryLimit(t *testing.T) {
	b := open(t, Options{MemoryBytes: 8 << 20})
	x := mustAlloc(t, b, tensor.Float32, DeviceTier, 1<<20) // 4 MiB
	if _, err := b.Alloc(tensor.Float32, []int{3 << 20}, DeviceTier); err == nil || !errors.Is(err, errPoolLimit) {
		t.Fatalf("12 MiB on an 8 MiB device: err = %v", err)
	}
	b.Release(x)
	y, err := b.Alloc(tensor.Float32, []int{3 << 19}, DeviceTier) // 6 MiB: needs the cached 4 MiB freed
	if err != nil {
		t.Fatalf("6 MiB after releasing 4 MiB: %v", err)
	}
	b.Release(y)
	if dev, _ := b.PoolStats(); dev.Trims != 1 {
		t.Errorf("pool stats %+v, want one trim", dev)
	}
}

// Kernels that the Go side launches are all in the embedded PTX.
func TestEveryKernelIsInThePTX(t *testing.T) {
	b := open(t, Options{})
	fl, ix := []string{"f32", "f64"}, []string{"i32", "i64"}
	var names []string
	for _, f := range fl {
		for _, k := range []string{"fill", "axpby", "apply", "apply_bwd", "binary", "dropout", "colsum",
			"sum_rows_final", "bn_mean", "bn_inv", "bn_norm", "bn_infer", "bn_bwd_final", "bn_bwd_dx", "head_dot",
			"head_dot_dx", "head_dot_da_part", "add_colsum", "argmax_rows", "adam", "row_reduce", "row_chunk",
			"row_heavy", "spmm_heavy", "lstm_cell", "lstm_cell_bwd"} {
			names = append(names, k+"_"+f)
		}
		for _, i := range ix {
			for _, k := range []string{"softmax_ce", "target_loss", "scatter_add", "scatter_argmax", "spmm", "sddmm", "uaddv",
				"lstm_gather", "lstm_scatter", "spmm_chunk", "edge_exp", "edge_div", "edge_softmax_bwd"} {
				names = append(names, k+"_"+f+"_"+i)
			}
			for _, j := range ix {
				names = append(names, "spmm_max_"+f+"_"+i+"_"+j)
			}
		}
	}
	for _, v := range []string{"f32", "f64", "i32", "i64"} {
		names = append(names, "copy_cols_"+v, "gather_"+v+"_i32", "gather_"+v+"_i64")
	}
	names = append(names, "fill_i32", "fill_i64")
	for _, n := range names {
		if _, err := b.fn(n); err != nil {
			t.Error(err)
		}
	}
}

// Without a usable GPU the binary stops before any Go code with a message
// that names the fix. CUDA_VISIBLE_DEVICES="" hides the GPUs of a real
// driver; MOCKCUDA_NODEVICE does the same for the CPU mock.
func TestPreflightWithoutDevice(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MOCKCUDA_NODEVICE=1", "CUDA_VISIBLE_DEVICES=")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("exit: %v, want status 3; output:\n%s", err, out)
	}
	for _, want := range []string{"needs an NVIDIA GPU", "error 100", "without the tag"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output %q does not mention %q", out, want)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustAlloc(t testing.TB, b backend.Backend, dt tensor.DType, tier tensor.Tier, shape ...int) *tensor.Tensor {
	t.Helper()
	x, err := b.Alloc(dt, shape, tier)
	must(t, err)
	return x
}

// randomCSR returns an n×n adjacency with about e uniformly random edges.
func randomCSR(n, e int, seed uint64) *graph.CSR {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	g := &graph.CSR{NumRows: n, NumCols: n, Indptr: make([]int64, n+1)}
	for r := range n {
		deg := rng.IntN(2*e/n + 1)
		for range deg {
			g.Idx32 = append(g.Idx32, int32(rng.IntN(n)))
		}
		g.Indptr[r+1] = int64(len(g.Idx32))
	}
	return g
}

// HeadDotBackward takes nil dx or da, as the CPU backend does, and then
// computes only the other, with the CPU's results.
func TestHeadDotBackwardNil(t *testing.T) {
	b, ref := open(t, Options{}), cpu.New(cpu.Options{})
	const n, h, c = 7, 2, 3
	rng := rand.New(rand.NewPCG(5, 6))
	vals := func(k int) []float32 {
		v := make([]float32, k)
		for i := range v {
			v[i] = float32(rng.Float64()*2 - 1)
		}
		return v
	}
	xv, av, dyv, dxv, dav := vals(n*h*c), vals(h*c), vals(n*h), vals(n*h*c), vals(h*c)
	put := func(be backend.Backend, tier tensor.Tier, v []float32, shape ...int) *tensor.Tensor {
		x := mustAlloc(t, be, tensor.Float32, tier, shape...)
		must(t, be.Upload(x, v))
		return x
	}
	for _, tc := range []struct {
		name   string
		dx, da bool
	}{{"dx", true, false}, {"da", false, true}, {"none", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			var outs [2][2]*tensor.Tensor // [backend][dx, da]
			for i, be := range []backend.Backend{ref, b} {
				tier := tensor.Host
				if i == 1 {
					tier = DeviceTier
				}
				if tc.dx {
					outs[i][0] = put(be, tier, dxv, n, h*c)
				}
				if tc.da {
					outs[i][1] = put(be, tier, dav, h, c)
				}
				must(t, be.HeadDotBackward(put(be, tier, xv, n, h*c), put(be, tier, av, h, c), put(be, tier, dyv, n, h), outs[i][0], outs[i][1]))
			}
			// Both backends are within the derived bound of the exact
			// values (backendtest/ref), so within twice it of each other.
			wdx, wda := hostref.HeadDotBackward(floattol.Checked32, widen(xv), widen(av), widen(dyv), widen(dxv), widen(dav), n, h, c)
			for j, o := range outs[1] {
				if o == nil {
					continue
				}
				want, got := make([]float32, o.Numel()), make([]float32, o.Numel())
				must(t, ref.Download(outs[0][j], want))
				must(t, b.Download(o, got))
				bound := floattol.Errors([][]hostref.Val{wdx, wda}[j])
				for k := range bound {
					bound[k] = floattol.Orders(bound[k])
				}
				if k, r := floattol.Exceeds(widen(got), widen(want), bound); k >= 0 {
					t.Fatalf("%s[%d] = %v, want %v: off by %.3g times the bound", []string{"dx", "da"}[j], k, got[k], want[k], r)
				}
			}
		})
	}
}

// A tensor without storage is an error naming it, as on the CPU backend.
func TestNoStorage(t *testing.T) {
	b := open(t, Options{})
	err := b.Fill(tensor.New(tensor.Float32, []int{3}, nil), 0)
	if want := "cuda: Fill: t has no storage"; err == nil || err.Error() != want {
		t.Errorf("Fill: err = %v, want %q", err, want)
	}
}

// widen converts float32 values to float64.
func widen(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}
