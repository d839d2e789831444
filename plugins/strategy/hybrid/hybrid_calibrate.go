package hybrid

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"strata/core/backend"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/sampling"
	"strata/core/tensor"
	"strata/core/train"
	"strata/plugins/strategy/internal/steprun"
)

// Calibration (hybrid.calibrate): short probes, in this process and right
// before an epoch, that measure the CPU side of costmodel.hyscale's
// machine description under whatever load the machine has then, so that
// the load slows the probes and the epoch alike. Each probe runs the
// kernel a stage runs on work of its own (random nodes and rows drawn
// from a fixed probe seed, never the epoch's batches), on as many threads
// as its stage has (a CPU trainer's, the loader's; a sampler runs one
// part on one goroutine), and reports its rate per thread, so that the
// model's rate × threads includes how well the kernel scales there.
// None of them reads a measured stage time: the model is never fitted to
// what it is compared with.

const (
	probeRounds   = 5                     // rounds over all the probes; each probe's median round counts
	probeMin      = 30 * time.Millisecond // a probe runs its kernel until at least this long per round
	probeSeed     = 0x5eed_ca1b_0001      // the probes' random nodes and rows
	probeBatches  = 4                     // probe batches of random nodes, cycled through
	maxGatherSets = 32                    // the most probe batches the gather cycles through
)

// probe is one micro-benchmark: f runs the kernel once and returns its
// work (flops, bytes, edges, elements).
type probe struct {
	rate    *float64
	unit    float64 // the rate's unit (1e9: giga, 1e6: mega)
	threads int     // the threads f runs on (the rate is per thread); 0: one
	setup   func()  // runs before each call of f, untimed; nil: none
	f       func() (float64, error)
	got     []float64
}

