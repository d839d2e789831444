// Package hybrid is strategy.hybrid, HyScale-GNN: each mini-batch split
// between CPU trainers and the devices, two-stage feature prefetch,
// dynamic resource management.
package hybrid

import (
	"context"
	"fmt"
	"strings"

	"strata/core/backend"
	"strata/core/config"
	"strata/core/engine"
	"strata/core/registry"
	"strata/core/sampling"
	"strata/core/store"
	"strata/core/tensor"
	"strata/core/train"
	"strata/plugins/strategy/internal/options"
	"strata/plugins/strategy/internal/steprun"
)

// Hybrid is strategy.hybrid: HyScale-GNN (Lin et al., IPDPS 2023,
// docs/hyscale.md). Each synchronous step's mini-batch is split between
// CPU trainers (replicas on the host's cpu backend, in this process) and
// the device trainers (one per device of the run's backend); their
// gradients are all-reduced through the host in a fixed order and every
// replica takes the same step. The stages (sampler, feature loader,
// data transfer, trainers, synchronizer, runtime) run as a pipeline of
// bounded queues, each timing its own work; the runtime's dynamic
// resource management (Alg. 1) moves work and threads between steps, from
// measured stage times or from costmodel.hyscale's predictions. Its
// options are the [hybrid] section.
type Hybrid struct {
	HybridOptions
}

// HybridOptions are the [hybrid] section (HyScale-GNN, docs/hyscale.md):
// each step's mini-batch split between CPU trainers and the devices, with
// dynamic resource management and a performance model.
type HybridOptions struct {
	options.Size
	options.Depth
	CPUTrainers int      `toml:"cpu_trainers" range:"[0,64]" doc:"CPU trainers (replicas on the host's cpu backend) besides the devices"`
	CPUShare    float64  `toml:"cpu_share" range:"[0,1]" word:"model:-1:the share costmodel.hyscale predicts fastest for the first step (HyScale's mapping at compile time, §IV-A)" doc:"share of each step's batch the CPU trainers get at the start (the rest is split evenly over the devices); 1 with no devices"`
	Batching    Batching `toml:"batching" enum:"split,per-trainer" hash:"omitempty" doc:"split = each step's mini-batch of train.batch_size nodes is split between the trainers by cpu_share; per-trainer = every device trains a mini-batch of train.batch_size nodes each step and the CPU trainers cpu_share of the step's nodes besides, at most train.batch_size each (HyScale §II-B, Eq. 5: a CPU trainer adds work instead of taking the devices'); an epoch ends when the training nodes are consumed"`
	DRM         string   `toml:"drm" enum:"off,measured,predicted" doc:"dynamic resource management (HyScale Alg. 1) between steps: off = the split and threads stay; measured = from wall-clock stage times; predicted = from costmodel.hyscale's stage times (deterministic for a fixed seed)"`
	DRMStep     float64  `toml:"drm_step" range:"(0,0.5]" doc:"how much balance work moves the CPU share per adjustment"`
	Threads     int      `toml:"threads" range:"[0,4096]" doc:"CPU thread budget of sampling, feature loading and CPU training together (0 = all cores); balance thread moves threads between them; the host stages (sampling, loading, the CPU trainers' bind) share what the CPU trainers leave and take turns when it is short"`
	SampleOn    string   `toml:"sample_on" enum:"cpu,device" doc:"where each device trainer's part is sampled: cpu = the CPU sampler reads the host's graph; device = the device's own sampler reads the topology from the device's memory (the memory store, core/store, holds the whole topology on every device; its reads are counted and timed by the device's roofline)"`
	SampleCPU   float64  `toml:"sample_cpu_share" range:"[0,1]" hash:"omitempty" doc:"with sample_on = \"device\": the share of the devices' sampling the CPU sampler does at the start, reading that share of the nodes' rows (chosen by a hash of the node id) from the host's graph instead of the device's copy; the blocks are the same, the time moves (DRM's balance work between T_SC and T_SA moves it, HyScale Alg. 1)"`
	Prefetch    bool     `toml:"prefetch" doc:"two-stage feature prefetch: host gather into a staging buffer, then host->device, both running ahead of training"`
	// The machine description of costmodel.hyscale (see docs/hyscale.md
	// for the micro-benchmark that measures them).
	CPUGFLOPS   float64  `toml:"cpu_gflops" range:"(0,)" doc:"performance model: the CPU trainer's dense throughput per thread in GFLOP/s (N x freq of Eq. 12)"`
	CPUGBps     float64  `toml:"cpu_gbps" range:"(0,)" doc:"performance model: effective CPU memory bandwidth per thread in GB/s for gathers and aggregation (BW_DDR of Eq. 7, 11)"`
	SampleMEPS  float64  `toml:"sample_meps" range:"(0,)" doc:"performance model: sampled edges per second per thread, in millions (the measured sampling profile that stands for T_samp)"`
	AggGBps     float64  `toml:"agg_gbps" range:"(0,)" doc:"performance model: the CPU trainer's sparse aggregation (SpMM) per thread in GB/s of gathered source rows (BW of Eq. 11 on the CPU)"`
	DropoutMEPS float64  `toml:"dropout_meps" range:"(0,)" doc:"performance model: dropout elements per second per thread on the CPU, in millions (mask drawn and applied, output written)"`
	BindMEPS    float64  `toml:"bind_meps" range:"(0,)" doc:"performance model: block edges a CPU trainer binds per second per thread, in millions (adjacency, edge weights and program before training)"`
	Calibrate   bool     `toml:"calibrate" doc:"measure the CPU's machine description (cpu_gflops, cpu_gbps, agg_gbps, sample_meps, dropout_meps, bind_meps) by short probes in this process before every epoch, replacing the keys' values (predicted DRM then depends on the machine's speed); with prefetch the stage probes run beside a CPU trainer's training step on a probe batch, whose memory the calibration holds while they run"`
	Host        HostSpec `toml:"host" hash:"omitempty" doc:"the host CPU a simulated run prices (HyScale's: cores = 128, mem_gbps = 205): the thread budget DRM splits and the model prices, and the memory bandwidth the loader's gather and the CPU aggregation share; left out = this machine"`
	PaperModel  bool     `toml:"paper_model" doc:"performance model: Eq. 10-12 as printed (the backward is the first layer's update plus the later layers' forward work; no dropout and no CPU bind term)"`
}

