package strategy

import (
	"context"
	"fmt"
	"slices"
	"time"

	"strata/core/backend"
	"strata/core/graph"
	"strata/core/tensor"
	"strata/core/train"
)

// Calibration (hybrid.calibrate): short probes, in this process and right
// before an epoch, that measure the CPU side of costmodel.hyscale's
// machine description under whatever load the machine has then, so that
// the load slows the probes and the epoch alike. Each probe runs the
// kernel a stage runs on work of its own (random nodes and rows drawn
// from a fixed probe seed, never the epoch's batches), on one thread.
// None of them reads a measured stage time: the model is never fitted to
// what it is compared with.

const (
	probeReps = 3                     // repetitions per probe; the median counts
	probeMin  = 20 * time.Millisecond // a repetition runs the kernel until at least this long
	probeSeed = 0x5eed_ca1b_0001      // the probes' random nodes and rows
)

// probeRate times f (which returns its work: flops, bytes, edges) until at
// least probeMin has passed, probeReps times, and returns the median rate
// of work per second.
func probeRate(ctx context.Context, f func() (float64, error)) (float64, error) {
	rates := make([]float64, 0, probeReps)
	for range probeReps {
		var work, secs float64
		for secs < probeMin.Seconds() {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			t0 := time.Now()
			w, err := f()
			if err != nil {
				return 0, err
			}
			work += w
			secs += time.Since(t0).Seconds()
		}
		rates = append(rates, work/secs)
	}
	slices.Sort(rates)
	return rates[len(rates)/2], nil
}

// probeRNG is a small deterministic generator for the probes' nodes.
type probeRNG uint64

func (r *probeRNG) intn(n int) int32 {
	*r = *r*6364136223846793005 + 1442695040888963407
	return int32(uint64(*r>>33) % uint64(n))
}

// dropoutApplier is the cpu backend's fused dropout (as the engine calls it).
type dropoutApplier interface {
	DropoutApply(seed uint64, p float64, x, mask, y *tensor.Tensor) error
}

