package chunked

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"strata/core/backend"
	"strata/core/backend/cpu"
	"strata/core/train"
	"strata/plugins/strategy/internal/testkit"
)

// TestChunkedPoolMatchesFresh trains two epochs on the cpu backend with
// the host tier in a file, once with the chunks' buffers and programs on
// the backend's recycling pool (the default: storage reused across
// chunks, layers and passes, scratch buffers not cleared) and once with
// every buffer allocated anew and zero-filled (the code before the
// pool): the losses, gradients and parameters must be identical, bit for
// bit, for each deduplication mode and handling of the intermediates,
// with dropout on. A pooled buffer handed out while still in use, or a
// stale one read where the code relied on zeros, changes them. The
// pooled run must also have reused storage (pool hits).
func TestChunkedPoolMatchesFresh(t *testing.T) {
	cases := []struct {
		model, dedup, inter, dtype string
		extra                      []string
	}{
		{"gcn", "p2p_reuse", "recompute", "float32", nil},
		{"sage", "p2p_reuse", "cache", "float64", nil},
		{"gcn", "none", "hybrid", "float32", nil},
		{"gat", "p2p", "recompute", "float32", nil},
		// 64 features < 128 hidden: layer 0 aggregates first, so its
		// split backward reads no input row (bound uncleared) and
		// restores its aggregation from the host file.
		{"gcn", "p2p_reuse", "split", "float32", []string{"model.hidden=128"}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s/%s/%s", c.model, c.dedup, c.inter, c.dtype), func(t *testing.T) {
			ctx := context.Background()
			sets := func(dir string) []string {
				s := append(testkit.ModelSets(c.model), `train.mode="chunked"`, `train.backend="cpu"`, `data.dataset="rmat-12-8-64-5-1"`,
					"chunked.chunks=4", `chunked.dedup="`+c.dedup+`"`, `chunked.intermediates="`+c.inter+`"`, `train.dtype="`+c.dtype+`"`,
					"model.dropout=0.5", "model.input_dropout=0.3", "chunked.host_file="+filepath.Join(dir, "host.bin"))
				return append(s, c.extra...)
			}
			var pool *cpu.Backend
			var before int64
			got, err := testkit.StepsWith(ctx, t, 2, testkit.MustParse(t, testkit.CoraBase, sets(t.TempDir())...), func(st train.Stepper) {
				r := st.(*chunkedRun)
				if r.bufs == r.e.Be {
					t.Fatal("the cpu backend's chunk buffers are not pooled")
				}
				pool = r.e.Be.(*cpu.Backend)
				before = pool.PoolStats().Hits
				if sp := r.splitAt(0); c.inter == "split" && (sp == nil || sp.NeedsInput || sp.DstRows || r.keptAt(0, 0) == nil) {
					t.Fatalf("layer 0 does not split reading no input row, its aggregation in the host file: %v %+v", r.modes(), sp)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if hits := pool.PoolStats().Hits - before; hits == 0 {
				t.Error("the pooled run took no buffer from the pool")
			}
			want, err := testkit.StepsWith(ctx, t, 2, testkit.MustParse(t, testkit.CoraBase, sets(t.TempDir())...), func(st train.Stepper) {
				r := st.(*chunkedRun)
				r.bufs = r.e.Be // every buffer fresh and zero-filled
				r.feed = r.feedEnv()
				if _, ok := r.bufs.(backend.Recycler); !ok {
					t.Fatal("the cpu backend is not a backend.Recycler")
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			testkit.CompareSteps(t, got, want, 0, 0)
		})
	}
}

// TestChunkedPrefetchMatches checks that filling the next batch's
// transition buffers while a batch computes (chunked.prefetch, on the
// cpu backend) changes nothing: two epochs' losses,
// gradients and parameters equal a run that fills each batch's buffers
// after the batch before, bit for bit, and the last epoch reads and
// writes the same bytes of the host file. Dropout is on, so the rows
// must reach the same places.
func TestChunkedPrefetchMatches(t *testing.T) {
	cases := []struct{ model, inter, dtype string }{
		{"gcn", "recompute", "float32"},
		{"sage", "cache", "float64"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s/%s", c.model, c.inter, c.dtype), func(t *testing.T) {
			ctx := context.Background()
			run := func(prefetch bool) ([]testkit.StepRecord, [2]int64) {
				cfg := testkit.MustParse(t, testkit.CoraBase, append(testkit.ModelSets(c.model), `train.mode="chunked"`, `train.backend="cpu"`,
					`data.dataset="rmat-12-8-64-5-1"`, "chunked.chunks=4", `chunked.intermediates="`+c.inter+`"`, `train.dtype="`+c.dtype+`"`,
					"model.dropout=0.5", "model.input_dropout=0.3", "chunked.host_file="+filepath.Join(t.TempDir(), "host.bin"),
					fmt.Sprintf("chunked.prefetch=%v", prefetch))...)
				var r *chunkedRun
				steps, err := testkit.StepsWith(ctx, t, 2, cfg, func(st train.Stepper) {
					if r = st.(*chunkedRun); r.prefetch != prefetch {
						t.Fatalf("chunked.prefetch = %v, but the run prefetches: %v", prefetch, r.prefetch)
					}
				})
				if err != nil {
					t.Fatal(err)
				}
				return steps, r.disk
			}
			got, gotDisk := run(true)
			want, wantDisk := run(false)
			testkit.CompareSteps(t, got, want, 0, 0)
			if gotDisk != wantDisk || gotDisk[0] == 0 {
				t.Errorf("host file bytes (read, written) with prefetch %v, without %v", gotDisk, wantDisk)
			}
		})
	}
}
