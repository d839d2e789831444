// Package chunked is strategy.chunked, HongTu: full-graph training layer
// by layer over the chunks of a 2-level partition, vertex data in a host
// tier.
package chunked

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"strata/core/backend"
	"strata/core/config"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/ir"
	"strata/core/modhost"
	"strata/core/partition"
	"strata/core/registry"
	"strata/core/safefile"
	"strata/core/tensor"
	"strata/core/train"
	"strata/plugins/strategy/internal/chunkfeed"
	"strata/plugins/strategy/internal/chunkplan"
	"strata/plugins/strategy/internal/hosttier"
	"strata/plugins/strategy/internal/steprun"
)

// Chunked is strategy.chunked, HongTu's full-graph training (Wang et al.,
// SIGMOD 2023): vertex data (features, every layer's activations, vertex
// gradients) stays in a host tier; the devices hold the parameters and
// one chunk's working set at a time. The graph is cut by
// partitioner.hongtu-2level into m partitions (one per device) of n
// chunks of destination nodes with all their in-edges, so every chunk's
// layer output is exact. Forward runs layer by layer over the batches of
// chunks (Alg. 1), backward in reverse, accumulating the vertex gradients
// on the host (§4.3); each layer's intermediates are kept on the host or
// recomputed (§4.2).
//
// Its options are the [chunked] section; the zero value is the default,
// so configs without the section keep their hash.
type Chunked struct {
	Chunks        int    `toml:"chunks" range:"[0,1073741824]" word:"auto:0:the smallest multiple of the device count whose largest chunk fits devices.memory_bytes" doc:"total number of chunks k of the 2-level partition (METIS into m = device count partitions, each cut into k/m edge-balanced chunks); a multiple of m, at most the number of nodes; 0 = \"auto\""`
	Intermediates string `toml:"intermediates" enum:",cache,recompute,hybrid,split" doc:"what backward does with a layer's intermediate results: cache = keep them on the host and load them back, recompute = run the chunk's forward again, hybrid (\"\") = choose per layer among cache, split and recompute by the cost estimate (ties: recompute, split, cache; on the cpu backend every layer that can split splits), split = keep only the aggregations' outputs on the host and recompute the rest (HongTu Fig. 4c; layers whose backward reads edge values, attention, recompute)"`
	Dedup         string `toml:"dedup" enum:",none,p2p,p2p_reuse" doc:"how neighbour rows reach the devices: none = every chunk loads its rows from the host, p2p = each row of a batch crosses from the host once and devices share it over peer links, p2p_reuse (\"\") = and rows already on a device from its previous chunk are reused"`
	Reorganize    bool   `toml:"reorganize" doc:"reorder the chunks with HongTu's 2-phase reorganisation (Alg. 4) to maximise p2p sharing and reuse"`
	HostFile      string `toml:"host_file" doc:"cpu backend: keep the host tier's activations, vertex gradients and the aggregations that split layers keep in this scratch file instead of RAM, read and written row run by row run (\"\" = RAM); created, removed at the end; relative like output.csv"`
	Premultiply   string `toml:"premultiply" enum:",off,bytes" hash:"omitempty" doc:"a layer that multiplies its input by a weight before it aggregates (GCN's Â·(X·W) where the weight narrows, GIN's first linear) computes that product (the row-wise ops up to the one value the rest of the layer reads) once per node in a pass over node ranges, and its chunks aggregate the narrower rows: bytes = where that moves fewer host-tier bytes than the chunks multiplying their source rows (docs/hongtu.md), off = never, \"\" = bytes on the cpu backend, off on sim; the same training either way (float rounding)"`
	Precompute    string `toml:"precompute" enum:",off,input" hash:"omitempty" doc:"a first layer that aggregates its input before anything learned or random touches it (GCN's Â·X·W with model.input_dropout = 0) has the same aggregation every epoch: input = compute it once before the first epoch, over the chunks, into the host tier (N × its width values more, in RAM or chunked.host_file) and run the rest of the layer once per node, without loading neighbour rows (docs/hongtu.md); off = the chunks aggregate every pass; \"\" = input on the cpu backend, off on sim; the same training either way (float rounding)"`
	Prefetch      bool   `toml:"prefetch" hash:"omitempty" doc:"cpu backend: read the next batch's rows on another goroutine while a batch computes (HongTu overlaps transfers with compute); helps where a core is idle or the host file waits on the disk, costs one batch's transition buffers more (R-MAT 2^20 on 2 busy cores: the same epoch, 0.23 GB more peak RSS); the results are the same"`
}

var (
	_ train.Strategy      = (*Chunked)(nil)
	_ train.Exampler      = (*Chunked)(nil)
	_ train.ConfigChecker = (*Chunked)(nil)
)

// StrataModule implements registry.Module.
func (*Chunked) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "strategy.chunked", New: func() registry.Module { return new(Chunked) },
		Doc: "HongTu: full-graph training chunk by chunk, vertex data in the host tier, deduplicated communication (see [chunked])"}
}

// Uses implements train.Strategy: every device of the
// machine (one partition each).
func (*Chunked) Uses() train.Uses {
	return train.Uses{Devices: true, Float64: true, Checkpoints: true, EdgeWeights: true}
}

// ExampleConfig implements train.Exampler: four chunks.
func (*Chunked) ExampleConfig() []string { return []string{"chunked.chunks=4"} }

// CheckConfig implements train.ConfigChecker.
func (s *Chunked) CheckConfig(cfg *config.Config) error {
	if s.HostFile != "" && cfg.Train.Backend != "cpu" {
		return cfg.KeyError(fmt.Sprintf("chunked.host_file maps the host tier to a file on the cpu backend, but train.backend = %q; set train.backend = \"cpu\" or remove chunked.host_file", cfg.Train.Backend), "chunked", "host_file")
	}
	if s.Prefetch && cfg.Train.Backend != "cpu" {
		return cfg.KeyError(fmt.Sprintf("chunked.prefetch reads the next batch's rows on the host while a batch computes on the cpu backend, but train.backend = %q (the simulated devices keep their one-clock order of transfers); set train.backend = \"cpu\" or remove chunked.prefetch", cfg.Train.Backend), "chunked", "prefetch")
	}
	if s.HostFile != "" {
		// Before training: the scratch file must be new (created and
		// removed by the run), never an existing file or an input.
		path := cfg.StrategyKeyPath(s.HostFile, "host_file")
		if err := safefile.CheckScratch(path, train.RunInputs(cfg)...); err != nil {
			return hostFileError(cfg, s.HostFile, err)
		}
		if key := train.OutputKeyAt(cfg, path); key != "" {
			return cfg.KeyError(fmt.Sprintf("chunked.host_file = %q is also %s, which the run writes: give the scratch file a path of its own", s.HostFile, key), "chunked", "host_file")
		}
	}
	if s.Chunks == 0 && cfg.Train.Backend == "sim" && cfg.Devices.MemoryBytes == 0 {
		return cfg.KeyError("chunked.chunks = \"auto\" sizes the chunks to devices.memory_bytes, which is 0 (unlimited); set devices.memory_bytes or give chunked.chunks a number", "chunked", "chunks")
	}
	if s.Chunks == 0 && cfg.Train.Backend != "sim" {
		return cfg.KeyError(fmt.Sprintf("chunked.chunks = \"auto\" sizes the chunks to a simulated device's memory, but train.backend = %q; give chunked.chunks a number", cfg.Train.Backend), "chunked", "chunks")
	}
	return nil
}

// hostFileError is the error of a chunked.host_file that the write gate
// refuses (safefile.CheckScratch: it exists, is in use, or its directory
// is missing); err names the path and the fix.
func hostFileError(cfg *config.Config, value string, err error) error {
	return cfg.KeyError(fmt.Sprintf("chunked.host_file = %q: cannot create the host tier's scratch file: %v", value, err), "chunked", "host_file")
}