// Batching is how a step's nodes are given to the trainers
// (HybridOptions.Batching).
type Batching string

// Values of Batching.
const (
	BatchSplit      Batching = "split"
	BatchPerTrainer Batching = "per-trainer"
)

// IsDefault reports split batching, which the config hash leaves out
// (configs from before the option keep their hash).
func (b Batching) IsDefault() bool { return b == "" || b == BatchSplit }

// DefaultHybrid is the [hybrid] section's default (left at it, the
// section does not enter config_sha256). The machine description is the median of
// three runs of BenchmarkHyscaleCalibrate (plugins/strategy/hybrid) on strata's
// development machine, a shared 2-core AMD EPYC VM (docs/hyscale.md).
func DefaultHybrid() HybridOptions {
	return HybridOptions{Size: options.DefaultSize(), Depth: options.DefaultDepth(), CPUTrainers: 1, CPUShare: 0.25, Batching: BatchSplit, DRM: "off", DRMStep: 0.05, SampleOn: "cpu", Prefetch: true,
		CPUGFLOPS: 54, CPUGBps: 0.54, SampleMEPS: 17.8, AggGBps: 5.5, DropoutMEPS: 180, BindMEPS: 1}
}

var (
	_ train.Strategy      = (*Hybrid)(nil)
	_ train.ConfigChecker = (*Hybrid)(nil)
	_ train.Exampler      = (*Hybrid)(nil)
)

// StrataModule implements registry.Module.
func (*Hybrid) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "strategy.hybrid", New: func() registry.Module { return &Hybrid{DefaultHybrid()} },
		Doc: "HyScale-GNN: each mini-batch split between CPU trainers and devices, two-stage feature prefetch, dynamic resource management ([hybrid])"}
}

