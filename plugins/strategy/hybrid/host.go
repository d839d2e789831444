package hybrid

import (
	"fmt"
	"math"
	"runtime"

	"strata/core/config"
)

// HostSpec describes the host CPU a simulated run prices ([hybrid.host]):
// HyScale's dual-socket EPYC (128 cores, 205 GB/s), say, on a machine of
// two cores. Left out, the host is this machine.
//
// With cores set, the thread budget that the performance model prices
// and dynamic resource management splits is the described host's
// (hybrid.threads, or every described core), for the whole run; the
// stages themselves run on this machine's threads, each stage getting
// its share of the described budget scaled to this machine's (at least
// one). With mem_gbps set, the host's memory bandwidth bounds the
// stages that stream host memory: the feature loader's gather (Eq. 7's
// BW_DDR: the loader's threads together move at most mem_gbps) and the
// CPU trainers' aggregation (Eq. 11 on the CPU).
type HostSpec struct {
	Cores   int     `toml:"cores" range:"[1,1048576]" doc:"the described host's CPU cores: the thread budget the performance model prices and DRM splits between sampling, loading and CPU training (the stages run on this machine's threads, scaled); left out = this machine's"`
	MemGBps float64 `toml:"mem_gbps" range:"(0,)" doc:"the described host's memory bandwidth in GB/s: the feature loader's threads together, and the CPU trainers' aggregation, move at most this (HyScale Eq. 7's BW_DDR); left out = no bound beyond the per-thread rates"`
}

// described reports whether the run prices a described host.
func (h HostSpec) described() bool { return h.Cores > 0 || h.MemGBps > 0 }

// checkHost refuses a host description the run cannot honour: one on a
// backend whose times are not simulated, or beside settings that read
// this machine's clock.
func checkHost(cfg *config.Config, h HybridOptions) error {
	if !h.Host.described() {
		if cores := runtime.NumCPU(); h.Threads > cores {
			return cfg.KeyError(fmt.Sprintf("hybrid.threads = %d is above this machine's %d cores: the budget of sampling, loading and CPU training threads must fit the cores; set hybrid.threads <= %d (0 = all cores), or describe a larger host in [hybrid.host] (simulated devices)", h.Threads, cores, cores), "hybrid", "threads")
		}
		return nil
	}
	switch {
	case cfg.Train.Backend != "sim":
		return cfg.KeyError(fmt.Sprintf("[hybrid.host] describes a host for simulated runs, and train.backend = %q runs on this machine; set train.backend = \"sim\" (with [devices]) or remove [hybrid.host]", cfg.Train.Backend), "hybrid", "host")
	case h.DRM == "measured":
		return cfg.KeyError("hybrid.drm = \"measured\" decides from this machine's wall clock, which [hybrid.host] does not describe; set hybrid.drm = \"predicted\" or remove [hybrid.host]", "hybrid", "drm")
	case h.Calibrate:
		return cfg.KeyError("hybrid.calibrate = true measures this machine's rates, and [hybrid.host] describes another host; give the host's per-thread rates (cpu_gflops, cpu_gbps, ...) and set hybrid.calibrate = false, or remove [hybrid.host]", "hybrid", "calibrate")
	case h.Host.Cores > 0 && h.Threads > h.Host.Cores:
		return cfg.KeyError(fmt.Sprintf("hybrid.threads = %d is above the described host's %d cores (hybrid.host.cores); set hybrid.threads <= %d (0 = all of them)", h.Threads, h.Host.Cores, h.Host.Cores), "hybrid", "threads")
	}
	return nil
}

// budgets returns the thread budget the model prices and DRM splits (the
// described host's, or this machine's) and the one the stages run on
// (this machine's): hybrid.threads, or every core, of each.
func budgets(h HybridOptions) (model, exec int) {
	exec = runtime.GOMAXPROCS(0)
	if h.Host.Cores == 0 {
		if h.Threads > 0 {
			exec = h.Threads
		}
		return exec, exec
	}
	model = h.Host.Cores
	if h.Threads > 0 {
		model = h.Threads
	}
	return model, min(exec, model)
}

// exec returns the threads the stages run with under st: st's own
// without a described host, otherwise each task's share of the described
// budget scaled to this machine's, at least one.
func (s *hybridStepper) exec(st drmState) drmState {
	if s.execBudget == s.budget {
		return st
	}
	scale := func(n int) int {
		return max(1, int(math.Round(float64(n)*float64(s.execBudget)/float64(s.budget))))
	}
	st.sample, st.load, st.train = scale(st.sample), scale(st.load), scale(st.train)
	return st
}

// memCapped bounds a streaming rate of threads threads, rate GB/s each,
// by the described host's memory bandwidth shared by n streams, and
// returns it per thread.
func (p *hyscalePerf) memCapped(rate, threads, n float64) float64 {
	if p.h.Host.MemGBps <= 0 || threads <= 0 {
		return rate
	}
	return min(rate, p.h.Host.MemGBps/max(n, 1)/threads)
}
