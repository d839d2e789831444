package strategytests

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/graph/numpy"
	"strata/core/train"
	"strata/core/train/strategytest"
	"strata/plugins/strategy/internal/testkit"
)

// linkBase is Cora link prediction with GAE's encoder and the dot
// decoder (strategytest.LinkBase).
const linkBase = strategytest.LinkBase

func runLink(t *testing.T, base string, sets ...string) *train.Result {
	t.Helper()
	res, err := train.Run(context.Background(), testkit.MustParse(t, base, sets...), train.Options{Host: testkit.TestHost(t)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestLinkLearns trains GAE on Cora: the loss falls, the held-out
// ROC-AUC is far above chance (the peer reaches 0.907 at 200 epochs),
// every link metric is reported, and the result says "link".
func TestLinkLearns(t *testing.T) {
	first := runLink(t, linkBase, "train.epochs=1")
	res := runLink(t, linkBase, "train.epochs=60")
	t.Logf("loss %v -> %v; AUC train %v valid %v test %v; %v", first.FinalLoss, res.FinalLoss, res.TrainAcc, res.BestValidAcc, res.TestAcc, res.Metrics)
	if !(res.FinalLoss < first.FinalLoss) {
		t.Errorf("loss %v after 60 epochs, %v after 1: it did not fall", res.FinalLoss, first.FinalLoss)
	}
	if !(res.TestAcc > 0.8) || !(res.BestValidAcc > 0.8) {
		t.Errorf("test ROC-AUC %v, valid %v: want above 0.8", res.TestAcc, res.BestValidAcc)
	}
	if res.Targets != "link" {
		t.Errorf("targets = %q, want link", res.Targets)
	}
	for _, k := range []string{"test_ap", "test_mrr", "test_hits@10", "test_hits@100", "valid_ap"} {
		if v, ok := res.Metrics[k]; !ok || !(v > 0 && v <= 1) {
			t.Errorf("metric %s = %v (present %v), want in (0, 1]", k, v, ok)
		}
	}
}

// TestLinkNoLeak trains on Cora twice: as it is, and with both
// directions of every held-out (validation or test) edge added to the
// input. Both have the same undirected edges, so the split is the same;
// the second run's input lets message passing see every held-out edge in
// both directions, and a split that left any of them (or a reverse) in
// the message-passing graph would make its model score them differently.
// The runs must be equal bit for bit.
func TestLinkNoLeak(t *testing.T) {
	ds, err := graph.Open("embedded:cora")
	if err != nil {
		t.Fatal(err)
	}
	split, err := graph.SplitEdges(ds.Graph, graph.EdgeSplitSpec{Train: 85, Valid: 5, Test: 10}, true)
	if err != nil {
		t.Fatal(err)
	}
	g := ds.Graph
	edges := make([][2]int64, 0, g.NNZ())
	for dst := range g.NumRows {
		for e := g.Indptr[dst]; e < g.Indptr[dst+1]; e++ {
			edges = append(edges, [2]int64{g.Col(e), int64(dst)})
		}
	}
	for _, p := range []graph.Pairs{split.Valid, split.Test} {
		for i := range p.Src {
			u, v := int64(p.Src[i]), int64(p.Dst[i])
			edges = append(edges, [2]int64{u, v}, [2]int64{v, u})
		}
	}
	ds.Graph = graph.FromEdges(ds.NumNodes, edges)
	dir := filepath.Join(t.TempDir(), "cora-heldout-both-ways")
	if _, err := numpy.WriteNPYDir(dir, ds); err != nil {
		t.Fatal(err)
	}
	sets := []string{"train.epochs=3", "data.edge_split=random-85-5-10-seed0"}
	a := runLink(t, linkBase, sets...)
	b := runLink(t, strings.Replace(linkBase, `"embedded:cora"`, `"`+dir+`"`, 1), sets...)
	if a.FinalLoss != b.FinalLoss || a.TestAcc != b.TestAcc || a.Metrics["test_ap"] != b.Metrics["test_ap"] {
		t.Fatalf("loss %v vs %v, test AUC %v vs %v, AP %v vs %v: the held-out edges' reverses reached message passing",
			a.FinalLoss, b.FinalLoss, a.TestAcc, b.TestAcc, a.Metrics["test_ap"], b.Metrics["test_ap"])
	}
}

// TestLinkBadInput checks that each mistake of a link config is a key
// error naming the key.
func TestLinkBadInput(t *testing.T) {
	cases := []struct {
		name string
		sets []string
		key  string
	}{
		{"shares over 100", []string{"data.edge_split=random-85-10-10"}, "data.edge_split"},
		{"no training share", []string{"data.edge_split=random-0-50-50"}, "data.edge_split"},
		{"malformed split", []string{"data.edge_split=85-5-10"}, "data.edge_split"},
		{"zero negatives", []string{"link.negatives=0"}, "link.negatives"},
		{"edge split on a node task", []string{"train.task=node", "data.edge_split=random-85-5-10"}, "data.edge_split"},
		{"node split on a link task", []string{"data.split=random-20-30-seed0"}, "data.split"},
		{"unknown decoder", []string{"link.decoder=dott"}, "link.decoder"},
		{"unread decoder option", []string{"link.decoder_options.widht=3"}, "link.decoder_options"},
		{"strategy without links", []string{"train.mode=chunked"}, "train.task"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := linkConfigError(t, c.sets...); !strings.Contains(err.Error(), c.key) {
				t.Fatalf("err = %v; want a config error naming %s", err, c.key)
			}
		})
	}
}

// TestLinkMiniBatchMatchesFullGraph trains Cora's links in float64 with
// one mini-batch of every training edge over full neighbourhoods (nothing
// excluded): the same negatives (drawn per training edge, whatever the
// batches) and the same embeddings as full-graph training, so the losses
// of three epochs agree to float rounding (testkit.SplitTol).
func TestLinkMiniBatchMatchesFullGraph(t *testing.T) {
	sets := []string{"train.epochs=3", "train.dtype=float64", "train.eval_every=0"}
	full := runLink(t, linkBase, sets...)
	mini := runLink(t, linkBase, append(sets, "train.mode=minibatch", "sampler.name=full", "minibatch.batch_size=100000", "link.exclude=none")...)
	if d := math.Abs(full.FinalLoss-mini.FinalLoss) / math.Abs(full.FinalLoss); !(d <= testkit.SplitTol) {
		t.Fatalf("loss %v full-graph, %v in one mini-batch: relative difference %.3g, above %g", full.FinalLoss, mini.FinalLoss, d, testkit.SplitTol)
	}
}

// TestLinkMiniBatchLearns trains Cora's links on sampled mini-batches of
// 512 edges, with each batch's own edges taken out of its neighbourhoods
// and with nothing taken out: both learn (the held-out ROC-AUC is far
// above chance).
func TestLinkMiniBatchLearns(t *testing.T) {
	for _, exclude := range []string{"batch", "none"} {
		t.Run(exclude, func(t *testing.T) {
			res := runLink(t, linkBase, "train.epochs=12", "train.eval_every=12", "train.mode=minibatch", "sampler.name=uniform", "sampler.fanouts=[10,10]",
				"minibatch.batch_size=512", "link.exclude="+exclude)
			t.Logf("loss %v; AUC valid %v test %v", res.FinalLoss, res.BestValidAcc, res.TestAcc)
			if !(res.TestAcc > 0.65) {
				t.Fatalf("test ROC-AUC %v after 12 epochs, want above 0.65 (chance: 0.5)", res.TestAcc)
			}
		})
	}
}
