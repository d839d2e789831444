package chunked

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"strata/core/config"
	"strata/core/ir"
	"strata/core/train"
	"strata/plugins/strategy/internal/steprun"
)

// TestHongTuTrafficTable prints HongTu's Table 8 for strata's plans: the
// neighbour rows one layer pass loads from the host on a 4-device machine
// (m = 4), without deduplication (V_ori), with p2p (V_+p2p) and with p2p
// and reuse (V_+ru), normalised by |V|, for the graphs of
// docs/performance/hongtu.md, with and without the Alg. 4 reorganisation. It
// checks that deduplication never loads more. Set STRATA_HONGTU_TABLE to
// a comma-separated list of "name=dataset-spec:chunks" to choose the
// graphs; the default is the small coauthor-physics case when
// /work/shared/data is present.
func TestHongTuTrafficTable(t *testing.T) {
	if testing.Short() {
		t.Skip("partitions large graphs")
	}
	specs := os.Getenv("STRATA_HONGTU_TABLE")
	if specs == "" {
		if _, err := os.Stat("/work/shared/data/coauthor-physics"); err != nil {
			t.Skip("no /work/shared/data")
		}
		specs = "coauthor-physics=/work/shared/data/coauthor-physics:16"
	}
	ctx := context.Background()
	t.Logf("%-18s %9s %6s %5s %8s %8s %8s %8s %6s", "graph", "|V|", "chunks", "reorg", "V_ori/V", "V_p2p/V", "V_ru/V", "ori/ru", "ru%dup")
	for _, s := range strings.Split(specs, ",") {
		name, rest, _ := strings.Cut(s, "=")
		i := strings.LastIndex(rest, ":")
		spec, chunksStr := rest[:i], rest[i+1:]
		var chunks int
		fmt.Sscan(chunksStr, &chunks)
		cfg, err := config.Parse("table.toml", []byte("[data]\ndataset = \"x\"\n"), "data.dataset="+spec)
		if err != nil {
			t.Fatal(err)
		}
		ds, err := train.LoadDataset(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		adjs, err := train.BuildAdjacencies(ds, true)
		if err != nil {
			t.Fatal(err)
		}
		e := steprun.Env{DS: ds, Adjs: adjs, Model: gcnAggregation(t)}
		if ds.Labels == nil {
			ds.Labels = make([]int32, ds.NumNodes)
		}
		plain, err := planChunks(ctx, cfg, e, 4, chunks, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, reorg := range []bool{false, true} {
			p := plain
			if reorg {
				p = plain.Reorganize(ds.NumNodes)
			}
			c := p.Comm(ds.NumNodes)
			n := float64(ds.NumNodes)
			if c.P2p > c.Ori || c.Ru > c.P2p {
				t.Errorf("%s: deduplication loads more: %+v", name, c)
			}
			dup := float64(c.Ori-c.Ru) / n
			t.Logf("%-18s %9d %6d %5v %8.3f %8.3f %8.3f %7.2fx %5.1f%%", name, ds.NumNodes, chunks, reorg, float64(c.Ori)/n, float64(c.P2p)/n, float64(c.Ru)/n,
				float64(c.Ori)/float64(c.Ru), 100*float64(c.P2p-c.Ru)/n/max(dup, 1e-12))
		}
	}
}

// gcnAggregation is the smallest model the plans of the table need: one
// GCN aggregation over adj_self (the graph and reducer of GCN's layers).
func gcnAggregation(t *testing.T) *ir.Graph {
	t.Helper()
	b := ir.NewBuilder()
	b.Output(b.Aggregate(b.Graph("adj_self"), b.Input("x", 4), "gcn"))
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return g
}
