//go:build unix

package store_test

import (
	"runtime"
	"syscall"
	"testing"

	"strata/core/graph/synth"
	"strata/core/store"
)

// BenchmarkReorder relabels an R-MAT graph (2^18 nodes, 16 edges each,
// 16 features) by a degree ranking with Alg. 2 and reports the edges
// relabelled per second: wall clock, per core (GOMAXPROCS) and per
// second of CPU time.
func BenchmarkReorder(b *testing.B) {
	d, err := synth.RMAT(synth.RMATOptions{Scale: 18, EdgeFactor: 16, FeatDim: 16, NumClasses: 2, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	rank := degreeRank(d.Graph)
	cpu0 := cpuSeconds()
	b.ResetTimer()
	for range b.N {
		if _, _, _, err := store.Reorder(d.Graph, d.Features, d.FeatDim, rank); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	edges := float64(d.Graph.NNZ()) * float64(b.N)
	b.ReportMetric(edges/b.Elapsed().Seconds()/1e6, "Medges/s")
	b.ReportMetric(edges/b.Elapsed().Seconds()/1e6/float64(runtime.GOMAXPROCS(0)), "Medges/s/core")
	// Per second of CPU time the process used (a shared machine's other
	// jobs do not count; set-up outside the loop is excluded).
	b.ReportMetric(edges/(cpuSeconds()-cpu0)/1e6, "Medges/cpu-s")
}

// cpuSeconds is the user and system CPU time of the process so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
