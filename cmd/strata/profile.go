package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"time"

	"strata/core/graph"
	"strata/core/safefile"
)

// runtimeFlags are the process settings of the long-running commands
// (train, predict): Go's soft memory limit and the pprof profiles.
type runtimeFlags struct {
	memLimit memFlag
	cpu, mem string
}

func (r *runtimeFlags) register(fs *flag.FlagSet) {
	fs.Var(&r.memLimit, "memory-limit", "soft limit of the Go heap (e.g. 10G): the garbage collector works harder as the heap nears it whatever GOGC allows (default GOMEMLIMIT when set, else the --max-memory budget)")
	fs.StringVar(&r.cpu, "cpuprofile", "", "write a CPU profile of the run to `FILE` (go tool pprof)")
	fs.StringVar(&r.mem, "memprofile", "", "write a heap profile (live and allocated bytes) at the end of the run to `FILE`")
}

// The collector's growth target when the environment sets no GOGC: the
// garbage a run may leave between collections is the larger of
// gcGarbageShare of the live heap and gcGarbageFloor. Go's default (100:
// garbage up to the live heap) lets a large run's step and evaluation
// garbage grow to the dataset's size (R-MAT 2^20 mini-batches: peak RSS
// 7.9 GB at 100, 4.7-5.2 GB at 10, docs/performance.md); a fixed 10 makes
// small runs, whose heaps hold the WASM runtime's pointers, collect ten
// times as often (the cmd/strata tests: 66% more CPU). The governor sets
// GOGC = 100 × max(share × live, floor) / live, within [10, 100], from the
// live heap it reads every gcGovernEvery.
const (
	gcGarbageShare = 0.10
	gcGarbageFloor = 256 << 20
	gcGovernEvery  = 500 * time.Millisecond
)

// gcPercentFor is the GOGC that allows the garbage above for a live heap.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return 100
	}
	allowed := max(gcGarbageShare*float64(live), gcGarbageFloor)
	return int(min(100, max(10, 100*allowed/float64(live))))
}

// governGC adjusts GOGC to the live heap until stop is called, which
// restores the previous setting.
func governGC() (stop func()) {
	prev := debug.SetGCPercent(100)
	done := make(chan struct{})
	finished := make(chan struct{})
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	go func() {
		defer close(finished)
		tick := time.NewTicker(gcGovernEvery)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			if sample[0].Value.Kind() == metrics.KindUint64 {
				debug.SetGCPercent(gcPercentFor(sample[0].Value.Uint64()))
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		debug.SetGCPercent(prev)
	}
}

// start applies the collector's settings and starts the CPU profile. The
// returned stop ends the CPU profile and writes the heap profile; inputs
// are the run's input files, which no profile may replace.
func (r *runtimeFlags) start(maxMem memFlag, inputs ...string) (stop func() error, err error) {
	stopGC := func() {}
	if os.Getenv("GOGC") == "" {
		stopGC = governGC()
	}
	defer func() {
		if err != nil {
			stopGC()
		}
	}()
	switch {
	case r.memLimit > 0:
		debug.SetMemoryLimit(int64(r.memLimit))
	case os.Getenv("GOMEMLIMIT") != "":
		// the runtime has applied it
	case maxMem > 0:
		debug.SetMemoryLimit(int64(maxMem))
	default:
		debug.SetMemoryLimit(graph.DefaultMaxMemory())
	}
	for _, p := range []struct{ flag, path string }{{"--cpuprofile", r.cpu}, {"--memprofile", r.mem}} {
		if p.path == "" {
			continue
		}
		if err := safefile.CheckOutput(p.path, inputs...); err != nil {
			return nil, usagef("%s: %v", p.flag, err)
		}
	}
	if r.cpu != "" && r.cpu == r.mem {
		return nil, usagef("--cpuprofile and --memprofile name the same file %s; give two paths", r.cpu)
	}
	var cpuOut *safefile.File
	if r.cpu != "" {
		if cpuOut, err = safefile.Create(r.cpu, inputs...); err != nil {
			return nil, usagef("--cpuprofile: %v", err)
		}
		if err := pprof.StartCPUProfile(cpuOut); err != nil {
			cpuOut.Abort()
			return nil, fmt.Errorf("--cpuprofile %s: %w", r.cpu, err)
		}
	}
	return func() error {
		defer stopGC()
		var errs []error
		if cpuOut != nil {
			pprof.StopCPUProfile()
			errs = append(errs, cpuOut.Commit())
		}
		if r.mem != "" {
			runtime.GC() // the live heap as of the end of the run
			errs = append(errs, safefile.Write(r.mem, func(w io.Writer) error { return pprof.Lookup("heap").WriteTo(w, 0) }, inputs...))
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("writing the profile: %w", err)
		}
		return nil
	}, nil
}

// profileInputs lists the files a run reads that a profile must not
// replace: the config file and a dataset path given as a file.
func profileInputs(configPath, dataset string) []string {
	ds, _, _ := strings.Cut(dataset, "@")
	return []string{configPath, ds}
}
