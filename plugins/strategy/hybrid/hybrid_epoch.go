package hybrid

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"strata/core/backend"
	"strata/core/sampling"
	"strata/core/store"
	"strata/core/tensor"
	"strata/core/train"
	"strata/plugins/strategy/internal/steprun"
)

// hybridPart is one trainer's share of a step as it moves down the
// pipeline: sampled, its input rows gathered (stage one), then bound on
// its trainer (stage two: uploaded to a device).
type hybridPart struct {
	nodes  []int32
	blocks []sampling.Block
	x      []float32 // the staging buffer: the host-gathered input rows
	stage  []float32 // the staging buffer to hand back to the pool on release (x is dropped once bound)
	bound  *steprun.Bound
	runner *steprun.Runner // the runner it is bound with
}

// hybridBatch is one step on its way through the pipeline.
type hybridBatch struct {
	n     int
	st    drmState
	parts []hybridPart // one per trainer, in trainer order
	total int          // nodes of the whole batch
	// cpu is the CPU trainers' share of total under per-trainer batching
	// (cut sets it); otherwise it is 0 and split takes st.share of total.
	cpu   cut
	times stageTimes // measured, filled by each stage
	work  stepWork
	err   error
	pool  *stagingPool // where release hands the staging buffers back
}

// hybridEpoch is the last epoch's figures.
type hybridEpoch struct {
	measured, predicted stageTimes // summed over steps
	steps               int
	edges               float64
	wallS               float64 // the epoch's wall time
	predictedS          float64 // Σ Eq. 6 over the predicted stage times
	measuredPipeS       float64 // Σ Eq. 6 over the measured stage times
	adjustments         []string
	shares              []float64       // the CPU share of every step
	freshBytes          float64         // staging bytes the loader allocated (the pool had none to recycle)
	freshSteps          int             // steps that allocated staging memory
	perStep             [2][]stageTimes // every step's measured and predicted times
	hostPeak            int             // the most threads the host stages held at once (hostThreads)
	hostWaitS           float64         // seconds the host stages waited for threads
	// With hybrid.calibrate: every step's work and threads, and the
	// predictions again with the machine measured before and after the
	// epoch (bracket).
	works   []stepWork
	states  []drmState
	bracket *bracketed
}

