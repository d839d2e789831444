package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"

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

// defaultGCPercent is the collector's GOGC when the environment sets
// none: collect once the heap has grown by 10% of the live data, not by
// 100% (Go's default). A run's live heap is mostly pointer-free numbers
// (the features, the graph, host tensors), which the collector does not
// scan, so a cycle costs about the same whatever their size (R-MAT 2^20
// mini-batches: 293 cycles, 0% of the CPU time), while at 100 the garbage
// of a step or an evaluation grows to the size of the dataset before it
// is collected: peak RSS 7.9 GB at 100, 4.7-5.2 GB at 10 (issue 35,
// docs/performance.md).
const defaultGCPercent = 10

// start applies the collector's settings and starts the CPU profile. The
// returned stop ends the CPU profile and writes the heap profile; inputs
// are the run's input files, which no profile may replace.
func (r *runtimeFlags) start(maxMem memFlag, inputs ...string) (stop func() error, err error) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
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
