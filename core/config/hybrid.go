package config

// Hybrid configures train.mode = "hybrid" (HyScale-GNN, docs/hyscale.md):
// each step's mini-batch split between CPU trainers and the devices, with
// dynamic resource management and a performance model.
type Hybrid struct {
	CPUTrainers int     `toml:"cpu_trainers" range:"[0,64]" doc:"CPU trainers (replicas on the host's cpu backend) besides the devices"`
	CPUShare    float64 `toml:"cpu_share" range:"[0,1]" doc:"share of each step's batch the CPU trainers get at the start (the rest is split evenly over the devices); 1 with no devices"`
	DRM         string  `toml:"drm" enum:"off,measured,predicted" doc:"dynamic resource management (HyScale Alg. 1) between steps: off = the split and threads stay; measured = from wall-clock stage times; predicted = from costmodel.hyscale's stage times (deterministic for a fixed seed)"`
	DRMStep     float64 `toml:"drm_step" range:"(0,0.5]" doc:"how much balance work moves the CPU share per adjustment"`
	Threads     int     `toml:"threads" range:"[0,4096]" doc:"CPU thread budget of sampling, feature loading and CPU training together (0 = all cores); balance thread moves threads between them; the host stages (sampling, loading, the CPU trainers' bind) share what the CPU trainers leave and take turns when it is short"`
	SampleOn    string  `toml:"sample_on" enum:"cpu,device" doc:"where each device trainer's part is sampled: cpu = the CPU sampler reads the host's graph; device = the device's own sampler reads the topology from the device's memory (the memory store, core/store, holds the whole topology on every device; its reads are counted and timed by the device's roofline)"`
	Prefetch    bool    `toml:"prefetch" doc:"two-stage feature prefetch: host gather into a staging buffer, then host->device, both running ahead of training"`
	// The machine description of costmodel.hyscale (see docs/hyscale.md
	// for the micro-benchmark that measures them).
	CPUGFLOPS   float64 `toml:"cpu_gflops" range:"(0,)" doc:"performance model: the CPU trainer's dense throughput per thread in GFLOP/s (N x freq of Eq. 12)"`
	CPUGBps     float64 `toml:"cpu_gbps" range:"(0,)" doc:"performance model: effective CPU memory bandwidth per thread in GB/s for gathers and aggregation (BW_DDR of Eq. 7, 11)"`
	SampleMEPS  float64 `toml:"sample_meps" range:"(0,)" doc:"performance model: sampled edges per second per thread, in millions (the measured sampling profile that stands for T_samp)"`
	AggGBps     float64 `toml:"agg_gbps" range:"(0,)" doc:"performance model: the CPU trainer's sparse aggregation (SpMM) per thread in GB/s of gathered source rows (BW of Eq. 11 on the CPU)"`
	DropoutMEPS float64 `toml:"dropout_meps" range:"(0,)" doc:"performance model: dropout elements per second per thread on the CPU, in millions (mask drawn and applied, output written)"`
	BindMEPS    float64 `toml:"bind_meps" range:"(0,)" doc:"performance model: block edges a CPU trainer binds per second per thread, in millions (adjacency, edge weights and program before training)"`
	Calibrate   bool    `toml:"calibrate" doc:"measure the CPU's machine description (cpu_gflops, cpu_gbps, agg_gbps, sample_meps, dropout_meps, bind_meps) by short probes in this process before every epoch, replacing the keys' values (predicted DRM then depends on the machine's speed); with prefetch the stage probes run beside a CPU trainer's training step on a probe batch, whose memory the calibration holds while they run"`
	PaperModel  bool    `toml:"paper_model" doc:"performance model: Eq. 10-12 as printed (the backward is the first layer's update plus the later layers' forward work; no dropout and no CPU bind term)"`
}

// DefaultHybrid is the [hybrid] section's default; a config whose section
// differs from it sets [hybrid]. The machine description is the median of
// three runs of BenchmarkHyscaleCalibrate (plugins/strategy/hybrid) on strata's
// development machine, a shared 2-core AMD EPYC VM (docs/hyscale.md).
func DefaultHybrid() Hybrid {
	return Hybrid{CPUTrainers: 1, CPUShare: 0.25, DRM: "off", DRMStep: 0.05, SampleOn: "cpu", Prefetch: true,
		CPUGFLOPS: 54, CPUGBps: 0.54, SampleMEPS: 17.8, AggGBps: 5.5, DropoutMEPS: 180, BindMEPS: 1}
}

// IsDefault reports whether the section is at its default (then it is
// left out of config_sha256, which it did not exist for before).
func (h Hybrid) IsDefault() bool { return h == DefaultHybrid() }