// median returns the median over steps of each stage time.
func median(ts []stageTimes) stageTimes {
	if len(ts) == 0 {
		return stageTimes{}
	}
	med := func(f func(stageTimes) float64) float64 {
		v := make([]float64, len(ts))
		for i, t := range ts {
			v[i] = f(t)
		}
		slices.Sort(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return stageTimes{
		SC: med(func(t stageTimes) float64 { return t.SC }), Load: med(func(t stageTimes) float64 { return t.Load }),
		Tran: med(func(t stageTimes) float64 { return t.Tran }), TA: med(func(t stageTimes) float64 { return t.TA }),
		TC: med(func(t stageTimes) float64 { return t.TC }), Sync: med(func(t stageTimes) float64 { return t.Sync }),
		SA: med(func(t stageTimes) float64 { return t.SA }), Bind: med(func(t stageTimes) float64 { return t.Bind }),
	}
}

// hybridTotals count over the run.
type hybridTotals struct{ adjustments int }

// lag is how many steps after it is made a DRM decision takes effect:
// the pipeline's depth, so that the sampler never waits for one.
func (s *hybridStepper) lag() int {
	if s.h.Prefetch {
		return s.prefetch + 4
	}
	return s.prefetch + 2
}

// split divides a batch's nodes among the trainers: the first cpu.nodes
// (round(share × n) unless cpu.set) evenly over the CPU trainers, the rest
// evenly over the devices (trainer order: devices, then CPU trainers).
func (s *hybridStepper) split(nodes []int32, share float64, cpu cut) [][]int32 {
	nCPU := len(s.trainers) - s.nDev
	c := int(share*float64(len(nodes)) + 0.5)
	if cpu.set {
		c = cpu.nodes
	}
	if s.nDev == 0 {
		c = len(nodes)
	}
	if nCPU == 0 {
		c = 0
	}
	out := make([][]int32, len(s.trainers))
	cpuNodes, devNodes := nodes[:c], nodes[c:]
	for k := range s.nDev {
		out[k] = devNodes[k*len(devNodes)/s.nDev : (k+1)*len(devNodes)/s.nDev]
	}
	for k := range nCPU {
		out[s.nDev+k] = cpuNodes[k*len(cpuNodes)/nCPU : (k+1)*len(cpuNodes)/nCPU]
	}
	return out
}

// cpuThreads is each CPU trainer's share of the training threads, at
// least one.
func (s *hybridStepper) cpuThreads(st drmState) int {
	return max(1, st.train/max(1, s.h.CPUTrainers))
}

// stageLabelKey is the pprof label that names the hybrid stage a
// goroutine works for (sample, load, bind, train): a CPU profile of a run
// splits by stage with go tool pprof -tagfocus=hybrid_stage=train.
// Goroutines a stage starts inherit it.
const stageLabelKey = "hybrid_stage"

// stageLabel labels the calling goroutine as working for stage and
// returns ctx with the label.
func stageLabel(ctx context.Context, stage string) context.Context {
	ctx = pprof.WithLabels(ctx, pprof.Labels(stageLabelKey, stage))
	pprof.SetGoroutineLabels(ctx)
	return ctx
}

// parallel runs f(0..n-1) on at most k goroutines and returns the first
// error in index order.
func parallel(n, k int, f func(i int) error) error {
	errs := make([]error, n)
	sem := make(chan struct{}, max(k, 1))
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// sample is the sampler stage for batch n: every trainer's part with the
// batch's seed (so that a node's neighbourhood does not depend on the
// split), on st.sample goroutines.
func (s *hybridStepper) sample(ctx context.Context, b *hybridBatch, nodes []int32, seed uint64) {
	b.total = len(nodes)
	split := s.split(nodes, b.st.share, b.cpu)
	b.parts = make([]hybridPart, len(split))
	rng := seed*0x9e3779b97f4a7c15 + uint64(b.n) // strategy.minibatch's seed of batch n on one replica
	onDevice := make([]bool, len(split))         // sampled by the device's own sampler
	for k := range split {
		b.parts[k].nodes = split[k]
		onDevice[k] = s.topo != nil && !s.trainers[k].cpu
	}
	stats := make([]store.TopologyStats, len(split))
	hostNbrs := make([]float64, len(split)) // a device part's neighbours the CPU sampler read
	cpuS := make([]float64, len(split))     // and the CPU sampler's part of its sampling time
	run := func(dev bool, threads int) error {
		return parallel(len(split), threads, func(k int) error {
			if len(split[k]) == 0 || onDevice[k] != dev {
				return nil
			}
			var err error
			if dev {
				b.parts[k].blocks, stats[k], hostNbrs[k], cpuS[k], err = s.sampleOnDevice(ctx, k, split[k], rng, b.st.sampleCPU)
				return err
			}
			b.parts[k].blocks, err = s.sampler.Sample(ctx, s.e.Adjs.Adj, split[k], rng)
			return err
		})
	}
	devThreads := s.exec(b.st).sample
	b.err = run(true, devThreads)
	// The CPU sampler's reads in the devices' parts ran on their
	// goroutines, in parallel: their time, shared.
	var cpuShareS float64
	for _, v := range cpuS {
		cpuShareS += v
	}
	b.times.SC = cpuShareS / float64(max(1, min(devThreads, s.nDev)))
	cpuParts := 0 // the parts the CPU samples: one goroutine each
	for k := range split {
		if len(split[k]) > 0 && !onDevice[k] {
			cpuParts++
		}
	}
	if b.err == nil && cpuParts > 0 {
		threads, done, err := s.host.acquire(ctx, min(s.exec(b.st).sample, cpuParts))
		t0 := time.Now()
		if b.err = err; err == nil {
			b.err = run(false, threads)
		}
		done()
		b.times.SC += time.Since(t0).Seconds()
	}
	if b.err != nil {
		b.err = fmt.Errorf("sampling batch %d: %w", b.n, b.err)
		return
	}
	b.work = stepWork{parts: make([]partWork, len(split)), cpu: make([]bool, len(split))}
	for k, p := range b.parts {
		b.work.cpu[k] = s.trainers[k].cpu
		pw := &b.work.parts[k]
		*pw = partWorkOf(p.blocks)
		if onDevice[k] {
			pw.hostNbrs = hostNbrs[k]
			pw.sampleLocal = float64(stats[k].LocalBytes)
			for _, v := range stats[k].Bytes {
				pw.sampleLink += float64(v)
			}
			if err := s.store.CountTopology(stats[k]); err != nil {
				b.err = fmt.Errorf("sampling batch %d on %s: %w", b.n, s.trainers[k].name, err)
				return
			}
			if s.perf.pcie > 0 && s.simulated() {
				// A simulated device's sampling time is its reads over
				// its memory's and links' bandwidths.
				b.times.SA = max(b.times.SA, pw.sampleLocal/(s.perf.dev.MemGBps*1e9)+pw.sampleLink/(s.perf.pcie*1e9))
			}
		}
	}
}

// sampleOnDevice samples device trainer k's part with the device's own
// sampler: it reads the topology in the device's memory (the blocks are
// those of the host graph, the reads counted in stats); with a CPU share
// (drmState.sampleCPU) the CPU sampler reads that share of the rows from
// the host's graph instead (routedGraph), and hostNbrs and cpuS are the
// neighbours it read and its part of the sampling's wall time.
func (s *hybridStepper) sampleOnDevice(ctx context.Context, k int, seeds []int32, rng uint64, cpuShare float64) (
	blocks []sampling.Block, stats store.TopologyStats, hostNbrs, cpuS float64, err error) {
	gs, _ := sampling.AsGraphSampler(s.sampler) // checked by CheckConfig
	var g sampling.Graph = s.topo[k]
	var routed *routedGraph
	if cpuShare > 0 {
		routed = newRoutedGraph(sampling.CSR(s.e.Adjs.Adj), s.topo[k], cpuShare)
		g = routed
	}
	t0 := time.Now()
	blocks, err = gs.SampleGraph(ctx, g, seeds, rng)
	stats = s.topo[k].Take()
	if routed != nil {
		hostNbrs = float64(routed.hostNbrs.Load())
		cpuS = time.Since(t0).Seconds() * routed.hostShare()
	}
	return blocks, stats, hostNbrs, cpuS, err
}

// load is stage one of the feature prefetch: every part's input rows
// gathered from the host feature matrix into a staging buffer, on
// st.load goroutines once it holds their threads.
func (s *hybridStepper) load(ctx context.Context, b *hybridBatch) {
	loaders := s.exec(b.st).load
	threads, done, err := s.host.acquire(ctx, loaders)
	if err != nil {
		b.err = err
		return
	}
	defer done()
	t0 := time.Now()
	defer func() { b.times.Load = time.Since(t0).Seconds() }()
	type chunk struct{ part, lo, hi int }
	var chunks []chunk
	for k := range b.parts {
		p := &b.parts[k]
		if len(p.blocks) == 0 {
			continue
		}
		src := p.blocks[0].Src
		var fresh bool
		p.x, fresh = b.pool.get(len(src) * s.e.Dim)
		p.stage = p.x
		if fresh {
			b.work.freshBytes += float64(len(p.x) * 4)
		}
		per := max(1, (len(src)+loaders-1)/loaders)
		for lo := 0; lo < len(src); lo += per {
			chunks = append(chunks, chunk{k, lo, min(lo+per, len(src))})
		}
	}
	_ = parallel(len(chunks), threads, func(i int) error {
		c := chunks[i]
		p := &b.parts[c.part]
		s.copyRows(p.x, p.blocks[0].Src, c.lo, c.hi)
		return nil
	})
}

// copyRows copies the feature rows of nodes ids[lo:hi] into rows [lo, hi)
// of dst: the loader's gather of one chunk.
func (s *hybridStepper) copyRows(dst []float32, ids []int32, lo, hi int) {
	dim := s.e.Dim
	for r := lo; r < hi; r++ {
		v := int(ids[r])
		copy(dst[r*dim:(r+1)*dim], s.e.Feats[v*dim:(v+1)*dim])
	}
}

// transfer is stage two: every part bound on its trainer, its blocks and
// staged rows uploaded to its device (a CPU trainer binds in place).
func (s *hybridStepper) transfer(ctx context.Context, b *hybridBatch) {
	if b.err = s.transferParts(b, false); b.err != nil || !b.hasCPUPart(s) {
		return
	}
	// The CPU trainers' bind, one goroutine, on a host thread: the
	// trainers' own are training the step before.
	_, done, err := s.host.acquire(ctx, 1)
	if b.err = err; err == nil {
		b.err = s.transferParts(b, true)
	}
	done()
}

// hasCPUPart reports whether a CPU trainer has nodes in the batch.
func (b *hybridBatch) hasCPUPart(s *hybridStepper) bool {
	for k := range b.parts {
		if s.trainers[k].cpu && len(b.parts[k].nodes) > 0 {
			return true
		}
	}
	return false
}

// transferParts binds the parts of the devices (cpu false) or of the CPU
// trainers and times it: the CPU trainers' bind is T_bind (the slowest
// trainer's), the devices' T_Tran (on sim their link bytes over the link's
// bandwidth, otherwise the wall clock).
func (s *hybridStepper) transferParts(b *hybridBatch, cpu bool) error {
	t0 := time.Now()
	var bind float64
	for k := range b.parts {
		p := &b.parts[k]
		t := s.trainers[k]
		if len(p.nodes) == 0 || t.cpu != cpu {
			continue
		}
		tk := time.Now()
		p.runner = t.runner(s.cpuThreads(s.exec(b.st)))
		bb, err := s.bindPart(p, t.cpu)
		if err != nil {
			return fmt.Errorf("batch %d on %s: %w", b.n, t.name, err)
		}
		p.bound, p.x = bb, nil
		bind = max(bind, time.Since(tk).Seconds())
	}
	if cpu {
		b.times.Bind = bind
		return nil
	}
	b.times.Tran = time.Since(t0).Seconds()
	if s.perf.pcie > 0 && s.simulated() {
		// A simulated link's time is its bytes over its bandwidth.
		b.times.Tran = 0
		for k, pw := range b.work.parts {
			if !b.work.cpu[k] {
				b.times.Tran = max(b.times.Tran, (pw.rows*float64(s.e.Dim)*4+pw.topoBytes)/(s.perf.pcie*1e9))
			}
		}
	}
	return nil
}

// bindPart binds a part on its runner. A CPU trainer's staged rows become
// its input tensor in place: the loader gathered them straight into the
// trainer's input, so there is no second copy; a device's are uploaded.
func (s *hybridStepper) bindPart(p *hybridPart, cpu bool) (*steprun.Bound, error) {
	if cpu && p.x != nil {
		e := p.runner.Env
		in, err := steprun.PlaceFeatures(e.Be, p.x, []int{len(p.blocks[0].Src), s.e.Dim}, e.DT, e.Tier)
		if err != nil {
			return nil, err
		}
		return p.runner.Bind(p.blocks, steprun.FeatRows{}, in, false)
	}
	return p.runner.Bind(p.blocks, steprun.FeatRows{F32: p.x}, nil, false)
}

func (s *hybridStepper) simulated() bool {
	_, ok := s.e.Be.(backend.TimePredictor)
	return ok
}

// release frees what a batch holds on the trainers and hands its
// staging buffers back to the pool (after the tensors that wrap them).
func (b *hybridBatch) release() {
	for k := range b.parts {
		p := &b.parts[k]
		if p.bound != nil {
			p.bound.Release(p.runner.Env)
			p.bound = nil
		}
		b.pool.put(p.stage)
		p.stage, p.x = nil, nil
	}
}

// train runs the trainers of a staged batch at once (each CPU trainer on
// its own goroutine, the devices one after another on another), then
// the synchronizer's all-reduce and every replica's optimizer step.
func (s *hybridStepper) train(ctx context.Context, b *hybridBatch, seed uint64, update func() error) (float64, error) {
	losses := make([]float64, len(s.trainers))
	errs := make([]error, len(s.trainers))
	stepSeed := steprun.BatchSeed(seed, b.n)
	s.host.reserve(s.reservedThreads(s.exec(b.st)))
	run := func(k int) {
		p := &b.parts[k]
		if len(p.nodes) == 0 {
			return
		}
		losses[k], errs[k] = p.runner.TrainBatch(ctx, p.bound, p.nodes, stepSeed, float64(len(p.nodes))/float64(b.total), false)
		if errs[k] != nil {
			errs[k] = fmt.Errorf("batch %d on %s: %w", b.n, s.trainers[k].name, errs[k])
		}
	}
	// Without two-stage prefetch the parts are bound here, each side its
	// own before it trains: the CPU trainers do not wait for the devices'
	// upload.
	bindHere := !s.h.Prefetch
	// The CPU trainers, each on its own goroutine, while this one runs
	// the devices.
	var cpuWG sync.WaitGroup
	var bindErr [2]error
	cpuDone := make(chan float64, 1)
	cpuWG.Add(1)
	go func() {
		defer cpuWG.Done()
		stageLabel(ctx, "train") // the trainers' goroutines inherit it
		if bindHere {
			if bindErr[1] = s.transferParts(b, true); bindErr[1] != nil {
				cpuDone <- 0
				return
			}
		}
		t := time.Now()
		var inner sync.WaitGroup
		for k := s.nDev; k < len(s.trainers); k++ {
			inner.Add(1)
			go func() { defer inner.Done(); run(k) }()
		}
		inner.Wait()
		cpuDone <- time.Since(t).Seconds()
	}()
	if bindHere {
		bindErr[0] = s.transferParts(b, false)
	}
	before := train.PredictionNow(s.e.Be)
	t0 := time.Now()
	if bindErr[0] == nil {
		for k := range s.nDev {
			run(k)
		}
	}
	devWall := time.Since(t0).Seconds()
	cpuWG.Wait()
	b.times.TC = <-cpuDone
	if err := errors.Join(bindErr[:]...); err != nil {
		return 0, err
	}
	if s.nDev > 0 {
		b.times.TA = devWall
		if s.simulated() {
			b.times.TA = 0
			for _, byPurpose := range train.PredictionNow(s.e.Be).Since(before).KernelS {
				var k float64
				for _, p := range slices.Sorted(maps.Keys(byPurpose)) { // a fixed order: the sum is the same every run
					k += byPurpose[p]
				}
				b.times.TA = max(b.times.TA, k)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	t1 := time.Now()
	if err := s.allReduce(b); err != nil {
		return 0, fmt.Errorf("batch %d: all-reduce: %w", b.n, err)
	}
	b.times.Sync = time.Since(t1).Seconds()
	if s.simulated() && s.nDev > 0 {
		b.times.Sync = s.perf.scalars * 4 * 2 / (s.perf.pcie * 1e9)
	}
	if err := update(); err != nil {
		return 0, fmt.Errorf("batch %d: %w", b.n, err)
	}
	for _, t := range s.trainers[1:] {
		if err := t.opt.Step(t.r.PS.List()); err != nil {
			return 0, fmt.Errorf("batch %d: step on %s: %w", b.n, t.name, err)
		}
	}
	var loss float64
	for _, l := range losses { // in trainer order: deterministic
		loss += l
	}
	return loss, nil
}

// allReduce is the synchronizer: the gradients of the trainers that
// trained this step are summed on the host in trainer order (a fixed
// order, so the sum is deterministic) and the sum is written back to
// every replica, counted on the links as gradients.
func (s *hybridStepper) allReduce(b *hybridBatch) error {
	if len(s.trainers) < 2 {
		return nil
	}
	if s.e.DT == tensor.Float64 {
		return hostAllReduce[float64](s, b)
	}
	return hostAllReduce[float32](s, b)
}

// hostAllReduce is allReduce in the run's float type T: each gradient
// summed on the host in trainer order, then handed back to every trainer.
func hostAllReduce[T float32 | float64](s *hybridStepper, b *hybridBatch) error {
	views := make([]backend.Backend, len(s.trainers))
	for k, t := range s.trainers {
		views[k] = backend.ForPurpose(t.r.Env.Be, backend.PurposeGradients)
	}
	for i, p := range s.trainers[0].r.PS.List() {
		sum := make([]T, p.Grad.Numel())
		buf := make([]T, len(sum))
		for k, t := range s.trainers {
			if len(b.parts[k].nodes) == 0 {
				continue
			}
			if err := views[k].Download(t.r.PS.List()[i].Grad, buf); err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			for j, v := range buf {
				sum[j] += v
			}
		}
		for k, t := range s.trainers {
			if err := views[k].Upload(t.r.PS.List()[i].Grad, sum); err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
		}
	}
	return nil
}

// Epoch implements train.Stepper: the pipeline of one epoch. The sampler
// runs ahead through a queue of train.prefetch batches; with
// hybrid.prefetch the feature loader (stage one) and the data transfer
// (stage two) each run on their own goroutine, one batch apart, while
// the trainers compute; otherwise the training goroutine loads and
// transfers each batch before training it. After every step the runtime
// records the stage times and, with hybrid.drm, decides the split and
// threads of the step lag() steps later.
func (s *hybridStepper) Epoch(ctx context.Context, seed uint64, update func() error) (float64, error) {
	if s.h.Calibrate {
		m, err := s.calibrate(ctx)
		if err != nil {
			return 0, err
		}
		s.perf.cpu = m
	}
	if s.h.CPUShare == ShareModel && !s.mapped {
		share, m, err := s.mapShare(ctx, s.mapSeed) // the run's seed, not the epoch's: a resumed run maps alike
		if err != nil {
			return 0, err
		}
		s.state.share, s.mapped, s.modelShare = share, true, share
		if s.e.Log != nil {
			fmt.Fprintf(s.e.Log, "hybrid: cpu_share = \"model\": %.2f, the split %s predicts fastest (%.3g MTEPS)\n", share, CostModel, m)
		}
	}
	s.host.takeStats() // the epoch's start anew
	start := time.Now()
	p := s.newPipeline(ctx, seed)
	defer p.stop()
	ctx = p.ctx
	p.wg.Add(1)
	go p.sample(s, seed)
	next := p.sampled
	if s.h.Prefetch {
		next = p.startStages(s)
	}
	s.stats = hybridEpoch{}
	st := &s.stats
	loss, err := s.trainBatches(ctx, next, p.decisions, seed, update)
	if err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	st.wallS = time.Since(start).Seconds()
	st.hostPeak, st.hostWaitS = s.host.takeStats()
	if s.h.Calibrate {
		if err := s.bracket(ctx); err != nil {
			return 0, err
		}
	}
	return loss / float64(max(st.steps, 1)), nil
}

// maxSteps bounds an epoch's steps over n training nodes: split
// batching takes batch-size steps; per-trainer batching at least the
// devices' batch size times their number each step.
func (s *hybridStepper) maxSteps(n int) int {
	per := s.batch
	if s.h.Batching == BatchPerTrainer {
		per = s.batch * max(s.nDev, 1)
	}
	return (n + per - 1) / per
}

// cut is a step's count of nodes for the CPU trainers, when it is not
// the share of the step's nodes (set).
type cut struct {
	nodes int
	set   bool
}

// nextBatch cuts the next step's nodes from rest, the epoch's shuffled
// training nodes not yet trained, under the step's decision st, and
// returns them with the CPU trainers' count.
// Split batching takes the batch size; per-trainer batching a batch per
// device and the CPU trainers' share of the step besides: c nodes with
// c / (devices' + c) = share, at most the batch size per CPU trainer.
// The epoch's last step takes what is left, split by the share.
func (s *hybridStepper) nextBatch(rest []int32, st drmState) ([]int32, cut) {
	if s.h.Batching != BatchPerTrainer {
		return rest[:min(s.batch, len(rest))], cut{}
	}
	dev := s.batch * s.nDev
	nCPU := len(s.trainers) - s.nDev
	cpu := 0
	if nCPU > 0 && st.share > 0 {
		cpu = min(int(st.share/(1-st.share)*float64(dev)+0.5), nCPU*s.batch)
	}
	if dev+cpu > len(rest) {
		return rest, cut{}
	}
	return rest[:dev+cpu], cut{nodes: cpu, set: true}
}

// hybridPipeline is an epoch's pipeline: its context (cancelled when it
// stops), its batches, the DRM decision of each batch (the first lag()
// known at the start) and the channels between its stages (loaded and
// staged only under two-stage prefetch).
type hybridPipeline struct {
	ctx                     context.Context
	cancel                  context.CancelFunc
	wg                      sync.WaitGroup
	order                   []int32 // the epoch's training nodes, shuffled
	decisions               []chan drmState
	sampled, loaded, staged chan *hybridBatch
}

// newPipeline returns the pipeline of the epoch with seed, its stages not
// yet started: the training nodes shuffled with the seed, cut into steps
// as the sampler reaches them (nextBatch).
func (s *hybridStepper) newPipeline(ctx context.Context, seed uint64) *hybridPipeline {
	p := &hybridPipeline{order: steprun.Shuffled(s.e.DS.Train, seed)}
	p.ctx, p.cancel = context.WithCancel(ctx)
	p.decisions = make([]chan drmState, s.maxSteps(len(p.order)))
	for i := range p.decisions {
		p.decisions[i] = make(chan drmState, 1)
		if i < s.lag() {
			p.decisions[i] <- s.state
		}
	}
	p.sampled = make(chan *hybridBatch, s.prefetch)
	return p
}

// stop cancels the pipeline, releases the batches its channels still
// hold and waits for its goroutines.
func (p *hybridPipeline) stop() {
	drain := func(ch chan *hybridBatch) {
		for b := range ch {
			b.release()
		}
	}
	p.cancel()
	drain(p.sampled)
	if p.loaded != nil {
		drain(p.loaded)
	}
	if p.staged != nil {
		drain(p.staged)
	}
	p.wg.Wait()
}

// send hands b to the next stage, or releases it when the pipeline is
// cancelled first (false).
func (p *hybridPipeline) send(ch chan *hybridBatch, b *hybridBatch) bool {
	select {
	case ch <- b:
		return true
	case <-p.ctx.Done():
		b.release()
		return false
	}
}

// sample is the sampler's goroutine: each batch, once its decision is
// known, sampled into p.sampled, until a batch fails or the pipeline is
// cancelled.
func (p *hybridPipeline) sample(s *hybridStepper, seed uint64) {
	defer p.wg.Done()
	ctx := stageLabel(p.ctx, "sample")
	defer close(p.sampled)
	rest := p.order
	for n := 0; len(rest) > 0; n++ {
		if n == len(p.decisions) { // maxSteps bounds the steps: a bug otherwise
			p.send(p.sampled, &hybridBatch{n: n, pool: &s.staging, err: fmt.Errorf("hybrid: step %d would exceed the epoch's %d steps with %d nodes left", n, len(p.decisions), len(rest))})
			return
		}
		var st drmState
		select {
		case st = <-p.decisions[n]:
		case <-ctx.Done():
			return
		}
		nodes, cpu := s.nextBatch(rest, st)
		rest = rest[len(nodes):]
		b := &hybridBatch{n: n, st: st, cpu: cpu, pool: &s.staging}
		s.sample(ctx, b, nodes, seed)
		failed := b.err != nil // read before the next stage owns b
		if !p.send(p.sampled, b) || failed {
			return
		}
	}
}

// startStages starts two-stage prefetch's loader and transfer
// goroutines and returns the channel of the staged batches.
func (p *hybridPipeline) startStages(s *hybridStepper) chan *hybridBatch {
	// Unbuffered: while batch n trains, n+1 is transferred and n+2
	// loaded (HyScale's Fig. 7), and no more staging buffers live.
	p.loaded, p.staged = make(chan *hybridBatch), make(chan *hybridBatch)
	p.wg.Add(2)
	go p.stage("load", p.sampled, p.loaded, s.load)    // stage one: host gather into the staging buffer
	go p.stage("bind", p.loaded, p.staged, s.transfer) // stage two: host -> device
	return p.staged
}

// stage is a prefetch stage's goroutine: f on every batch of in that has
// not failed, handed on to out, until a batch fails or the pipeline is
// cancelled.
func (p *hybridPipeline) stage(name string, in, out chan *hybridBatch, f func(context.Context, *hybridBatch)) {
	defer p.wg.Done()
	defer close(out)
	ctx := stageLabel(p.ctx, name)
	for b := range in {
		if b.err == nil {
			f(ctx, b)
		}
		// Read the error before handing the batch on: the next stage
		// owns it from then on and may set its error.
		failed := b.err != nil
		if !p.send(out, b) || failed {
			return
		}
	}
}

// trainBatches trains the batches of next in turn (loading each first
// without two-stage prefetch), runs the runtime after each, and returns
// the sum of their losses.
func (s *hybridStepper) trainBatches(ctx context.Context, next chan *hybridBatch, decisions []chan drmState, seed uint64, update func() error) (float64, error) {
	var loss float64
	for b := range next {
		if b.err == nil && !s.h.Prefetch {
			pprof.Do(ctx, pprof.Labels(stageLabelKey, "load"), func(ctx context.Context) {
				s.load(ctx, b) // the trainers bind their parts themselves (train)
			})
		}
		if b.err != nil {
			b.release()
			return 0, b.err
		}
		l, err := s.train(ctx, b, seed, update)
		b.release()
		if err != nil {
			return 0, err
		}
		loss += l
		if err := s.runtime(b, decisions); err != nil {
			return 0, err
		}
	}
	return loss, nil
}

// bracketed are an epoch's predictions with the machine the probes
// measured before and after it (the geometric mean of each rate): the
// machine's load changes during an epoch, and one calibration measures
// one moment of it.
type bracketed struct {
	before, after, machine cpuMachine
	perStep                []stageTimes
	epochS                 float64 // Σ Eq. 6
}

// bracket calibrates again after the epoch and predicts its steps again
// with the mean of the two calibrations. The decisions DRM made during
// the epoch used the one before it; the next epoch calibrates anew.
func (s *hybridStepper) bracket(ctx context.Context) error {
	st := &s.stats
	after, err := s.calibrate(ctx)
	if err != nil {
		return err
	}
	before := s.perf.cpu
	br := &bracketed{before: before, after: after, machine: geoMean(before, after)}
	s.perf.cpu = br.machine
	defer func() { s.perf.cpu = after }()
	for i := range st.works {
		pred, err := s.perf.predict(&st.works[i], st.states[i], len(s.trainers)-s.nDev)
		if err != nil {
			return err
		}
		w := &st.works[i]
		it, _, err := s.perf.iteration(pred, w.edges(), s.hostShare(pred, w, st.states[i]), s.h.Prefetch)
		if err != nil {
			return err
		}
		br.perStep = append(br.perStep, pred)
		br.epochS += it
	}
	st.bracket = br
	return nil
}

// geoMean is the geometric mean of two machine descriptions, rate by rate.
func geoMean(a, b cpuMachine) cpuMachine {
	g := func(x, y float64) float64 { return math.Sqrt(x * y) }
	return cpuMachine{GFLOPS: g(a.GFLOPS, b.GFLOPS), GBps: g(a.GBps, b.GBps), AggGBps: g(a.AggGBps, b.AggGBps),
		SampleMEPS: g(a.SampleMEPS, b.SampleMEPS), DropMEPS: g(a.DropMEPS, b.DropMEPS), BindMEPS: g(a.BindMEPS, b.BindMEPS), TouchGBps: g(a.TouchGBps, b.TouchGBps)}
}

// runtime is the runtime's work after step b: it records the measured
// and predicted stage times and, with DRM on, makes the decision for the
// step lag() later from the chosen source.
func (s *hybridStepper) runtime(b *hybridBatch, decisions []chan drmState) error {
	st := &s.stats
	pred, err := s.perf.predict(&b.work, b.st, len(s.trainers)-s.nDev)
	if err != nil {
		return err
	}
	edges := b.work.edges()
	it, _, err := s.perf.iteration(pred, edges, s.hostShare(pred, &b.work, b.st), s.h.Prefetch)
	if err != nil {
		return err
	}
	mit, _, err := s.perf.iteration(b.times, edges, s.hostShare(b.times, &b.work, b.st), s.h.Prefetch)
	if err != nil {
		return err
	}
	st.steps++
	st.edges += edges
	st.measured.add(b.times)
	st.predicted.add(pred)
	st.predictedS += it
	st.measuredPipeS += mit
	st.shares = append(st.shares, b.st.share)
	if b.work.freshBytes > 0 {
		st.freshBytes += b.work.freshBytes
		st.freshSteps++
	}
	st.perStep[0], st.perStep[1] = append(st.perStep[0], b.times), append(st.perStep[1], pred)
	if s.h.Calibrate {
		st.works, st.states = append(st.works, b.work), append(st.states, b.st)
	}
	next := s.state
	if s.h.DRM != "off" {
		src := b.times
		if s.h.DRM == "predicted" {
			src = pred
		}
		var what string
		next, what = drmDecide(s.state, b.st, src, s.h.DRMStep, s.h.Prefetch, s.samplingWork(&b.work))
		if what != "" {
			st.adjustments = append(st.adjustments, strconv.Itoa(b.n)+":"+what)
			s.total.adjustments++
		}
	}
	s.state = next
	if j := b.n + s.lag(); j < len(decisions) {
		decisions[j] <- next
	}
	return nil
}

// samplingWork returns what balancing sampling needs when the devices
// sample (nil otherwise): the edges of the CPU trainers' parts and of the
// devices'.
func (s *hybridStepper) samplingWork(w *stepWork) *samplingWork {
	if s.topo == nil {
		return nil
	}
	sw := &samplingWork{}
	for k := range w.parts {
		if w.cpu[k] {
			sw.cpuParts += w.parts[k].sum()
		} else {
			sw.devParts += w.parts[k].sum()
		}
	}
	return sw
}

// PredictedS implements train.Pipelined: the performance model's epoch
// time (Eq. 6 summed over the steps).
func (s *hybridStepper) PredictedS() float64 { return s.stats.predictedS }

// hybridColumns are strategy.hybrid's output.csv columns.
var hybridColumns = []string{"hybrid_cpu_share", "hybrid_threads", "hybrid_adjustments", "hybrid_drm_log", "hybrid_step_shares",
	"measured_mteps", "predicted_mteps",
	"sample_s_pred", "load_s", "load_s_pred", "transfer_s", "transfer_s_pred", "cpu_train_s", "cpu_train_s_pred",
	"dev_train_s", "dev_train_s_pred", "sync_s", "sync_s_pred", "dev_sample_s", "dev_sample_s_pred", "cpu_bind_s", "cpu_bind_s_pred"}

// Columns implements train.Columner.
func (s *hybridStepper) Columns() []string { return hybridColumns }

// mteps returns the epoch's measured (wall clock) and predicted MTEPS.
func (s *hybridStepper) mteps() (measured, predicted float64) {
	st := &s.stats
	if st.wallS > 0 {
		measured = st.edges / st.wallS / 1e6
	}
	if st.predictedS > 0 {
		predicted = st.edges / st.predictedS / 1e6
	}
	return measured, predicted
}

// ReportEpoch implements train.EpochReporter.
func (s *hybridStepper) ReportEpoch(rec *train.EpochRecord) {
	st := &s.stats
	m, p := st.measured, st.predicted
	rec.SampleS, rec.ExtractS, rec.StageS, rec.TrainS = m.SC, m.Load, m.Tran+m.Bind, m.TC+m.TA+m.Sync
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	shares := make([]string, len(st.shares))
	for i, v := range st.shares {
		shares[i] = f(v)
	}
	mm, pm := s.mteps()
	rec.Extra = map[string]string{
		"hybrid_cpu_share": f(s.state.share), "hybrid_threads": fmt.Sprintf("%d/%d/%d", s.state.sample, s.state.load, s.state.train),
		"hybrid_adjustments": strconv.Itoa(len(st.adjustments)), "hybrid_drm_log": strings.Join(st.adjustments, ";"),
		"hybrid_step_shares": strings.Join(shares, ";"), "measured_mteps": f(mm), "predicted_mteps": f(pm),
		"sample_s_pred": f(p.SC), "load_s": f(m.Load), "load_s_pred": f(p.Load), "transfer_s": f(m.Tran), "transfer_s_pred": f(p.Tran),
		"cpu_train_s": f(m.TC), "cpu_train_s_pred": f(p.TC), "dev_train_s": f(m.TA), "dev_train_s_pred": f(p.TA),
		"sync_s": f(m.Sync), "sync_s_pred": f(p.Sync), "dev_sample_s": f(m.SA), "dev_sample_s_pred": f(p.SA),
		"cpu_bind_s": f(m.Bind), "cpu_bind_s_pred": f(p.Bind),
	}
}

// ReportResult implements train.ResultReporter: the last epoch's stages,
// measured and predicted, and its MTEPS.
func (s *hybridStepper) ReportResult(res *train.Result) {
	st := &s.stats
	m, p := st.measured, st.predicted
	res.SampleTimeS, res.ExtractTimeS, res.StageTimeS, res.TrainTimeS = m.SC, m.Load, m.Tran+m.Bind, m.TC+m.TA+m.Sync
	fig := HybridFigures{
		"cpu_share": s.state.share, "sample_threads": float64(s.state.sample), "load_threads": float64(s.state.load),
		"train_threads": float64(s.state.train), "adjustments": float64(s.total.adjustments), "steps": float64(st.steps),
		"edges": st.edges, "epoch_wall_s": st.wallS, "epoch_pred_s": st.predictedS, "epoch_pipelined_measured_s": st.measuredPipeS,
		"sample_s": m.SC, "sample_s_pred": p.SC, "load_s": m.Load, "load_s_pred": p.Load,
		"transfer_s": m.Tran, "transfer_s_pred": p.Tran, "cpu_train_s": m.TC, "cpu_train_s_pred": p.TC,
		"dev_train_s": m.TA, "dev_train_s_pred": p.TA, "sync_s": m.Sync, "sync_s_pred": p.Sync,
		"dev_sample_s": m.SA, "dev_sample_s_pred": p.SA, "cpu_bind_s": m.Bind, "cpu_bind_s_pred": p.Bind,
		"load_fresh_bytes": st.freshBytes, "load_fresh_steps": float64(st.freshSteps),
		"host_threads": float64(hostCapacity(s.execBudget, s.reservedThreads(s.exec(s.state)))), "host_threads_peak": float64(st.hostPeak),
		"host_wait_s": st.hostWaitS,
	}
	fig["measured_mteps"], fig["predicted_mteps"] = s.mteps()
	if s.topo != nil {
		fig["sample_cpu_share"] = s.state.sampleCPU // the CPU sampler's share of the devices' sampling
	}
	if s.mapped {
		fig["model_share"] = s.modelShare // the share cpu_share = "model" started from
	}
	res.SetFigures("hybrid", fig)
	// The median step, measured and predicted (a loaded machine's
	// outliers do not move it).
	mm, pm := median(st.perStep[0]), median(st.perStep[1])
	for k, v := range map[string]float64{"sample": mm.SC, "load": mm.Load, "transfer": mm.Tran, "cpu_train": mm.TC, "dev_train": mm.TA, "sync": mm.Sync, "dev_sample": mm.SA, "cpu_bind": mm.Bind} {
		fig[k+"_med_s"] = v
	}
	for k, v := range map[string]float64{"sample": pm.SC, "load": pm.Load, "transfer": pm.Tran, "cpu_train": pm.TC, "dev_train": pm.TA, "sync": pm.Sync, "dev_sample": pm.SA, "cpu_bind": pm.Bind} {
		fig[k+"_med_s_pred"] = v
	}
	machine := func(prefix string, c cpuMachine) {
		for k, v := range map[string]float64{"cpu_gflops": c.GFLOPS, "cpu_gbps": c.GBps, "agg_gbps": c.AggGBps, "sample_meps": c.SampleMEPS, "dropout_meps": c.DropMEPS, "bind_meps": c.BindMEPS, "touch_gbps": c.TouchGBps} {
			fig[prefix+k] = v
		}
	}
	machine("machine_", s.perf.cpu) // the machine description the predictions used
	if br := st.bracket; br != nil {
		machine("machine_", br.before)
		machine("machine_after_", br.after)
		machine("machine_bracketed_", br.machine)
		bm := median(br.perStep)
		for k, v := range map[string]float64{"sample": bm.SC, "load": bm.Load, "transfer": bm.Tran, "cpu_train": bm.TC, "dev_train": bm.TA, "sync": bm.Sync, "dev_sample": bm.SA, "cpu_bind": bm.Bind} {
			fig[k+"_med_s_pred_bracketed"] = v
		}
		fig["epoch_pred_bracketed_s"] = br.epochS
	}
}