// Uses implements train.Strategy.
func (*Hybrid) Uses() train.Uses {
	return train.Uses{Sampler: true, Blocks: true, Devices: true, Float64: true, Checkpoints: true}
}

// ExampleConfig implements train.Exampler: a two-layer uniform sampler,
// everything on the CPU trainer (the cpu backend has no devices).
func (*Hybrid) ExampleConfig() []string {
	return []string{`sampler.name="uniform"`, "sampler.fanouts=[5,5]", "train.batch_size=64", "hybrid.cpu_share=1"}
}

// CheckConfig implements train.ConfigChecker: what can be told without
// the data or the backend.
func (s *Hybrid) CheckConfig(cfg *config.Config) error {
	h := s.HybridOptions
	if err := steprun.CheckSampler(cfg); err != nil {
		return err
	}
	if h.CPUShare == ShareModel {
		if err := checkModelShare(cfg, h); err != nil {
			return err
		}
	}
	if h.CPUTrainers == 0 && h.DRM != "off" {
		return cfg.KeyError(fmt.Sprintf("hybrid.cpu_trainers = 0 with hybrid.drm = %q: balance work moves work between the CPU trainers and the devices, and there is no CPU trainer; set hybrid.cpu_trainers >= 1 or hybrid.drm = \"off\"", h.DRM), "hybrid", "cpu_trainers")
	}
	if h.CPUTrainers == 0 && h.CPUShare > 0 {
		return cfg.KeyError(fmt.Sprintf("hybrid.cpu_share = %g with hybrid.cpu_trainers = 0: no CPU trainer can take that share; set hybrid.cpu_share = 0 or add CPU trainers", h.CPUShare), "hybrid", "cpu_share")
	}
	if err := checkHost(cfg, h); err != nil {
		return err
	}
	if cfg.Train.Backend == "cpu" {
		// The cpu backend has no devices: only the CPU trainers train.
		if h.CPUShare != 1 || h.DRM != "off" {
			return cfg.KeyError(fmt.Sprintf("train.backend = \"cpu\" has no devices, so hybrid training has nothing to split the batch with (hybrid.cpu_share = %g, hybrid.drm = %q); set train.backend = \"sim\" (with [devices]) or \"cuda\", or hybrid.cpu_share = 1 and hybrid.drm = \"off\" to train on the CPU trainers alone", h.CPUShare, h.DRM), "train", "backend")
		}
		if h.CPUTrainers == 0 {
			return cfg.KeyError("hybrid.cpu_trainers = 0 on train.backend = \"cpu\" (no devices): nothing would train; set hybrid.cpu_trainers >= 1", "hybrid", "cpu_trainers")
		}
	}
	if h.Batching == BatchPerTrainer {
		if cfg.Train.Backend == "cpu" {
			return cfg.KeyError("hybrid.batching = \"per-trainer\" gives every device a mini-batch, and train.backend = \"cpu\" has none; set train.backend = \"sim\" (with [devices]) or \"cuda\", or hybrid.batching = \"split\"", "hybrid", "batching")
		}
		if h.CPUShare >= 1 {
			return cfg.KeyError(fmt.Sprintf("hybrid.batching = \"per-trainer\" with hybrid.cpu_share = %g: the devices train a mini-batch each every step, so the CPU trainers' share of a step is below 1; set hybrid.cpu_share below 1", h.CPUShare), "hybrid", "cpu_share")
		}
	}
	if h.SampleCPU > 0 && h.SampleOn != "device" {
		return cfg.KeyError(fmt.Sprintf("hybrid.sample_cpu_share = %g: the CPU sampler already samples every part with hybrid.sample_on = %q; set hybrid.sample_on = \"device\" or leave sample_cpu_share out", h.SampleCPU, h.SampleOn), "hybrid", "sample_cpu_share")
	}
	if h.SampleOn == "device" {
		if cfg.Train.Backend == "cpu" {
			return cfg.KeyError("hybrid.sample_on = \"device\" samples on the devices, and train.backend = \"cpu\" has none; set train.backend = \"sim\" (with [devices]) or hybrid.sample_on = \"cpu\"", "hybrid", "sample_on")
		}
		if _, ok := sampling.AsGraphSampler(cfg.Sampler.Module); !ok {
			return cfg.KeyError(fmt.Sprintf("hybrid.sample_on = \"device\": sampler %q does not read the graph through the store's access API (sampling.GraphSampler); use full, uniform, khop or randomwalk, or hybrid.sample_on = \"cpu\"", cfg.Sampler.Name), "hybrid", "sample_on")
		}
	}
	return nil
}