// NewStepper implements train.Strategy.
func (s *Chunked) NewStepper(ctx context.Context, env *train.Env) (train.Stepper, error) {
	r, err := newChunkedRun(ctx, env.Config, *s, steprun.EnvOf(env))
	if err != nil {
		return nil, err
	}
	// The chunks hold their own edges: the run's adjacencies are not read
	// again, and at scale they are gigabytes (2.5 GB at R-MAT 2^24).
	env.Adjs, r.e.Adjs = nil, nil
	return r, nil
}

// chunkDevice is one device: its tier and its replica of the parameters
// (device 0's are the loop's; the others receive them before each epoch
// and each prediction).
type chunkDevice struct {
	tier tensor.Tier
	ps   *engine.Params
}

// chunkedRun is the stepper of strategy.chunked.
type chunkedRun struct {
	e        steprun.Env
	cfg      *config.Config
	opts     Chunked                // the [chunked] section
	layers   []*ir.Graph            // the model, one graph per layer
	used     []map[string]bool      // the graphs each layer reads
	widths   []int                  // widths[l]: layer l's input; widths[L]: the classes
	devs     []*chunkDevice         // one per partition
	plan     *chunkplan.Plan        // the chunks and their schedule
	h, dh    []hosttier.Rows        // the host tier: h[l] (h[0] the features) and dh[l], l ≥ 1
	cache    []bool                 // per layer: keep the intermediates on the host
	saved    []map[int][]any        // per layer and chunk: the host copies of the intermediates (nil where keptRows holds them)
	keptBufs [][]engine.KeptBuffer  // "split" and "hybrid": per layer that can split, the buffers its split keeps
	keptRows [][]hosttier.Rows      // with chunked.host_file: per split layer, the host file's matrix of each kept buffer (nil: in RAM)
	needIn   []bool                 // per layer: backward reads the layer's input
	total    int                    // training nodes
	comm     chunkplan.CommRows     // neighbour rows per layer pass
	hybrid   bool                   // intermediates chosen per layer by the estimate
	prices   []layerCost            // with hybrid: each layer's prices, which chose
	split    []*engine.SplitPlan    // per layer, its split where the layer splits in this run (nil: it caches or recomputes)
	pre      []*preLayer            // per layer, its row-wise prefix where it runs once per node (chunked.premultiply; nil: none)
	fixed    *fixedAgg              // layer 0's aggregation of the features, computed once (chunked.precompute; nil: none)
	fixedWhy string                 // why layer 0 has no fixed aggregation ("" where it has one or the key is off)
	fused    *ir.Graph              // layer 0's rest chained with layer 1's prefix, one node pass (fuse.go; nil: none)
	canSplit []*engine.SplitPlan    // "split" and "hybrid": per layer, its split where it can split (planSplit)
	splitWhy []string               // "split" and "hybrid": per layer, why it cannot split ("" when it can)
	kept     []int64                // per layer, the intermediates' bytes kept on the host in the last epoch
	estPeak  int64                  // the estimated device peak (0: no capacity to fit)
	unmap    func() error           // closes and removes chunked.host_file (nil: the host tier is in RAM)
	io       *hosttier.IOCount      // the host file's reads and writes (nil: no host file)
	addLog   addCache               // the host file's log of additions (nil: no host file)
	cacheMax int64                  // the bound on the vertex gradients' ranges added in RAM
	preInRAM bool                   // with a host file, the node passes' z and dz are kept in RAM (premul.go)
	disk     [2]int64               // the host file's bytes read and written in the last epoch
	bufs     backend.Backend        // allocates the chunk feed's buffers (see newChunkedRun)
	feed     chunkfeed.Env          // the chunk feed's view of the run (feedEnv), set once the devices exist
	rows     backend.RowCopier      // moves the chunk feed's rows by host indices (a host backend; nil: Gather and ScatterAdd)
	prefetch bool                   // a pass fills the next batch's transition buffers while the batch before computes (host backends)
	outBuf   any                    // host rows of the last output or loss gradient, reused by the next
	dedup    string                 // chunked.dedup
	cost     modhost.CostModel      // costmodel.hongtu, while the run is set up
	commS    map[string]float64     // Eq. 4's communication time of an epoch per mode
	clocks   deviceClocks           // the devices' busy time, synchronised per pass
	trans    *chunkplan.Transitions // the deduplication plan (nil with chunked.dedup = "none")
	prep     *phaseClock            // the preprocessing's phases, by the wall clock
}

var (
	_ train.Stepper        = (*chunkedRun)(nil)
	_ train.ResultReporter = (*chunkedRun)(nil)
	_ train.Announcer      = (*chunkedRun)(nil)
)