// runProbes runs the probes in probeRounds rounds, each probe in turn for
// at least probeMin per round, so that the machine's load drifting over
// the calibration touches every probe alike; each rate is the median of
// its rounds. When beside is not nil it runs in a loop on a goroutine of
// its own for as long as the probes run (the trainer's step, which the
// probed stages meet in the pipeline), and is cancelled at the end.
func runProbes(ctx context.Context, probes []*probe, beside func(context.Context) error) error {
	stop := func() error { return nil }
	if beside != nil {
		bctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			for bctx.Err() == nil {
				if err := beside(bctx); err != nil && bctx.Err() == nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		stop = func() error { cancel(); return <-done }
	}
	err := runRounds(ctx, probes)
	if err := errors.Join(err, stop()); err != nil {
		return err
	}
	for _, p := range probes {
		p.settle()
	}
	return nil
}

// runRounds runs runProbes' rounds.
func runRounds(ctx context.Context, probes []*probe) error {
	for range probeRounds {
		for _, p := range probes {
			var work, secs float64
			for secs < probeMin.Seconds() {
				if err := ctx.Err(); err != nil {
					return err
				}
				if p.setup != nil {
					p.setup()
				}
				t0 := time.Now()
				w, err := p.f()
				if err != nil {
					return err
				}
				work += w
				secs += time.Since(t0).Seconds()
			}
			p.got = append(p.got, work/secs)
		}
	}
	return nil
}

// settle sets the probe's rate: the median of its rounds, in its unit,
// per thread.
func (p *probe) settle() {
	slices.Sort(p.got)
	*p.rate = p.got[len(p.got)/2] / p.unit / float64(max(p.threads, 1))
}

// probeRNG is a small deterministic generator for the probes' nodes.
type probeRNG uint64

func (r *probeRNG) intn(n int) int32 {
	*r = *r*6364136223846793005 + 1442695040888963407
	return int32(uint64(*r>>33) % uint64(n))
}

// randomSeeds draws min(batch, n) distinct nodes of n.
func randomSeeds(rng *probeRNG, n, batch int) []int32 {
	seen := map[int32]bool{}
	seeds := make([]int32, 0, min(batch, n))
	for len(seeds) < cap(seeds) {
		if v := rng.intn(n); !seen[v] {
			seen[v] = true
			seeds = append(seeds, v)
		}
	}
	return seeds
}

// gatherSets is how many probe batches the gather probe cycles through
// when one call reads and writes perCall bytes: enough that they move
// twice the last-level cache's llc bytes, at least probeBatches and at
// most maxGatherSets.
func gatherSets(perCall, llc int64) int {
	if perCall <= 0 {
		return probeBatches
	}
	return int(min(max((2*llc+perCall-1)/perCall, probeBatches), maxGatherSets))
}

// dropoutApplier is the cpu backend's fused dropout (as the engine calls it).
type dropoutApplier interface {
	DropoutApply(seed uint64, p float64, x, mask, y *tensor.Tensor) error
}

// calibrate measures the CPU's machine description, per thread at the
// current state's threads (a CPU trainer's for its kernels and bind, the
// loader's for the gather): GEMM on
// the model's largest weight (forward and weight gradient); sampling of
// probe batches of the run's batch size with the run's sampler on the
// run's graph; the loader's gather of a probe batch's input rows (at
// most 64 MiB) into a recycled buffer, as the loader's staging pool
// gives it; the first touch of fresh memory (what a staging buffer the
// pool cannot recycle costs before the gather); the aggregation (SpMM) of
// a probe block at the model's widest aggregated width; dropout over the
// gathered rows; and a CPU trainer's bind of a probe batch's blocks. With
// two-stage prefetch the sampling, gather, first-touch and bind probes run
// beside a busy trainer, as their stages do. Keys without a probe keep
// their value.
func (s *hybridStepper) calibrate(ctx context.Context) (cpuMachine, error) {
	c := &calibration{s: s, ctx: ctx, m: s.perf.cpu}
	defer c.releaseAll()
	if err := c.setUp(); err != nil {
		return c.m, err
	}
	sampleP := c.sampleProbe()
	gatherP, touchP, rows, err := c.gatherProbes()
	if err != nil {
		return c.m, err
	}
	probes := []*probe{sampleP, gatherP, touchP}
	kernels, err := c.kernelProbes(rows)
	if err != nil {
		return c.m, err
	}
	probes = append(probes, kernels...)
	r := s.trainers[s.nDev].runner(c.nt)
	bindP := c.bindProbe(r)
	probes = append(probes, bindP)
	err = c.runAll(probes, r, []*probe{sampleP, gatherP, touchP, bindP})
	return c.m, err
}

// calibration is one run of hybridStepper.calibrate: the machine
// description its probes write into, the CPU trainer's backend at the
// trainer's threads, the probe batches, and what to release at its end.
type calibration struct {
	s       *hybridStepper
	ctx     context.Context
	m       cpuMachine
	be      backend.Backend
	nt, lt  int // a CPU trainer's threads and the loader's
	rng     probeRNG
	n, dim  int
	sets    [][]int32          // probeBatches batches of random nodes
	blocks  [][]sampling.Block // their samples
	release []func()
}

// setUp checks that there is a CPU trainer whose threads can be set, and
// samples the probe batches.
func (c *calibration) setUp() error {
	s := c.s
	if s.nDev == len(s.trainers) {
		return fmt.Errorf("hybrid.calibrate: no CPU trainer to calibrate")
	}
	th, ok := s.trainers[s.nDev].r.Env.Be.(backend.Threaded)
	if !ok {
		return fmt.Errorf("hybrid.calibrate: the CPU trainer's backend %s cannot set its threads", s.trainers[s.nDev].r.Env.Be.Name())
	}
	// A CPU trainer's threads, as the step runs it (stepper.train), and
	// the loader's.
	run := s.exec(s.state)
	c.nt = s.cpuThreads(run)
	c.lt = max(1, run.load)
	c.be = th.WithThreads(c.nt)
	c.rng = probeRNG(probeSeed)
	c.n, c.dim = s.e.DS.NumNodes, s.e.Dim
	// probeBatches batches of the run's batch size, of random nodes of
	// their own, sampled once here: the probes cycle through them, so
	// that, as the epoch's steps, every call meets a frontier of a
	// batch's size and nodes the previous call did not bring into the
	// caches (256 seeds repeated ran from cache on R-MAT 2^20 and
	// deduplicated fewer edges per node than a batch of 1024).
	c.sets = make([][]int32, probeBatches)
	c.blocks = make([][]sampling.Block, probeBatches)
	for i := range c.sets {
		c.sets[i] = randomSeeds(&c.rng, c.n, s.batch)
		var err error
		if c.blocks[i], err = s.sampler.Sample(c.ctx, s.e.Adjs.Adj, c.sets[i], probeSeed+uint64(i)); err != nil {
			return fmt.Errorf("hybrid.calibrate: sampling: %w", err)
		}
	}
	return nil
}

// releaseAll releases what the probes allocated, in allocation order.
func (c *calibration) releaseAll() {
	for _, f := range c.release {
		f()
	}
}

// alloc allocates an r×cols host tensor, filled with fill unless it is 0,
// released at the calibration's end.
func (c *calibration) alloc(r, cols int, fill float64) (*tensor.Tensor, error) {
	t, err := c.be.Alloc(tensor.Float32, []int{r, cols}, tensor.Host)
	if err == nil && fill != 0 {
		err = c.be.Fill(t, fill)
	}
	if t != nil {
		c.release = append(c.release, func() { c.be.Release(t) })
	}
	return t, err
}

// out allocates a kernel's r×cols output. The kernels write into outputs
// allocated and touched once, as a step's kernels write into the buffers
// its bind allocated: what fresh memory costs is the bind's, and its
// probe's.
func (c *calibration) out(r, cols int) (*tensor.Tensor, error) { return c.alloc(r, cols, 1) }

// sampleProbe samples the probe batches in turn with the run's sampler.
func (c *calibration) sampleProbe() *probe {
	s := c.s
	rep := uint64(0)
	return &probe{rate: &c.m.SampleMEPS, unit: 1e6, f: func() (float64, error) {
		rep++
		bl, err := s.sampler.Sample(c.ctx, s.e.Adjs.Adj, c.sets[rep%probeBatches], probeSeed+rep)
		var e int64
		for _, b := range bl {
			e += b.NumEdges()
		}
		return float64(e), err
	}}
}

// gatherProbes returns the loader's gather probe and the first-touch
// probe, and the first probe batch's gathered input rows.
//
// The loader's gather: each probe batch's input rows in the sampler's
// order, at most 64 MiB of them, into a recycled buffer as the
// loader's (stagingPool); the first touch of fresh memory, which the
// loader pays when the pool has no buffer, is a probe of its own.
// Between two of the loader's gathers a step's training passes
// through the caches, so a gather reads rows and writes a buffer the
// caches no longer hold; the gather probe cycles through enough
// batches, each into a buffer of its own, that its rows and buffers
// overflow the last-level cache twice (gatherSets). Four batches
// gathered into one buffer ran from the 260 MiB L3 of this machine
// and predicted R-MAT 2^20's loading 35-50% short.
func (c *calibration) gatherProbes() (gatherP, touchP *probe, rows []float32, err error) {
	ids, width, err := c.gatherIDs()
	if err != nil {
		return nil, nil, nil, err
	}
	dim, lt := c.dim, c.lt
	stages := make([][]float32, len(ids))
	for i := range stages {
		stages[i] = make([]float32, width*dim)
		for j := 0; j < len(stages[i]); j += 1024 { // touched once, as the pool's recycled buffers
			stages[i][j] = 1
		}
	}
	gather := func(i int) []float32 { // in lt chunks on lt goroutines, as the loader
		ids, stage := ids[i], stages[i]
		per := max(1, (len(ids)+lt-1)/lt)
		_ = parallel(lt, lt, func(k int) error {
			c.s.copyRows(stage, ids, min(len(ids), k*per), min(len(ids), (k+1)*per))
			return nil
		})
		return stage[:len(ids)*dim]
	}
	rows = slices.Clone(gather(0))
	grep := 0
	gatherP = &probe{rate: &c.m.GBps, unit: 1e9, threads: lt, f: func() (float64, error) {
		grep++
		return float64(len(gather(grep%len(ids))) * 4), nil
	}}
	touchP = &probe{rate: &c.m.TouchGBps, unit: 1e9, f: func() (float64, error) {
		x := make([]float32, width*dim)
		for i := 0; i < len(x); i += 1024 { // a write per 4 KiB page
			x[i] = 1
		}
		runtime.KeepAlive(x)
		return float64(len(x) * 4), nil
	}}
	return gatherP, touchP, rows, nil
}

// gatherIDs returns the input rows the gather probe cycles through, a
// list per batch (the probe batches', then those of further random
// batches sampled until there are gatherSets of them), and the longest
// list's length.
func (c *calibration) gatherIDs() (ids [][]int32, width int, err error) {
	s, dim := c.s, c.dim
	ids = make([][]int32, 0, probeBatches)
	addGather := func(bl []sampling.Block) {
		ids = append(ids, bl[0].Src[:max(1, min(len(bl[0].Src), (64<<20)/(4*dim)))])
		width = max(width, len(ids[len(ids)-1]))
	}
	for _, bl := range c.blocks {
		addGather(bl)
	}
	var bytes int64
	for _, r := range ids {
		bytes += 8 * int64(len(r)) * int64(dim) // read and written
	}
	for i := len(ids); i < gatherSets(bytes/int64(len(ids)), lastLevelCache()); i++ {
		bl, err := s.sampler.Sample(c.ctx, s.e.Adjs.Adj, randomSeeds(&c.rng, c.n, s.batch), probeSeed+uint64(i))
		if err != nil {
			return nil, 0, fmt.Errorf("hybrid.calibrate: sampling: %w", err)
		}
		addGather(bl)
	}
	return ids, width, nil
}

// kernelProbes returns the probes of a CPU trainer's kernels: dropout
// over the gathered rows (where the backend fuses it), GEMM on the
// model's largest weight (where it has one) and the aggregation (where
// the model aggregates).
func (c *calibration) kernelProbes(rows []float32) ([]*probe, error) {
	nRows := len(rows) / c.dim
	x, err := steprun.PlaceFeatures(c.be, rows, []int{nRows, c.dim}, tensor.Float32, tensor.Host)
	if err != nil {
		return nil, fmt.Errorf("hybrid.calibrate: %w", err)
	}
	var probes []*probe
	if da, ok := c.be.(dropoutApplier); ok {
		y, err := c.out(nRows, c.dim)
		if err != nil {
			return nil, err
		}
		probes = append(probes, &probe{rate: &c.m.DropMEPS, unit: 1e6, threads: c.nt, f: func() (float64, error) {
			return float64(len(rows)), da.DropoutApply(probeSeed, 0.5, x, nil, y)
		}})
	}
	if k, w := c.s.perf.weight[0], c.s.perf.weight[1]; k > 0 && w > 0 {
		p, err := c.gemmProbe(nRows, k, w)
		if err != nil {
			return nil, err
		}
		probes = append(probes, p)
	}
	if f := c.s.perf.aggWidth; f > 0 {
		p, err := c.spmmProbe(f)
		if err != nil {
			return nil, err
		}
		probes = append(probes, p)
	}
	return probes, nil
}

// gemmProbe returns the GEMM probe on r input rows and a k×cols weight.
//
// A probe batch's input rows (at most 64 MiB of them), as a
// step's input layer multiplies: its weight gradient sums over
// all of them, in the slices GEMM splits the inner dimension
// into (backend.GEMMTiles). At 1024 rows a thread the probe read
// 28 GFLOP/s on R-MAT 2^20 where the batch's rows gave 25.5.
func (c *calibration) gemmProbe(r, k, cols int) (*probe, error) {
	be := c.be
	a, err := c.alloc(r, k, 0.5)
	if err != nil {
		return nil, err
	}
	w, err := c.alloc(k, cols, 0.25)
	if err != nil {
		return nil, err
	}
	dy, err := c.alloc(r, cols, 0.125)
	if err != nil {
		return nil, err
	}
	y, err := c.out(r, cols)
	if err != nil {
		return nil, err
	}
	dw, err := c.out(k, cols)
	if err != nil {
		return nil, err
	}
	// The forward's product and the backward's weight gradient (Aᵀ·dY),
	// as a layer's training runs them.
	return &probe{rate: &c.m.GFLOPS, unit: 1e9, threads: c.nt, f: func() (float64, error) {
		if err := be.GEMM(false, false, 1, a, w, 0, y); err != nil {
			return 0, err
		}
		return 4 * float64(r*k*cols), be.GEMM(true, false, 1, a, dy, 0, dw)
	}}, nil
}

// spmmProbe returns the aggregation probe: the first probe block's SpMM
// (mean weights) at width f.
func (c *calibration) spmmProbe(f int) (*probe, error) {
	be := c.be
	b := c.blocks[0][0]
	adj, err := be.UploadGraph(b.Adj, tensor.Host)
	if err != nil {
		return nil, err
	}
	c.release = append(c.release, func() { be.ReleaseGraph(adj) })
	wt, err := train.UploadFloat32s(be, graph.MeanNorm(b.Adj.Unweighted()), []int{int(b.Adj.NNZ())}, tensor.Float32, tensor.Host)
	if err != nil {
		return nil, err
	}
	c.release = append(c.release, func() { be.Release(wt) })
	src, err := c.alloc(len(b.Src), f, 0.5)
	if err != nil {
		return nil, err
	}
	y, err := c.out(len(b.Dst), f)
	if err != nil {
		return nil, err
	}
	return &probe{rate: &c.m.AggGBps, unit: 1e9, threads: c.nt, f: func() (float64, error) {
		return float64(b.NumEdges()) * float64(f) * 4, be.SpMM(c.ctx, adj, false, wt, src, 0, y)
	}}, nil
}

// bindProbe returns the probe of r's bind of the probe batches' blocks.
//
// The bind cycles through the probe batches, as the sampling probe
// does, so that a call does not find its nodes' weights in the
// caches the previous call filled. Each bind runs after a collection
// (setup, untimed): a step binds into a heap whose last collection
// freed the earlier steps' programs, while back-to-back binds each
// took memory the heap had not reused, which after an epoch the
// runtime had given back to the OS (physics: 0.16-0.8 M edges/s
// after the epoch against 4-5 before it, and 4-5 in both with the
// collection). The program's buffers come from the runner's
// recycling view, as a step's do (hybridTrainer.runner); the
// collection still sets the heap its blocks' graphs and weights
// are made in.
func (c *calibration) bindProbe(r *steprun.Runner) *probe {
	dim := c.dim
	srcs := 0
	for _, bl := range c.blocks {
		srcs = max(srcs, len(bl[0].Src))
	}
	in := make([]float32, srcs*dim) // never touched: the bind wraps it
	brep := 0
	return &probe{rate: &c.m.BindMEPS, unit: 1e6, threads: c.nt, setup: runtime.GC, f: func() (float64, error) {
		brep++
		bl := c.blocks[brep%probeBatches]
		t, err := steprun.PlaceFeatures(r.Env.Be, in[:len(bl[0].Src)*dim], []int{len(bl[0].Src), dim}, tensor.Float32, tensor.Host)
		if err != nil {
			return 0, err
		}
		bb, err := r.Bind(bl, steprun.FeatRows{}, t, false)
		if err != nil {
			return 0, err
		}
		bb.Release(r.Env)
		var e int64
		for _, b := range bl {
			e += b.NumEdges()
		}
		return float64(e), nil
	}}
}

// runAll runs the probes: all of them alone, or, under two-stage
// prefetch, those of the stages that meet the trainer (beside) beside
// r's own step, then the others alone.
func (c *calibration) runAll(probes []*probe, r *steprun.Runner, beside []*probe) error {
	if !c.s.h.Prefetch {
		if err := runProbes(c.ctx, probes, nil); err != nil {
			return fmt.Errorf("hybrid.calibrate: %w", err)
		}
		return nil
	}
	// Under two-stage prefetch the trainer trains while the next steps
	// are sampled, loaded and bound: those probes run beside the CPU
	// trainer's real step, looping on a probe batch, and the trainer's own
	// kernels alone. A GEMM beside them ran from the last-level cache and
	// slowed the gather probe by at most 10%, where the trainer slowed
	// R-MAT 2^20's loader by 30-43%: a step also streams its
	// activations, masks and aggregations through memory. (The sampler
	// meets the loader too, for part of its time; a loader's gather
	// looping beside the sampling probe for all of it slowed the probe
	// 2-5x on this machine, far more than the pipeline's sampler is
	// slowed: left out.)
	step, free, err := ownStep(r, c.blocks[0])
	if err != nil {
		return fmt.Errorf("hybrid.calibrate: %w", err)
	}
	defer free()
	var alone []*probe
	for _, p := range probes {
		if !slices.Contains(beside, p) {
			alone = append(alone, p)
		}
	}
	if err := runProbes(c.ctx, beside, step); err != nil {
		return fmt.Errorf("hybrid.calibrate: %w", err)
	}
	if err := runProbes(c.ctx, alone, nil); err != nil {
		return fmt.Errorf("hybrid.calibrate: %w", err)
	}
	return nil
}

// ownStep returns r's training step (forward, loss and
// backward) on blocks, on parameters of its own so that the run's
// parameters and gradients stay as they are: the step the calibration's
// stage probes run beside. free releases what it bound.
func ownStep(r *steprun.Runner, blocks []sampling.Block) (step func(context.Context) error, free func(), err error) {
	e := r.Env
	ps, err := engine.NewParams(e.Model, e.Be, e.DT, e.Tier, probeSeed)
	if err != nil {
		return nil, nil, fmt.Errorf("the trainer's probe step: %w", err)
	}
	rr := *r
	rr.PS = ps
	bb, err := rr.Bind(blocks, steprun.FeatRows{}, nil, false)
	if err != nil {
		ps.Release()
		return nil, nil, fmt.Errorf("the trainer's probe step: %w", err)
	}
	nodes := blocks[len(blocks)-1].Dst
	step = func(ctx context.Context) error {
		_, err := rr.TrainBatch(ctx, bb, nodes, probeSeed, 1, false)
		return err
	}
	return step, func() { bb.Release(e); ps.Release() }, nil
}