// NewStepper implements train.Strategy.
func (s *Hybrid) NewStepper(ctx context.Context, env *train.Env) (train.Stepper, error) {
	return newHybrid(ctx, env.Config, s, steprun.EnvOf(env))
}

func init() { registry.Register(new(Hybrid)) }

// HybridFigures are strategy.hybrid's figures in the result line,
// "hybrid": {...}: Eq. 5's throughput of the last epoch (million traversed
// edges per second) measured by the wall clock (measured_mteps) and
// predicted by costmodel.hyscale (predicted_mteps), DRM's state
// (cpu_share, the thread split, adjustments) and the stage times measured
// (<stage>_med_s) and predicted (<stage>_med_s_pred); docs/hyscale.md.
type HybridFigures map[string]float64

// Figures implements train.FigureDeclarer.
func (*Hybrid) Figures() any { return HybridFigures{} }

// CheckRules implements train.CheckRuler: predictions, DRM's decisions
// and counts are compared by the experiment check; the stage times it
// measures and the thread split of this machine's cores are not. (A run
// with hybrid.drm = "measured" decides from measured times: its
// experiment excludes cpu_share and what follows from it,
// [[check.exclude]].)
func (HybridFigures) CheckRules() []train.CheckRule {
	rules := []train.CheckRule{}
	for _, p := range []string{"*_pred", "*_pred_bracketed", "epoch_pred_s", "epoch_pred_bracketed_s", "predicted_mteps",
		"cpu_share", "sample_cpu_share", "adjustments", "edges", "steps", "load_fresh_*", "machine_*"} {
		rules = append(rules, train.CheckRule{Pattern: p})
	}
	return append(rules,
		train.CheckRule{Pattern: "*threads*", Why: train.WhyMachine},
		train.CheckRule{Pattern: "*", Why: train.WhyWallClock + " (hybrid's measured stage times)"})
}

// hybridTrainer is one replica: a CPU trainer (on its own cpu backend,
// threads set per step) or a device trainer (a device of the run's
// backend).
type hybridTrainer struct {
	name string // "cpu0", "device1"
	cpu  bool
	r    *steprun.Runner
	opt  train.Optimizer // nil for the loop's replica (trainers[0])
}

// runner returns the trainer's runner for one step: a CPU trainer's
// backend view runs on threads threads.
func (t *hybridTrainer) runner(threads int) *steprun.Runner {
	if !t.cpu {
		return t.r
	}
	th, ok := t.r.Env.Be.(backend.Threaded)
	if !ok {
		return t.r
	}
	rr := *t.r
	// A recycling view: each step's program reuses the memory of the
	// programs released before it (backend.Recycler), so that a bind
	// costs the same whatever the Go heap's state, in the pipeline and
	// in the calibration's bind probe alike.
	rr.Env.Be = backend.Recycling(th.WithThreads(threads))
	return &rr
}

// reservedThreads are the threads the CPU trainers own under st: each
// trainer's share of the training threads (cpuThreads; more than
// st.train where there are more trainers than threads), none without
// CPU trainers.
func (s *hybridStepper) reservedThreads(st drmState) int {
	return s.h.CPUTrainers * s.cpuThreads(st)
}

