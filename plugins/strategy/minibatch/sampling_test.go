package minibatch

import (
	"context"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/sampling"
	"strata/core/train"
	"strata/plugins/strategy/internal/steprun"
	"strata/plugins/strategy/internal/testkit"
)

// block is a sampled block with e edges (only its count matters here).
func block(e int64) sampling.Block {
	return sampling.Block{Adj: &graph.CSR{NumRows: 1, Indptr: []int64{0, e}}}
}

// TestHostSampleS checks the price of a batch's host sampling: every
// shard's sampled edges at minibatch.sample_meps, nothing unpriced.
func TestHostSampleS(t *testing.T) {
	b := sampled{shards: []shard{{blocks: []sampling.Block{block(300), block(1200)}}, {blocks: []sampling.Block{block(500)}}}}
	for _, c := range []struct {
		meps, want float64
	}{{0, 0}, {2, 2000 / 2e6}, {0.5, 2000 / 0.5e6}} {
		m := &miniBatches{sampleMEPS: c.meps}
		if got := m.hostSampleS(b); got != c.want {
			t.Errorf("sample_meps %v: %v s, want %v", c.meps, got, c.want)
		}
	}
}

// TestPredictedEpochS checks the epoch's prediction from its steps for
// each pipeline: sequential, overlapped transfer, and host sampling as a
// stage ahead of either, against the pipelines worked by hand.
func TestPredictedEpochS(t *testing.T) {
	tot := &miniTotals{stagePred: []float64{1, 2, 1}, computePred: []float64{3, 1, 2}, samplePred: []float64{5, 1, 4}}
	for _, c := range []struct {
		overlap, sampling bool
		want              float64
	}{
		{false, false, 1 + 3 + 2 + 1 + 1 + 2},
		{true, false, steprun.PipelinedS(tot.stagePred, tot.computePred)},
		// ticks: s0 | (1+3) vs s1 | (2+1) vs s2 | (1+2)
		{false, true, 5 + max(4, 1) + max(3, 4) + 3},
		// ticks: s0 | t0 s1 | c0 t1 s2 | c1 t2 | c2
		{true, true, 5 + max(1, 1) + max(3, 2, 4) + max(1, 1) + 2},
	} {
		if got := predictedEpochS(tot, c.overlap, c.sampling); got != c.want {
			t.Errorf("overlap %v, sampling %v: %v, want %v", c.overlap, c.sampling, got, c.want)
		}
	}
}

// TestSampleMEPSRun trains Cora on the simulated backend with priced host
// sampling: the training is that of the unpriced run, the epoch at least
// as long and at most longer by its sampling, and device sampling (the
// store holds the topology) prices no host sampling and predicts the
// epoch of the unpriced run.
func TestSampleMEPSRun(t *testing.T) {
	base := []string{`model.name="sage"`, `train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[5, 5]",
		"train.batch_size=70", "train.epochs=1", "train.eval_every=0", `train.backend="sim"`, `cache.name="degree"`, "cache.capacity=0.1"}
	plain, priced := runWith(t, base), runWith(t, base, "minibatch.sample_meps=0.5")
	fig := priced.Figures["minibatch"].(*Figures)
	steps := 2.0 // 140 training nodes in batches of 70
	if priced.FinalLoss != plain.FinalLoss || fig.PredictedSamplingS <= 0 {
		t.Fatalf("priced sampling: loss %v (unpriced %v), %v s sampling a step", priced.FinalLoss, plain.FinalLoss, fig.PredictedSamplingS)
	}
	if lo, hi := max(plain.PredictedEpochS, steps*fig.PredictedSamplingS), plain.PredictedEpochS+steps*fig.PredictedSamplingS; priced.PredictedEpochS < lo || priced.PredictedEpochS > hi {
		t.Errorf("predicted epoch %v, want in [%v, %v]", priced.PredictedEpochS, lo, hi)
	}
	if _, err := train.Run(context.Background(), testkit.MustParse(t, testkit.CoraBase, `train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[5, 5]", "minibatch.sample_meps=1"), train.Options{Host: testkit.TestHost(t)}); err == nil || !strings.Contains(err.Error(), "minibatch.sample_meps") {
		t.Errorf("sample_meps on the cpu backend: error %v, want one naming minibatch.sample_meps", err)
	}
	devPlain, devPriced := runWith(t, base, "minibatch.store.graph_ratio=1.0"), runWith(t, base, "minibatch.store.graph_ratio=1.0", "minibatch.sample_meps=0.5")
	if f := devPriced.Figures["minibatch"].(*Figures); f.PredictedSamplingS != 0 || devPriced.PredictedEpochS != devPlain.PredictedEpochS {
		t.Errorf("device sampling: %v s host sampling, epoch %v (unpriced %v)", f.PredictedSamplingS, devPriced.PredictedEpochS, devPlain.PredictedEpochS)
	}
}