// calibrate measures the CPU's machine description, per thread: GEMM on
// the model's largest weight, the loader's gather of random feature rows
// (the probe batch's input rows, at most 64 MiB), sampling of random seeds with the run's sampler on the run's
// graph, the aggregation (SpMM) of a probe block at the model's widest
// aggregated width, dropout over the gathered rows, and a CPU trainer's
// bind of the probe's blocks. Keys without a probe keep their value.
func (s *hybridStepper) calibrate(ctx context.Context) (cpuMachine, error) {
	m := s.perf.cpu
	if s.nDev == len(s.trainers) {
		return m, fmt.Errorf("hybrid.calibrate: no CPU trainer to calibrate")
	}
	th, ok := s.trainers[s.nDev].r.e.be.(backend.Threaded)
	if !ok {
		return m, fmt.Errorf("hybrid.calibrate: the CPU trainer's backend %s cannot run on one thread", s.trainers[s.nDev].r.e.be.Name())
	}
	be := th.WithThreads(1)
	rng := probeRNG(probeSeed)
	n, dim := s.e.ds.NumNodes, s.e.dim
	seeds := make([]int32, 0, min(s.batch, 256, n))
	seen := map[int32]bool{}
	for len(seeds) < cap(seeds) {
		if v := rng.intn(n); !seen[v] {
			seen[v] = true
			seeds = append(seeds, v)
		}
	}
	var err error
	rep := uint64(0)
	if m.SampleMEPS, err = probeRate(ctx, func() (float64, error) {
		rep++
		blocks, err := s.sampler.Sample(ctx, s.e.adjs.Adj, seeds, probeSeed+rep)
		var e int64
		for _, b := range blocks {
			e += b.NumEdges()
		}
		return float64(e), err
	}); err != nil {
		return m, fmt.Errorf("hybrid.calibrate: sampling: %w", err)
	}
	m.SampleMEPS /= 1e6
	blocks, err := s.sampler.Sample(ctx, s.e.adjs.Adj, seeds, probeSeed)
	if err != nil {
		return m, fmt.Errorf("hybrid.calibrate: sampling: %w", err)
	}
	// The loader's gather: the probe batch's input rows, in the sampler's
	// order, at most 64 MiB of them, into a fresh buffer as the loader's.
	ids := blocks[0].Src[:max(1, min(len(blocks[0].Src), (64<<20)/(4*dim)))]
	var rows []float32
	if m.GBps, err = probeRate(ctx, func() (float64, error) {
		rows = gatherRows(s.e.feats, dim, ids)
		return float64(len(rows) * 4), nil
	}); err != nil {
		return m, err
	}
	m.GBps /= 1e9
	x, err := placeFeatures(be, rows, []int{len(ids), dim}, tensor.Float32, tensor.Host)
	if err != nil {
		return m, fmt.Errorf("hybrid.calibrate: %w", err)
	}
	alloc := func(r, c int) (*tensor.Tensor, error) { return be.Alloc(tensor.Float32, []int{r, c}, tensor.Host) }
	if da, ok := be.(dropoutApplier); ok {
		if m.DropMEPS, err = probeRate(ctx, func() (float64, error) {
			y, err := alloc(len(ids), dim) // fresh, as a bound program's value
			if err != nil {
				return 0, err
			}
			defer be.Release(y)
			return float64(len(rows)), da.DropoutApply(probeSeed, 0.5, x, nil, y)
		}); err != nil {
			return m, fmt.Errorf("hybrid.calibrate: dropout: %w", err)
		}
		m.DropMEPS /= 1e6
	}
	if k, c := s.perf.weight[0], s.perf.weight[1]; k > 0 && c > 0 {
		r := min(1024, len(ids))
		a, err := alloc(r, k)
		if err != nil {
			return m, err
		}
		defer be.Release(a)
		w, err := alloc(k, c)
		if err != nil {
			return m, err
		}
		defer be.Release(w)
		if err := be.Fill(a, 0.5); err != nil {
			return m, err
		}
		if err := be.Fill(w, 0.25); err != nil {
			return m, err
		}
		if m.GFLOPS, err = probeRate(ctx, func() (float64, error) {
			y, err := alloc(r, c)
			if err != nil {
				return 0, err
			}
			defer be.Release(y)
			return 2 * float64(r*k*c), be.GEMM(false, false, 1, a, w, 0, y)
		}); err != nil {
			return m, fmt.Errorf("hybrid.calibrate: GEMM: %w", err)
		}
		m.GFLOPS /= 1e9
	}
	if f := s.perf.aggWidth; f > 0 && len(blocks) > 0 {
		b := blocks[0]
		adj, err := be.UploadGraph(b.Adj, tensor.Host)
		if err != nil {
			return m, err
		}
		defer be.ReleaseGraph(adj)
		wt, err := train.UploadFloat32s(be, graph.MeanNorm(b.Adj), []int{int(b.Adj.NNZ())}, tensor.Float32, tensor.Host)
		if err != nil {
			return m, err
		}
		defer be.Release(wt)
		src, err := alloc(len(b.Src), f)
		if err != nil {
			return m, err
		}
		defer be.Release(src)
		if err := be.Fill(src, 0.5); err != nil {
			return m, err
		}
		if m.AggGBps, err = probeRate(ctx, func() (float64, error) {
			y, err := alloc(len(b.Dst), f)
			if err != nil {
				return 0, err
			}
			defer be.Release(y)
			return float64(b.NumEdges()) * float64(f) * 4, be.SpMM(ctx, adj, false, wt, src, 0, y)
		}); err != nil {
			return m, fmt.Errorf("hybrid.calibrate: aggregation: %w", err)
		}
		m.AggGBps /= 1e9
	}
	r := s.trainers[s.nDev].runner(1)
	in := make([]float32, len(blocks[0].Src)*dim)
	var edges int64
	for _, b := range blocks {
		edges += b.NumEdges()
	}
	if m.BindMEPS, err = probeRate(ctx, func() (float64, error) {
		t, err := placeFeatures(r.e.be, in, []int{len(blocks[0].Src), dim}, tensor.Float32, tensor.Host)
		if err != nil {
			return 0, err
		}
		bb, err := r.bind(blocks, nil, t, false)
		if err != nil {
			return 0, err
		}
		bb.release(r.e)
		return float64(edges), nil
	}); err != nil {
		return m, fmt.Errorf("hybrid.calibrate: bind: %w", err)
	}
	m.BindMEPS /= 1e6
	return m, nil
}