// hybridStepper is strategy.hybrid's stepper.
type hybridStepper struct {
	h        HybridOptions
	e        steprun.Env
	trainers []*hybridTrainer // the loop's replica first, then the other devices, then the CPU trainers
	nDev     int
	sampler  sampling.Sampler
	batch    int
	prefetch int
	perf     *hyscalePerf
	// With hybrid.sample_on = "device": the memory store holding the
	// topology on every device, and each device trainer's view of it
	// (indexed by trainer; nil for the CPU trainers).
	store  *store.Store
	topo   []*store.TopologyView
	state  drmState // the latest decision (the next epoch starts from it)
	budget int      // the CPU thread budget DRM splits and the model prices (hybrid.threads, or every core of the described host or this machine)
	// execBudget is the thread budget the stages run on: budget, or this
	// machine's share of a described host's (HostSpec).
	execBudget int
	host       *hostThreads
	staging    stagingPool // the loader's staging buffers, recycled between steps
	stats      hybridEpoch
	total      hybridTotals
	// With cpu_share = "model": whether the mapping ran (before the first
	// epoch) and the share it chose.
	mapped     bool
	modelShare float64
	mapSeed    uint64 // train.seed: the shuffle whose first step the mapping samples
}

func newHybrid(ctx context.Context, cfg *config.Config, mod *Hybrid, e steprun.Env) (*hybridStepper, error) {
	if err := mod.CheckConfig(cfg); err != nil {
		return nil, err
	}
	h := mod.HybridOptions
	var devices []tensor.Tier
	if md, ok := e.Be.(backend.MultiDevice); ok {
		devices = md.DeviceTiers()
	} else if e.Tier != tensor.Host {
		devices = []tensor.Tier{e.Tier}
	}
	if len(devices) == 0 && (h.CPUShare != 1 || h.DRM != "off" || h.CPUTrainers == 0) {
		return nil, cfg.KeyError(fmt.Sprintf("train.backend = %q has no devices; hybrid training without devices needs hybrid.cpu_share = 1, hybrid.drm = \"off\" and hybrid.cpu_trainers >= 1", cfg.Train.Backend), "train", "backend")
	}
	s := &hybridStepper{h: h, e: e, nDev: len(devices), sampler: cfg.Sampler.Module.(sampling.Sampler),
		batch: h.BatchSize, prefetch: h.PrefetchDepth, mapSeed: uint64(cfg.Train.Seed)}
	s.budget, s.execBudget = budgets(h)
	s.state = initialState(max(h.CPUShare, 0), s.budget) // "model" is chosen before the first epoch
	s.state.sampleCPU = h.SampleCPU
	s.host = newHostThreads(s.execBudget, s.reservedThreads(s.exec(s.state)))
	add := func(name string, cpu bool, re steprun.Env) error {
		r, err := steprun.NewRunner(re, 1) // same seed: identical replicas
		if err != nil {
			return err
		}
		t := &hybridTrainer{name: name, cpu: cpu, r: r}
		if len(s.trainers) > 0 {
			if t.opt, err = re.NewOptimizer(re.Be); err != nil {
				r.Release()
				return err
			}
		}
		s.trainers = append(s.trainers, t)
		return nil
	}
	for i, tier := range devices {
		re := e
		re.Tier = tier
		if err := add(fmt.Sprintf("device%d", i), false, re); err != nil {
			s.Release()
			return nil, err
		}
	}
	for i := range h.CPUTrainers {
		re := e
		re.Tier = tensor.Host
		if len(devices) > 0 || i > 0 {
			// Each CPU trainer has its own cpu backend (the first one
			// is the run's own without devices: the loop steps it).
			be, err := newCPUBackend(ctx, cfg, s.exec(s.state).train)
			if err != nil {
				s.Release()
				return nil, err
			}
			re.Be = be
		}
		if err := add(fmt.Sprintf("cpu%d", i), true, re); err != nil {
			s.Release()
			return nil, err
		}
	}
	inFlight := 1 // batches holding staging buffers at once
	if h.Prefetch {
		inFlight = 3
	}
	s.staging.keep = inFlight * len(s.trainers)
	var err error
	if s.perf, err = newHyscalePerf(ctx, cfg, h, e); err != nil {
		s.Release()
		return nil, err
	}
	if h.SampleOn == "device" {
		if err := s.placeTopology(cfg, devices); err != nil {
			s.Release()
			return nil, err
		}
	}
	return s, nil
}

