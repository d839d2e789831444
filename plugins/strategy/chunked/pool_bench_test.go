package chunked

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"strata/core/backend/cpu"
	"strata/plugins/strategy/internal/testkit"
)

// BenchmarkChunkedEpochHostFile runs training epochs of GCN 2×128 in 16
// chunks on the cpu backend with the host tier in a file, on R-MAT 2^16
// (128 features): as it runs ("pooled": the chunk feed's buffers from the
// backend's pool, rows moved by host indices, the vertex gradients added
// in RAM), with every chunk buffer allocated anew and zero-filled
// ("fresh"), with the rows moved by uploaded indices, Gather and
// ScatterAdd, as on a device ("gather-scatter"), and with every vertex
// gradient addition through the log ("log"). B/op is the Go heap an epoch allocates (the fresh buffers
// are Go slices; the pool's storage is not Go heap), pool-misses the
// pool's new mappings in all, pool-hits/op its reuses, disk-read-B/op and disk-written-B/op the host file's
// traffic, min-read-B/op and min-written-B/op its least (docs/hongtu.md).
//
// go test -run '^$' -bench ChunkedEpochHostFile -benchmem -benchtime 3x ./plugins/strategy/chunked/
func BenchmarkChunkedEpochHostFile(b *testing.B) {
	for _, mode := range []string{"pooled", "fresh", "gather-scatter", "log"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			cfg := testkit.MustParse(b, testkit.CoraBase, `train.mode="chunked"`, `train.backend="cpu"`, `data.dataset="rmat-16-16-128-16-0"`,
				`model.name="gcn"`, "model.hidden=128", "model.dropout=0", "model.input_dropout=0", "chunked.chunks=16",
				"chunked.host_file="+filepath.Join(b.TempDir(), "host.bin"))
			r, _ := newTestRun(b, cfg)
			switch mode {
			case "fresh":
				r.bufs = r.e.Be
			case "gather-scatter":
				r.rows = nil
			case "log":
				r.addLog.SetCache(0)
			}
			r.feed = r.feedEnv() // the feed's buffers and row copies as set
			pool := r.e.Be.(*cpu.Backend)
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := r.Epoch(ctx, uint64(i+1), func() error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			s := pool.PoolStats()
			b.ReportMetric(float64(s.Misses), "pool-misses")
			b.ReportMetric(float64(s.Hits)/float64(b.N), "pool-hits/op")
			minRead, minWritten := r.minDiskBytes()
			b.ReportMetric(float64(r.disk[0]), "disk-read-B/op")
			b.ReportMetric(float64(r.disk[1]), "disk-written-B/op")
			b.ReportMetric(float64(minRead), "min-read-B/op")
			b.ReportMetric(float64(minWritten), "min-written-B/op")
		})
	}
}