func newChunkedRun(ctx context.Context, cfg *config.Config, opts Chunked, e steprun.Env) (*chunkedRun, error) {
	prep := newPhaseClock()
	for _, op := range e.Model.Ops {
		if op.Kind == ir.OpBatchNorm {
			return nil, cfg.KeyError("model.options.batchnorm: chunked training normalises chunk by chunk, which is not the whole graph's batch statistics; remove batchnorm or use train.mode = \"fullgraph\"", "model", "options", "batchnorm")
		}
	}
	layers, err := e.Model.SplitLayers()
	if err != nil {
		return nil, fmt.Errorf("chunked: %w", err)
	}
	r := &chunkedRun{e: e, cfg: cfg, opts: opts, layers: layers, used: steprun.GraphsPerLayer(e.Model), total: len(e.DS.Train), dedup: opts.Dedup, prep: prep}
	// The chunk feed's buffers (transition buffers, rows in transit) are
	// allocated and released chunk by chunk: on a backend that recycles
	// storage (the cpu), they reuse the storage of the chunks before, and
	// buffers that are overwritten whole are not cleared first. Elsewhere
	// (sim, whose allocations are the simulated devices' memory) each is
	// allocated anew, as before. The layer programs allocate on e.Be, in
	// the Go heap: on the recycling view too they saved no time at R-MAT
	// 2^20 and cost 0.35 GB more peak RSS (docs/decisions.md).
	r.bufs = backend.RecyclingFit(e.Be)
	r.rows, _ = r.bufs.(backend.RowCopier)
	// With chunked.prefetch, on a host backend, the next batch's rows
	// are read while a batch computes (HongTu overlaps its transfers
	// with compute). The simulated devices keep their one-clock order of
	// transfers.
	r.prefetch = r.rows != nil && opts.Prefetch
	if r.dedup == "" {
		r.dedup = chunkfeed.DedupReuse
	}
	for _, lg := range layers {
		r.widths = append(r.widths, int(lg.Ops[0].Shape[1]))
		r.needIn = append(r.needIn, backwardReadsInput(lg))
	}
	r.widths = append(r.widths, int(e.Model.Ops[e.Model.Outputs[0]].Shape[1]))
	if err := r.planFixed(); err != nil {
		return nil, err
	}
	var cm modhost.CostModel
	var release func()
	err = r.prep.time(phaseCostModel, func() (err error) {
		cm, release, err = train.LoadCostModel(ctx, e.Host, CostModel)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("chunked: %w", err)
	}
	defer release()
	r.cost = cm
	defer func() { r.cost = nil }()
	tiers := []tensor.Tier{e.Tier}
	if md, ok := e.Be.(backend.MultiDevice); ok {
		tiers = md.DeviceTiers()
	}
	if err := r.planAll(ctx, len(tiers)); err != nil {
		return nil, err
	}
	if err := r.allocAll(ctx, tiers); err != nil {
		r.Release()
		return nil, err
	}
	r.prep.stop()
	if e.Log != nil {
		fmt.Fprintln(e.Log, r.prep.line())
	}
	return r, nil
}

// planAll makes the run's plans over m devices: with "split" and
// "hybrid" each layer's split, the chunks (fitPlan), their communication
// volumes priced by Eq. 4, and the deduplication plan of chunked.dedup;
// each phase on the preprocessing clock.
func (r *chunkedRun) planAll(ctx context.Context, m int) error {
	if r.opts.Intermediates != "cache" && r.opts.Intermediates != "recompute" {
		if err := r.prep.time(phaseSplit, r.planSplit); err != nil {
			return err
		}
	}
	var err error
	if r.plan, err = r.fitPlan(ctx, r.cfg, m); err != nil {
		return err
	}
	err = r.prep.time(phaseComm, func() (err error) {
		r.comm = r.plan.Comm(r.e.DS.NumNodes)
		if err := r.replanPremul(); err != nil {
			return err
		}
		r.commS, err = r.commCost(r.plan)
		return err
	})
	if err != nil || r.dedup == chunkfeed.DedupNone {
		return err
	}
	return r.prep.time(phaseDedup, func() (err error) {
		r.trans, err = r.plan.Transitions(ctx, r.dedup == chunkfeed.DedupReuse)
		return err
	})
}

// allocAll gives every device (tiers) its replica of the parameters,
// allocates the host tier and chooses the layers' intermediates; each
// phase on the preprocessing clock.
func (r *chunkedRun) allocAll(ctx context.Context, tiers []tensor.Tier) error {
	err := r.prep.time(phaseParams, func() error {
		for _, tier := range tiers {
			d := &chunkDevice{tier: tier}
			var err error
			if d.ps, err = engine.NewParams(r.e.Model, backend.ForPurpose(r.e.Be, backend.PurposeParameters), r.e.DT, tier, r.e.Seed); err != nil {
				return err
			}
			r.devs = append(r.devs, d)
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.feed = r.feedEnv()
	// The choice comes first: with a host file, the aggregations' outputs
	// that split layers keep take matrices of their own in it.
	if err := r.prep.time(phaseIntermediates, func() error { return r.chooseIntermediates(r.opts.Intermediates) }); err != nil {
		return err
	}
	if err := r.prep.time(phaseHostTier, func() error { return r.allocHost(ctx) }); err != nil {
		return err
	}
	return r.prep.time(phasePrecompute, func() error { return r.precompute(ctx) })
}

// feedEnv returns what the chunk feed uses of the run: its backend and
// buffers, its devices' tiers, the plan's owner of each node and the
// deduplication plan.
func (r *chunkedRun) feedEnv() chunkfeed.Env {
	tiers := make([]tensor.Tier, len(r.devs))
	for i, d := range r.devs {
		tiers[i] = d.tier
	}
	return chunkfeed.Env{Be: r.e.Be, DT: r.e.DT, Bufs: r.bufs, Rows: r.rows, Tiers: tiers, Owner: r.plan.Owner, Trans: r.trans, Dedup: r.dedup}
}

// newFeed returns the feed of layer l's input rows, filed as features
// (layer 0 without a row-wise prefix) or activations.
func (r *chunkedRun) newFeed(l int) *chunkfeed.Feed {
	src, _ := r.chunkIn(l)
	return chunkfeed.NewFeed(&r.feed, src, r.inPurpose(l))
}

// inPurpose is the purpose of layer l's input rows from the host.
func (r *chunkedRun) inPurpose(l int) string {
	if l == 0 && !r.isPre(l) {
		return backend.PurposeFeatures
	}
	return backend.PurposeActivations
}

// newSink returns the sink of layer l's input-row gradients.
func (r *chunkedRun) newSink(l int) *chunkfeed.Sink {
	_, grads := r.chunkIn(l)
	return chunkfeed.NewSink(&r.feed, grads)
}

// fitPlan plans chunked.chunks chunks over m devices, or with "auto" the
// fewest (m times a power of two) whose estimated peak fits the simulated
// devices' capacity. A count that does not fit is an error naming one
// that does, or, when none does, the smallest feasible capacity.
func (r *chunkedRun) fitPlan(ctx context.Context, cfg *config.Config, m int) (*chunkplan.Plan, error) {
	var capacity int64
	if _, sim := r.e.Be.(backend.Machine); sim {
		capacity = cfg.Devices.MemoryBytes
	}
	try := func(k int) (*chunkplan.Plan, int64, error) {
		p, err := planChunks(ctx, cfg, r.e, m, k, r.prep)
		if err != nil {
			return nil, 0, err
		}
		if r.opts.Reorganize {
			if err := r.prep.time(phaseReorganize, func() (err error) { p, err = r.reorganize(p); return err }); err != nil {
				return nil, 0, err
			}
		}
		if capacity == 0 {
			return p, 0, nil
		}
		var peak int64
		err = r.prep.time(phasePeak, func() (err error) {
			peak, err = r.estimatePeak(p, cfg.Train.Optimizer, cfg.Train.Momentum)
			return err
		})
		return p, peak, err
	}
	k, err := chunkCount(cfg, r.opts.Chunks, r.e, m)
	if err != nil {
		return nil, err
	}
	p, peak, err := try(k)
	if err != nil {
		return nil, err
	}
	r.estPeak = peak
	if capacity == 0 || peak <= capacity {
		return p, nil
	}
	nodes := r.e.DS.NumNodes
	bestK, best := k, peak
	for n := k / m; n*m < nodes; {
		n = min(2*n, nodes/m)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p, peak, err := try(m * n)
		if err != nil {
			break // the partitioner cannot cut this fine
		}
		if peak < best {
			bestK, best = m*n, peak
		}
		if peak > capacity {
			continue
		}
		if r.opts.Chunks == 0 {
			r.estPeak = peak
			return p, nil
		}
		return nil, cfg.KeyError(fmt.Sprintf("chunked.chunks = %d does not fit devices.memory_bytes = %d (%s): the largest chunk's training step needs an estimated %d bytes (%s) on a device; chunked.chunks = %d fits (%s), or set chunked.chunks = \"auto\"",
			k, capacity, steprun.MiB(capacity), r.estPeak, steprun.MiB(r.estPeak), m*n, steprun.MiB(peak)), "chunked", "chunks")
	}
	return nil, cfg.KeyError(fmt.Sprintf("devices.memory_bytes = %d (%s) is too small for one chunk at any chunk count: the smallest estimated peak is %d bytes (%s), with chunked.chunks = %d; the smallest feasible capacity is devices.memory_bytes = %d",
		capacity, steprun.MiB(capacity), best, steprun.MiB(best), bestK, best), "devices", "memory_bytes")
}

// reorganize applies Alg. 4 to p and returns the reorganised plan when
// Eq. 4 prices it cheaper, else p.
func (r *chunkedRun) reorganize(p *chunkplan.Plan) (*chunkplan.Plan, error) {
	q := p.Reorganize(r.e.DS.NumNodes)
	cp, err := r.commCost(p)
	if err != nil {
		return nil, err
	}
	cq, err := r.commCost(q)
	if err != nil {
		return nil, err
	}
	if cq[chunkfeed.DedupReuse] <= cp[chunkfeed.DedupReuse] {
		return q, nil
	}
	return p, nil
}

// chunkCount returns the total number of chunks k: chunked.chunks,
// checked against the nodes and the device count m.
func chunkCount(cfg *config.Config, k int, e steprun.Env, m int) (int, error) {
	if k == 0 {
		k = m // "auto" starts from one chunk per device (see fitChunks)
	}
	if k%m != 0 {
		use := fmt.Sprintf("%d or %d", k/m*m, (k/m+1)*m)
		if k < m {
			use = fmt.Sprint(m)
		}
		return 0, cfg.KeyError(fmt.Sprintf("chunked.chunks = %d is not a multiple of the %d devices (m, one partition per device); use %s", k, m, use), "chunked", "chunks")
	}
	if k > e.DS.NumNodes {
		return 0, cfg.KeyError(fmt.Sprintf("chunked.chunks = %d is more than the %d nodes; every chunk needs a destination node", k, e.DS.NumNodes), "chunked", "chunks")
	}
	return k, nil
}

// twoLevel returns a new instance of the partitioner id, which must
// split in two levels (partition.TwoLevel).
func twoLevel(id string) (partition.TwoLevel, error) {
	mod, err := registry.New[partition.Partitioner](id)
	if err != nil {
		return nil, err
	}
	h, ok := mod.(partition.TwoLevel)
	if !ok {
		return nil, fmt.Errorf("chunked: %s (a %T) does not split in two levels: it lacks the capability partition.TwoLevel (SetPartitions, the m partitions of the chunks)", id, mod)
	}
	return h, nil
}

// planChunks partitions the graph with partitioner.hongtu-2level into m
// partitions of k/m chunks and builds the chunks, adding the two phases'
// times to prep (nil: not measured).
func planChunks(ctx context.Context, cfg *config.Config, e steprun.Env, m, k int, prep *phaseClock) (*chunkplan.Plan, error) {
	h, err := twoLevel("partitioner.hongtu-2level")
	if err != nil {
		return nil, err
	}
	h.SetPartitions(m)
	if mod, ok := h.(registry.Module); ok {
		if err := cfg.ProvisionModule(ctx, "chunked", mod); err != nil {
			return nil, err
		}
	}
	var part []int32
	if err := prep.time(phasePartition, func() (err error) { part, err = h.Partition(ctx, e.Adjs.Adj, k, nil); return err }); err != nil {
		return nil, cfg.KeyError(fmt.Sprintf("chunked.chunks = %d: %v", k, err), "chunked", "chunks")
	}
	var p *chunkplan.Plan
	err = prep.time(phaseChunks, func() (err error) {
		p, err = chunkplan.NewPlan(ctx, e.Adjs, train.GraphReducers(e.Model), part, m, k/m, e.DS.Train)
		return err
	})
	return p, err
}

// allocHost allocates the host tier: the features and, per layer, its
// output and the output's gradient; with chunked.host_file the layers'
// matrices live in a scratch file read and written row run by row run.
func (r *chunkedRun) allocHost(ctx context.Context) error {
	n := r.e.DS.NumNodes
	arena := &hosttier.Arena{DT: r.e.DT}
	var widths []int // the activations and their gradients
	for l, w := range r.widths[1:] {
		if !r.inFused(l + 1) {
			widths = append(widths, w, w)
		}
	}
	r.preInRAM = r.opts.HostFile != "" && hosttier.Bytes(r.e.DT, n, r.preWidths()) <= graph.MaxMemory(ctx)/preRAMShare
	if !r.preInRAM {
		widths = append(widths, r.preWidths()...)
	}
	widths = append(widths, r.fixedWidths()...)
	size := hosttier.Bytes(r.e.DT, n, widths)
	if r.opts.HostFile != "" {
		size += hosttier.Bytes(r.e.DT, n, r.keptFileWidths())
	}
	if r.opts.HostFile == "" && size > graph.MaxMemory(ctx) {
		return r.cfg.KeyError(fmt.Sprintf("chunked: the host tier's activations and gradients need %s, more than the memory budget of %s (--max-memory); set chunked.host_file to keep them in a file",
			graph.FormatBytes(size), graph.FormatBytes(graph.MaxMemory(ctx))), "chunked")
	}
	if path := r.cfg.StrategyKeyPath(r.opts.HostFile, "host_file"); r.opts.HostFile != "" {
		f, closeFile, err := hosttier.OpenFile(path, size, train.RunInputs(r.cfg)...)
		if errors.Is(err, safefile.ErrUnsafe) || errors.Is(err, safefile.ErrLocked) {
			return hostFileError(r.cfg, r.opts.HostFile, err)
		}
		if err != nil {
			return r.cfg.KeyError(fmt.Sprintf("chunked.host_file = %q: cannot create a %s host tier there: %v; give a new file in a writable directory with room for it", path, steprun.MiB(size), err), "chunked", "host_file")
		}
		r.io = &hosttier.IOCount{}
		log, err := hosttier.NewAddLog(filepath.Dir(path), r.io)
		if err != nil {
			closeFile()
			return r.cfg.KeyError(fmt.Sprintf("chunked.host_file = %q: cannot create the log of row additions beside it: %v; give a file in a writable directory with room for it", path, err), "chunked", "host_file")
		}
		arena.File, arena.Log, arena.Size, arena.IO = f, log, size, r.io
		// The vertex gradients' row ranges are added in RAM within an
		// eighth of the memory budget, the rest through the log.
		r.cacheMax = graph.MaxMemory(ctx) / addCacheShare
		log.SetCache(r.cacheMax)
		r.addLog = log
		r.unmap = func() error {
			err := log.Close()
			if cerr := closeFile(); err == nil {
				err = cerr
			}
			return err
		}
	}
	x, err := hosttier.FeatureRows(r.e.DT, r.e.Feats, n, r.e.Dim)
	if err != nil {
		return err
	}
	if pinned, ok := r.e.Be.(backend.PinnedHost); ok && arena.File == nil {
		// The whole host tier, features included, in pinned memory.
		size += hosttier.Bytes(r.e.DT, n, []int{r.e.Dim})
		mem, free, err := pinned.AllocPinned(size)
		if err != nil {
			return fmt.Errorf("chunked: pinning the host tier (%s): %w", steprun.MiB(size), err)
		}
		arena.Mem, arena.Size, r.unmap = mem, size, func() error { free(); return nil }
		px, err := arena.Matrix(n, r.e.Dim)
		if err == nil {
			err = hosttier.CopyRows(px, x, n)
		}
		if err != nil {
			return err
		}
		x = px
	}
	r.h = []hosttier.Rows{x}
	r.dh = []hosttier.Rows{nil}
	for l := 1; l < len(r.widths); l++ {
		for _, into := range []*[]hosttier.Rows{&r.h, &r.dh} {
			var m hosttier.Rows
			if !r.inFused(l) { // else never on the host tier: nil
				if m, err = arena.Matrix(n, r.widths[l]); err != nil {
					return err
				}
			}
			*into = append(*into, m)
		}
	}
	if err := r.allocPre(arena); err != nil {
		return err
	}
	if err := r.allocFixed(arena); err != nil {
		return err
	}
	if arena.File != nil {
		if err := r.allocKept(arena); err != nil {
			return err
		}
	}
	r.saved = make([]map[int][]any, len(r.layers))
	for l := range r.saved {
		r.saved[l] = map[int][]any{}
	}
	return nil
}

// addCache is the host file's log of additions (hosttier.NewAddLog) as
// the run sees it: the bound on the vertex gradients held in RAM, and
// the most held.
type addCache interface {
	SetCache(n int64)
	CacheBytes() int64
	Trim()
}

// addCacheShare is the share of the memory budget (--max-memory) that
// the host file's vertex gradients may hold in RAM while a backward pass
// adds into them: 1/addCacheShare.
const addCacheShare = 8

// backwardReadsInput reports whether a layer's backward reads the value
// of its input (rather than only saved values and the topology): then
// backward loads the neighbour rows again even with cached
// intermediates. Which operands an op's backward reads is its op table
// entry's ReadsArgs (sums, bias, scaling, concatenation, dropout and row
// selection read none).
func backwardReadsInput(g *ir.Graph) bool {
	for _, op := range g.Ops {
		for k, a := range op.Args {
			if g.Ops[a].Kind != ir.OpInput {
				continue
			}
			if op.Kind == "narrow" {
				continue
			}
			if s := ir.Spec(op.Kind); s == nil || slices.Contains(s.ReadsArgs, k) {
				return true
			}
		}
	}
	return false
}

// Announce implements train.Announcer.
func (r *chunkedRun) Announce() string {
	modes := r.modes()
	return fmt.Sprintf("chunked: %d chunks (%d per device on %d devices), intermediates %v, neighbour rows per layer pass: %d original, %d with p2p, %d with p2p+reuse",
		len(r.plan.Chunks), r.plan.N, r.plan.M, modes, r.comm.Ori, r.comm.P2p, r.comm.Ru) + r.splitAnnouncement() + r.preAnnouncement() + r.fixedAnnouncement() + r.fusedAnnouncement() + r.announceDisk()
}

func (r *chunkedRun) modes() []string {
	out := make([]string, len(r.cache))
	for l, c := range r.cache {
		switch {
		case l == 0 && r.fixed != nil:
			out[l] = "precomputed"
		case c:
			out[l] = "cache"
		case r.isSplit(l):
			out[l] = "split"
		default:
			out[l] = "recompute"
		}
	}
	return out
}

// ChunkedFigures are strategy.chunked's figures in the result line,
// "chunked": {...}.
type ChunkedFigures struct {
	Chunks        int      `json:"chunks" doc:"chunks of chunked (HongTu) training, all devices together"`
	Intermediates []string `json:"intermediates" doc:"each layer's handling of its intermediate results: cache, recompute or split; precomputed for a first layer whose aggregation is computed once (precomputed_width)"`
	// IntermediatesBytes are, with chunked.intermediates = "split", the
	// bytes of each layer's aggregation outputs the last epoch's forward
	// kept on the host (each crosses twice: down in forward, up in
	// backward).
	IntermediatesBytes []int64 `json:"intermediates_bytes,omitempty" doc:"with intermediates = split: per layer, the bytes the last epoch kept on the host, the aggregations' outputs (one row per node); each crosses twice"`
	// SplitFallback says, per layer, why a layer of chunked.intermediates
	// = "split" recomputes instead ("" where it splits).
	SplitFallback []string `json:"split_fallback,omitempty" doc:"with intermediates = split: per layer, why the layer recomputes instead (its backward reads edge values, attention), \"\" where it splits"`
	// CommBytes are the host→device bytes of neighbour rows per epoch
	// without deduplication ("original"), with p2p sharing ("p2p") and
	// with p2p and reuse ("p2p_reuse"), from the plan.
	CommBytes map[string]int64 `json:"comm_bytes" doc:"host→device bytes of neighbour rows per epoch without deduplication (original), with p2p sharing (p2p) and with p2p and reuse (p2p_reuse), from the plan"`
	// CommPredictedS prices the same bytes with HongTu's Eq. 4
	// (costmodel.hongtu) on the machine's links, in seconds.
	CommPredictedS map[string]float64 `json:"comm_predicted_s" doc:"the same bytes priced with HongTu's Eq. 4 (costmodel.hongtu) on the machine's links, in seconds"`
	// CommRows are the neighbour rows one pass over a layer loads from
	// the host, over the graph's nodes (HongTu Table 8's V_ori, V_+p2p
	// and V_+ru normalised by |V|).
	CommRows map[string]float64 `json:"comm_rows_per_node" doc:"neighbour rows one layer pass loads from the host over |V|: without deduplication (original), with p2p sharing (p2p), with p2p and reuse (p2p_reuse); HongTu Table 8"`
	// NodePass is, per layer, the width of the rows its node pass writes
	// where its row-wise prefix runs once per node (0: none).
	NodePass []int `json:"node_pass,omitempty" doc:"chunked.premultiply: per layer, the width of the value (X·W) its node pass computes once per node and its chunks aggregate, 0 where the chunks run the whole layer; absent when no layer has a node pass"`
	// PrecomputedWidth is the width of layer 0's aggregation of the
	// features where the run computes it once (0: it does not).
	PrecomputedWidth int `json:"precomputed_width,omitempty" doc:"chunked.precompute: the width of layer 0's aggregation of the features, computed once before the first epoch (the rest of layer 0 runs once per node over it); absent when the chunks aggregate every pass"`
	// HostFile is an epoch's traffic through chunked.host_file, the
	// least and the measured (nil: the host tier is in RAM).
	HostFile *HostFileFigures `json:"host_file,omitempty" doc:"with chunked.host_file: an epoch's bytes through the host file, the least the schedule needs and the last epoch's"`
	// PredictedConcurrentS and PredictedSequentialS are the last epoch on
	// simulated devices with every device on its own clock, synchronised
	// after each pass (HongTu Fig. 5b), and with every chunk after the
	// other on one clock (see deviceClocks).
	PredictedConcurrentS float64 `json:"predicted_concurrent_s,omitempty" doc:"simulated devices: the last epoch's predicted time with each device busy on its own clock (kernels, its links' transfers) and every layer pass and the all-reduce ending at the slowest device (HongTu Fig. 5b)"`
	PredictedSequentialS float64 `json:"predicted_sequential_s,omitempty" doc:"simulated devices: the same work on one clock, every chunk after the other (the sum over devices of what predicted_concurrent_s takes the max of)"`
	// PreprocessS is the wall-clock time of the work before the first
	// epoch (HongTu Table 9's preprocessing), PreprocessPhasesS its
	// phases (preprocessPhases; they sum to it).
	PreprocessS       float64            `json:"preprocess_s" doc:"wall-clock seconds of chunked training's preprocessing, the one-time work before the first epoch (HongTu Table 9): the sum of preprocess_phases_s"`
	PreprocessPhasesS map[string]float64 `json:"preprocess_phases_s" doc:"wall-clock seconds of each preprocessing phase, 0 where it did not run: cost_model (loading costmodel.hongtu), split_plan (intermediates = split or hybrid: each layer's split), partition (METIS, then chunks, for every chunk count tried), chunks (their rows and subgraphs), reorganize (Alg. 4 and its Eq. 4 prices), peak_estimate (with devices.memory_bytes), comm_volumes (V_ori, V_+p2p, V_+ru and Eq. 4), dedup_plan (the transition sets of every batch and, with p2p_reuse, the reuse plan; 0 with dedup = none), params, host_tier, intermediates (the hybrid's choice, priced over the chunks), other"`
	// DedupPreprocessS is what deduplication adds to the preprocessing
	// after the partition (HongTu Table 9's "Preprocessing"): Alg. 4 and
	// the deduplication plan.
	DedupPreprocessS float64 `json:"dedup_preprocess_s" doc:"wall-clock seconds of what communication deduplication adds to the preprocessing after the partition, HongTu Table 9's Preprocessing: reorganize + dedup_plan of preprocess_phases_s (0 with dedup = none and no reorganisation)"`
	// DedupPreprocessShare is DedupPreprocessS over 100 predicted epochs
	// (predicted_epoch_s), HongTu Table 9's runtime.
	DedupPreprocessShare *float64 `json:"dedup_preprocess_share,omitempty" doc:"simulated devices: dedup_preprocess_s (this machine's wall clock) over 100 × predicted_epoch_s (the simulated devices' runtime of 100 epochs, as HongTu Table 9 gives it): Table 9's overhead of deduplication (up to 1.5 % there)"`
}

// CheckRules implements train.CheckRuler: the preprocessing's times are
// measured by the wall clock, not compared by the experiment check; the
// plan's counts and the predictions are.
func (*ChunkedFigures) CheckRules() []train.CheckRule {
	return []train.CheckRule{
		{Pattern: "preprocess_s", Why: train.WhyWallClock},
		{Pattern: "preprocess_phases_s.*", Why: train.WhyWallClock},
		{Pattern: "dedup_preprocess_s", Why: train.WhyWallClock},
		{Pattern: "dedup_preprocess_share", Why: train.WhyWallClock + " (the preprocessing over the predicted epochs)"},
	}
}

// Figures implements train.FigureDeclarer.
func (*Chunked) Figures() any { return &ChunkedFigures{} }

// ReportResult implements train.ResultReporter.
func (r *chunkedRun) ReportResult(res *train.Result) {
	res.Partitioner = "hongtu-2level"
	res.EstimatedPeakBytes = r.estPeak
	// Every layer loads its neighbour rows in forward and again in
	// backward (HongTu reloads the checkpoint, §4.3).
	b := r.commBytes(r.comm)
	nodes := float64(max(r.e.DS.NumNodes, 1))
	phases := r.prep.seconds()
	dedupPrep := phases[phaseReorganize] + phases[phaseDedup]
	var epochs100 float64
	var share *float64 // none without a prediction; 0 where nothing is added
	if res.PredictedEpochS > 0 {
		epochs100 = 100 * res.PredictedEpochS
		share = new(dedupPrep / epochs100)
	}
	res.SetFigures("chunked", &ChunkedFigures{
		Chunks:               len(r.plan.Chunks),
		Intermediates:        r.modes(),
		IntermediatesBytes:   r.keptBytes(),
		SplitFallback:        r.splitFallback(),
		NodePass:             r.preFigure(),
		PrecomputedWidth:     r.fixedFigure(),
		CommBytes:            map[string]int64{"original": b[chunkfeed.DedupNone], "p2p": b[chunkfeed.DedupP2P], "p2p_reuse": b[chunkfeed.DedupReuse]},
		CommPredictedS:       map[string]float64{"original": r.commS[chunkfeed.DedupNone], "p2p": r.commS[chunkfeed.DedupP2P], "p2p_reuse": r.commS[chunkfeed.DedupReuse]},
		CommRows:             map[string]float64{"original": float64(r.comm.Ori) / nodes, "p2p": float64(r.comm.P2p) / nodes, "p2p_reuse": float64(r.comm.Ru) / nodes},
		HostFile:             r.hostFileFigures(),
		PredictedConcurrentS: r.clocks.ConcurrentS,
		PredictedSequentialS: r.clocks.SequentialS,
		PreprocessS:          r.prep.total.Seconds(),
		PreprocessPhasesS:    phases,
		DedupPreprocessS:     dedupPrep,
		DedupPreprocessShare: share,
	})
}

// Params implements train.Stepper.
func (r *chunkedRun) Params() *engine.Params { return r.devs[0].ps }

// Release implements train.Stepper.
func (r *chunkedRun) Release() {
	for _, d := range r.devs {
		d.ps.Release()
	}
	r.devs = nil
	r.h, r.dh = nil, nil
	if r.unmap != nil {
		r.unmap() // the file is scratch: nothing is lost if this fails
		r.unmap = nil
	}
}

// Epoch implements train.Stepper: the devices receive device 0's
// parameters, forward runs layer by layer over the batches of chunks, the
// loss of every chunk's training nodes at the last layer, backward in
// reverse; then the devices' gradients are summed onto device 0, whose
// parameters the loop's optimizer steps.
func (r *chunkedRun) Epoch(ctx context.Context, seed uint64, update func() error) (float64, error) {
	r.clocks.start(r.e.Be)
	if err := r.broadcast(); err != nil {
		return 0, err
	}
	for _, d := range r.devs {
		if err := d.ps.ZeroGrads(); err != nil {
			return 0, err
		}
	}
	last := len(r.layers) - 1
	if err := r.dh[last+1].Zero(); err != nil {
		return 0, err
	}
	read0, written0 := r.io.Bytes()
	var loss float64
	for l := range r.layers {
		if err := r.nodeForwardAt(ctx, l, seed, true); err != nil {
			return 0, err
		}
		if l == 0 && r.fixed != nil {
			r.clocks.sync()
			continue
		}
		err := r.pass("forward", l, true, nil, func(k int, c *chunkplan.Chunk, feed *chunkfeed.Feed) error {
			lc, err := r.forward(ctx, l, k, c, feed, seed, true)
			loss += lc
			return err
		})
		if err != nil {
			return 0, err
		}
		r.clocks.sync() // the layer's forward ends on every device
	}
	for l := last; l >= 0; l-- {
		if l == 0 && r.fixed != nil {
			if err := r.nodeBackwardAt(ctx, l, seed); err != nil {
				return 0, fmt.Errorf("backward: %w", err)
			}
			r.clocks.sync()
			continue
		}
		if r.inputGrad(l) {
			if _, grads := r.chunkIn(l); grads != nil {
				if err := grads.Zero(); err != nil {
					return 0, err
				}
			}
		}
		var sink *chunkfeed.Sink
		if r.inputGrad(l) && r.dedup != chunkfeed.DedupNone {
			sink = r.newSink(l)
		}
		err := r.pass("backward", l, r.readsInputBack(l), sink, func(k int, c *chunkplan.Chunk, feed *chunkfeed.Feed) error {
			return r.backward(ctx, l, k, c, feed, sink, seed)
		})
		if err == nil {
			err = r.nodeBackwardAt(ctx, l, seed)
		}
		if err != nil {
			return 0, fmt.Errorf("backward: %w", err)
		}
		r.clocks.sync()
	}
	ps := make([]*engine.Params, len(r.devs))
	for i, d := range r.devs {
		ps[i] = d.ps
	}
	if err := steprun.AllReduceParams(r.e.Be, ps, false); err != nil {
		return 0, fmt.Errorf("reduce: %w", err)
	}
	read, written := r.io.Bytes()
	r.disk = [2]int64{read - read0, written - written0}
	r.clocks.sync() // the gradients' all-reduce
	r.clocks.end()
	return loss, update()
}

// broadcast gives every device the parameters of device 0, which the
// loop's optimizer steps (and a checkpoint or the best epoch restores).
func (r *chunkedRun) broadcast() error {
	be := backend.ForPurpose(r.e.Be, backend.PurposeParameters)
	root := r.devs[0].ps.List()
	for _, d := range r.devs[1:] {
		for i, p := range d.ps.List() {
			if err := be.Copy(p.Value, root[i].Value); err != nil {
				return fmt.Errorf("parameters to %s: %w", d.tier, err)
			}
		}
	}
	return nil
}

// chunkLogEvery is how often a long pass reports its progress.
const chunkLogEvery = 30 * time.Second

// pass runs fn over the chunks of every batch in schedule order, device
// by device; with load it feeds them layer l's input rows (with
// prefetch, batch j+1's rows are read while batch j computes).
// With a sink, it opens the sink's buffers before each batch and closes
// them after it. A pass longer than chunkLogEvery reports its progress
// (what: forward, backward or predict) every chunkLogEvery.
func (r *chunkedRun) pass(what string, l int, load bool, sink *chunkfeed.Sink, fn func(k int, c *chunkplan.Chunk, feed *chunkfeed.Feed) error) error {
	start := time.Now()
	last := start
	var feed *chunkfeed.Feed
	var ahead *prefetched // batch j+1's buffers, being filled
	if load {
		feed = r.newFeed(l)
		defer func() {
			feed.Drop(ahead.wait())
			feed.Release()
		}()
	}
	if sink != nil {
		defer sink.Release()
	}
	for j, batch := range r.plan.Sched {
		if feed != nil {
			if err := r.feedBatch(feed, j, &ahead); err != nil {
				return fmt.Errorf("layer %d batch %d: %w", l, j, err)
			}
		}
		if sink != nil {
			if err := sink.Open(j); err != nil {
				return fmt.Errorf("layer %d batch %d: %w", l, j, err)
			}
		}
		for k, c := range batch {
			if err := fn(k, r.plan.Chunks[c], feed); err != nil {
				return fmt.Errorf("layer %d chunk %d: %w", l, c, err)
			}
		}
		if sink != nil {
			if err := sink.Close(j + 1); err != nil {
				return fmt.Errorf("layer %d batch %d: gradients: %w", l, j, err)
			}
		}
		if now := time.Now(); r.e.Log != nil && now.Sub(last) >= chunkLogEvery {
			last = now
			fmt.Fprintf(r.e.Log, "chunked: %s layer %d: batch %d of %d done, %.0f s into the pass\n", what, l, j+1, len(r.plan.Sched), now.Sub(start).Seconds())
		}
	}
	return nil
}

// feedBatch makes batch j's transition buffers the feed's current ones:
// those *ahead prefetched, or filled now; with prefetch it then starts
// filling batch j+1's into *ahead.
func (r *chunkedRun) feedBatch(feed *chunkfeed.Feed, j int, ahead **prefetched) error {
	if *ahead != nil {
		nts, err := (*ahead).wait(), (*ahead).err
		*ahead = nil
		if err != nil {
			return err
		}
		feed.Commit(nts)
	} else if err := feed.Next(j); err != nil {
		return err
	}
	if r.prefetch && j+1 < len(r.plan.Sched) && r.dedup != chunkfeed.DedupNone {
		*ahead = prefetch(feed, j+1)
	}
	return nil
}

// prefetched is a batch's transition buffers filled on another
// goroutine (chunkfeed.Feed.Prepare).
type prefetched struct {
	done chan struct{}
	nts  []*chunkfeed.Transition
	err  error
}

// prefetch starts filling batch j's transition buffers.
func prefetch(feed *chunkfeed.Feed, j int) *prefetched {
	p := &prefetched{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.nts, p.err = feed.Prepare(j)
	}()
	return p
}

// wait returns the buffers once filled (nil for a nil p or a failed
// fill).
func (p *prefetched) wait() []*chunkfeed.Transition {
	if p == nil {
		return nil
	}
	<-p.done
	return p.nts
}

// boundChunk is one layer bound to one chunk on a device.
type boundChunk struct {
	prog    *engine.Program
	tensors []*tensor.Tensor
	adjs    []backend.Adj
}

func (b *boundChunk) release(be backend.Backend) {
	if b.prog != nil {
		b.prog.Release()
	}
	for _, t := range b.tensors {
		be.Release(t)
	}
	for _, a := range b.adjs {
		be.ReleaseGraph(a)
	}
}

// scatterTransposer is a graph whose Aᵀ products can scatter its entries
// instead of building its transpose, with the same bits (the cpu
// backend's cpu.Graph): a chunk's graph is uploaded for one pass, so at
// most one backward product reads its transpose.
type scatterTransposer interface{ ScatterTranspose() }

// bind uploads a chunk's graphs for layer l to device k and binds the
// layer to them; feed delivers the chunk's input rows (nil: a backward
// over kept intermediates that does not read them, or with split reads
// only the destinations' rows, which bind loads).
func (r *chunkedRun) bind(l, k int, c *chunkplan.Chunk, infer bool, feed *chunkfeed.Feed) (*boundChunk, error) {
	return r.bindGraph(r.layers[l], l, k, c, infer, feed)
}

// bindGraph is bind with lg, layer l's graph or a part of it over the
// same input rows and graphs (the fixed aggregation).
func (r *chunkedRun) bindGraph(lg *ir.Graph, l, k int, c *chunkplan.Chunk, infer bool, feed *chunkfeed.Feed) (*boundChunk, error) {
	d := r.devs[k]
	e := r.e
	b := &boundChunk{}
	fail := func(err error) (*boundChunk, error) {
		b.release(e.Be)
		return nil, err
	}
	topo := backend.ForPurpose(e.Be, backend.PurposeTopology)
	env := engine.Env{Backend: e.Be, DType: e.DT, Tier: d.tier, Blocks: []map[string]*engine.Graph{{}}, NodeIDs: [][]int32{c.Src},
		Inference: infer, InputGrad: r.inputGrad(l) && !infer, Resumable: !infer, Split: r.isSplit(l) && !infer}
	for name := range r.used[l] {
		cg := c.Graphs[name]
		a, err := topo.UploadGraph(cg.Csr, d.tier)
		if err != nil {
			return fail(fmt.Errorf("upload %s: %w", name, err))
		}
		if s, ok := a.(scatterTransposer); ok {
			s.ScatterTranspose() // bound for one pass: its transpose would serve one product
		}
		b.adjs = append(b.adjs, a)
		eg := &engine.Graph{Adj: a, Host: cg.Csr}
		for _, w := range []struct {
			v   []float32
			dst **tensor.Tensor
		}{{cg.Gcn, &eg.GCNNorm}, {cg.Mean, &eg.MeanNorm}} {
			if w.v == nil {
				continue // no aggregation needs these weights
			}
			t, err := train.UploadFloat32s(topo, w.v, []int{len(w.v)}, e.DT, d.tier)
			if err != nil {
				return fail(err)
			}
			b.tensors = append(b.tensors, t)
			*w.dst = t
		}
		env.Blocks[0][name] = eg
	}
	var x *tensor.Tensor
	if feed != nil {
		var owned bool
		var err error
		if x, owned, err = feed.Input(k, c); err != nil {
			return fail(fmt.Errorf("input rows: %w", err))
		}
		if owned {
			b.tensors = append(b.tensors, x)
		}
	} else {
		var err error
		switch {
		case !infer && r.isSplit(l) && r.split[l].DstRows:
			x, err = r.dstInput(l, k, c)
		case !infer:
			// A backward that reads no input row (kept intermediates,
			// or a split that reruns nothing of the input): the rows
			// are bound, never read, so they come uncleared (at R-MAT
			// 2^20 a GCN split's layer 0 would clear 2.5 GB an epoch).
			x, err = r.feed.Scratch([]int{len(c.Src), r.inWidth(l)}, d.tier)
		default:
			x, err = r.feed.Zeroed([]int{len(c.Src), r.inWidth(l)}, d.tier)
		}
		if err != nil {
			return fail(fmt.Errorf("input rows: %w", err))
		}
		b.tensors = append(b.tensors, x)
	}
	env.Input = x
	var err error
	if b.prog, err = engine.Bind(lg, env, d.ps); err != nil {
		return fail(err)
	}
	return b, nil
}

// purposeIntermediates files the traffic of cached intermediate results,
// purposeOutputs the layer outputs written back to the host (the row
// feed's own purposes are chunkfeed's).
const (
	purposeIntermediates = "intermediates"
	purposeOutputs       = "outputs"
)

// forward runs layer l over chunk c on device d and writes its output
// rows to the host tier. In training it keeps the intermediates on the
// host when the layer caches them, and at the last layer computes the
// chunk's share of the loss and leaves its gradient in dh. It returns
// that share of the loss.
func (r *chunkedRun) forward(ctx context.Context, l, k int, c *chunkplan.Chunk, feed *chunkfeed.Feed, seed uint64, training bool) (float64, error) {
	e := r.e
	d := r.devs[k]
	b, err := r.bind(l, k, c, !training, feed)
	if err != nil {
		return 0, err
	}
	defer b.release(e.Be)
	p := b.prog
	if err := p.Forward(ctx, engine.Mode{Train: training, Seed: seed}); err != nil {
		return 0, err
	}
	out, err := r.hostView(purposeOutputs, r.h[l+1], p.Output())
	if err != nil {
		return 0, err
	}
	// Training reads no layer's output back but the hidden layers' (the
	// last layer's loss gradient goes to dh instead).
	if !training || l < len(r.layers)-1 {
		if err := r.h[l+1].Put(c.Dst, out); err != nil {
			return 0, err
		}
	}
	if !training {
		return 0, nil
	}
	if err := r.keep(l, c, p); err != nil {
		return 0, err
	}
	if l < len(r.layers)-1 || len(c.Train) == 0 {
		return 0, nil
	}
	// The chunk's training nodes' rows of its output.
	share := float64(len(c.Train)) / float64(r.total)
	loss, err := steprun.WeighedLoss(e.Be, p, e.DS, c.Dst, c.Train, d.tier, share)
	if err != nil {
		return 0, err
	}
	grad, err := r.hostView(backend.PurposeGradients, r.dh[l+1], p.OutputGrad())
	if err != nil {
		return 0, err
	}
	return loss, r.dh[l+1].Put(c.Dst, grad)
}

// backward runs layer l's backward over chunk c on device d: the
// intermediates restored from the host or recomputed, the output gradient
// loaded from dh[l+1], the parameter gradients accumulated on the device
// and the input gradient added into dh[l] on the host.
func (r *chunkedRun) backward(ctx context.Context, l, k int, c *chunkplan.Chunk, feed *chunkfeed.Feed, sink *chunkfeed.Sink, seed uint64) error {
	e := r.e
	b, err := r.bind(l, k, c, false, feed)
	if err != nil {
		return err
	}
	defer b.release(e.Be)
	p := b.prog
	if err := r.restore(ctx, l, c, p, engine.Mode{Train: true, Seed: seed, AccumulateGrads: true}); err != nil {
		return err
	}
	if err := r.loadRows(backend.PurposeGradients, r.dh[l+1], c.Dst, p.OutputGrad()); err != nil {
		return err
	}
	if err := p.Backward(ctx); err != nil {
		return err
	}
	if !r.inputGrad(l) {
		return nil
	}
	g, err := p.InputGrad()
	if err != nil {
		return err
	}
	if sink != nil {
		return sink.Push(k, c, g)
	}
	_, grads := r.chunkIn(l)
	buf := grads.Buf(len(c.Src), r.outBuf)
	r.outBuf = buf
	if err := backend.ForPurpose(e.Be, chunkfeed.PurposeVertGrad).Download(g, buf); err != nil {
		return err
	}
	return grads.Add(c.Src, buf)
}

// hostView returns the rows of t (a chunk's output or its gradient,
// bound for the host matrix m) on the host: t's own storage where the
// run copies rows on the host (chunkedRun.rows), else downloaded (filed
// under purpose) into a buffer of m's, reused from call to call.
func (r *chunkedRun) hostView(purpose string, m hosttier.Rows, t *tensor.Tensor) (any, error) {
	if r.rows != nil {
		return r.rows.HostData(t)
	}
	buf := m.Buf(t.Shape()[0], r.outBuf)
	r.outBuf = buf
	return buf, backend.ForPurpose(r.e.Be, purpose).Download(t, buf)
}

// loadRows fills t with the rows ids of the host matrix m: straight
// into t's storage where the run copies rows on the host, else gathered
// into a reused buffer and uploaded (filed under purpose).
func (r *chunkedRun) loadRows(purpose string, m hosttier.Rows, ids []int32, t *tensor.Tensor) error {
	if r.rows != nil {
		data, err := r.rows.HostData(t)
		if err != nil {
			return err
		}
		return m.GatherTo(ids, data, nil)
	}
	buf, err := m.Gather(ids, r.outBuf)
	if err != nil {
		return err
	}
	r.outBuf = buf
	return backend.ForPurpose(r.e.Be, purpose).Upload(t, buf)
}

// download copies a tensor to a new host buffer of its dtype.
func download(be backend.Backend, t *tensor.Tensor) (any, error) {
	var v any
	switch t.DType() {
	case tensor.Float32:
		v = make([]float32, t.Numel())
	case tensor.Float64:
		v = make([]float64, t.Numel())
	case tensor.Int32:
		v = make([]int32, t.Numel())
	case tensor.Int64:
		v = make([]int64, t.Numel())
	default:
		return nil, fmt.Errorf("intermediate of dtype %s", t.DType())
	}
	return v, be.Download(t, v)
}

// uploadAll copies host buffers from download back into tensors.
func uploadAll(be backend.Backend, ts []*tensor.Tensor, bufs []any) error {
	if len(ts) != len(bufs) {
		return fmt.Errorf("%d cached intermediates for %d buffers", len(bufs), len(ts))
	}
	for i, t := range ts {
		if err := be.Upload(t, bufs[i]); err != nil {
			return err
		}
	}
	return nil
}

// Predict implements train.Stepper: the layers chunk by chunk in
// inference, the last layer's classes straight into pred.
func (r *chunkedRun) Predict(ctx context.Context, pred []int32) error {
	return r.PredictScores(ctx, pred, nil, nil)
}

// PredictScores implements train.Scorer: Predict, keeping the last
// layer's output rows of the nodes of rows from each chunk's forward
// pass (none are read back without rows).
func (r *chunkedRun) PredictScores(ctx context.Context, pred, rows []int32, logits []float64) error {
	if r.addLog != nil {
		r.addLog.Trim() // prediction adds no gradients: free the ranges kept for them
	}
	if err := r.broadcast(); err != nil {
		return err
	}
	last := len(r.layers) - 1
	for l := range r.layers {
		if err := r.nodeForwardAt(ctx, l, 0, false); err != nil {
			return err
		}
		if l == 0 && r.fixed != nil {
			continue
		}
		if l == last {
			break
		}
		err := r.pass("predict", l, true, nil, func(k int, c *chunkplan.Chunk, feed *chunkfeed.Feed) error {
			_, err := r.forward(ctx, l, k, c, feed, 0, false)
			return err
		})
		if err != nil {
			return err
		}
	}
	at := make(map[int32]int, len(rows)) // node -> its place in rows
	for i, v := range rows {
		at[v] = i
	}
	return r.pass("predict", last, true, nil, func(k int, c *chunkplan.Chunk, feed *chunkfeed.Feed) error {
		b, err := r.bind(last, k, c, true, feed)
		if err != nil {
			return err
		}
		defer b.release(r.e.Be)
		if err := b.prog.Forward(ctx, engine.Mode{}); err != nil {
			return err
		}
		out := make([]int32, len(c.Dst))
		if err := train.ArgmaxInto(r.e.Be, b.prog.Output(), out); err != nil {
			return err
		}
		for j, v := range c.Dst {
			pred[v] = out[j]
		}
		return r.keepScores(b.prog.Output(), c.Dst, at, logits)
	})
}

// keepScores copies the output rows of the chunk's nodes dst that at
// places into logits (at[node] × width); none are read without at.
func (r *chunkedRun) keepScores(out *tensor.Tensor, dst []int32, at map[int32]int, logits []float64) error {
	if len(at) == 0 {
		return nil
	}
	vals, err := engine.PeekFloats(r.e.Be, out) // an observation: uncounted
	if err != nil {
		return err
	}
	w := out.Cols()
	for j, v := range dst {
		if i, ok := at[v]; ok {
			copy(logits[i*w:(i+1)*w], vals[j*w:(j+1)*w])
		}
	}
	return nil
}

func init() { registry.Register(new(Chunked)) }

// CostModel is the registry ID of HongTu's communication and
// intermediates model, which chunked training runs for its own plan.
const CostModel = "costmodel.hongtu"

// OwnCostModels implements train.CostModelUser.
func (*Chunked) OwnCostModels() []string { return []string{CostModel} }