// placeTopology puts the whole topology on every device (the memory
// store, replicated: each device's sampler reads only its own memory)
// and opens each device trainer's view of it.
func (s *hybridStepper) placeTopology(cfg *config.Config, devices []tensor.Tier) error {
	if len(devices) == 0 {
		return cfg.KeyError(fmt.Sprintf("hybrid.sample_on = \"device\": train.backend = %q has no devices to sample on; set train.backend = \"sim\" or hybrid.sample_on = \"cpu\"", cfg.Train.Backend), "hybrid", "sample_on")
	}
	if !s.simulated() {
		return cfg.KeyError(fmt.Sprintf("hybrid.sample_on = \"device\" needs simulated devices (train.backend = \"sim\"): strata has no sampling kernel for a %q device; set hybrid.sample_on = \"cpu\"", cfg.Train.Backend), "hybrid", "sample_on")
	}
	g := s.e.Adjs.Adj
	need := 8*int64(g.NumRows+1) + 4*g.NNZ()
	st, err := store.New(backend.ForPurpose(s.e.Be, backend.PurposeTopology), s.e.Feats, s.e.Dim, steprun.Iota32(g.NumRows), store.Options{
		Placement: store.Replicated, Devices: devices, Capacity: []int64{need}, Prefix: true,
		Topology: true, Graph: g, GraphRatio: 1, LimitFeatures: true, FeatureRatio: 0})
	if err != nil {
		return cfg.KeyError(fmt.Sprintf("hybrid.sample_on = \"device\": placing the topology (%d bytes) on every device: %v; set hybrid.sample_on = \"cpu\"", need, err), "hybrid", "sample_on")
	}
	s.store = st
	s.topo = make([]*store.TopologyView, len(s.trainers))
	for k := range s.nDev {
		if s.topo[k], err = st.Topology(s.trainers[k].r.Env.Tier); err != nil {
			return err
		}
	}
	return nil
}

// newCPUBackend opens a cpu backend (backend.cpu) for a CPU trainer.
func newCPUBackend(ctx context.Context, cfg *config.Config, threads int) (backend.Backend, error) {
	m, err := registry.New[train.BackendModule]("backend.cpu")
	if err != nil {
		return nil, fmt.Errorf("hybrid: CPU trainers: %w", err)
	}
	return m.NewBackend(ctx, cfg, threads)
}

// Release implements train.Stepper.
func (s *hybridStepper) Release() {
	s.staging.drop()
	if s.perf != nil {
		s.perf.close()
	}
	if s.store != nil {
		s.store.Close()
	}
	for _, t := range s.trainers {
		t.r.Release()
	}
}

// Params implements train.Stepper: the loop's replica's.
func (s *hybridStepper) Params() *engine.Params { return s.trainers[0].r.PS }

// Predict implements train.Stepper, on the loop's replica.
func (s *hybridStepper) Predict(ctx context.Context, pred []int32) error {
	s.staging.drop() // evaluation's buffers are larger than training's: do not hold these beside them
	return s.trainers[0].r.Predict(ctx, pred)
}

// Announce implements train.Announcer.
func (s *hybridStepper) Announce() string {
	names := make([]string, len(s.trainers))
	for i, t := range s.trainers {
		names[i] = t.name
	}
	host := ""
	if hs := s.h.Host; hs.described() {
		host = fmt.Sprintf("; described host: %d threads priced (%d run here), memory %g GB/s (0 = unbounded)", s.budget, s.execBudget, hs.MemGBps)
	}
	if s.topo != nil {
		host += fmt.Sprintf("; the CPU sampler's share of the devices' sampling %.3g", s.state.sampleCPU)
	}
	return fmt.Sprintf("hybrid: trainers %s; CPU share %.3g; threads sample/load/train %d/%d/%d; drm %s; prefetch %v%s",
		strings.Join(names, ","), s.state.share, s.state.sample, s.state.load, s.state.train, s.h.DRM, s.h.Prefetch, host)
}

var (
	_ train.Stepper        = (*hybridStepper)(nil)
	_ train.Announcer      = (*hybridStepper)(nil)
	_ train.EpochReporter  = (*hybridStepper)(nil)
	_ train.ResultReporter = (*hybridStepper)(nil)
	_ train.Columner       = (*hybridStepper)(nil)
	_ train.Pipelined      = (*hybridStepper)(nil)
)
