package dist

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"strata/core/train"
	"strata/core/train/strategytest"
	"strata/internal/floattol"
	"strata/plugins/strategy/internal/testkit"
)

// linkBase is strategytest.LinkBase (Cora link prediction with GAE's
// encoder and the dot decoder), sampled.
const linkBase = strategytest.LinkBase + `
[sampler]
name = "uniform"
fanouts = [4, 6]
`

// scoreTestPairs returns the scores of the split's test pairs, positives
// then negatives, from st (a train.LinkScorer).
func scoreTestPairs(ctx context.Context, env *train.Env, st train.Stepper) ([]float64, error) {
	sc, ok := st.(train.LinkScorer)
	if !ok {
		return nil, fmt.Errorf("%T gives no pair scores", st)
	}
	s := env.Link.Split
	pairs := s.Test.Append(s.TestNeg)
	scores := make([]float64, pairs.Len())
	return scores, sc.ScorePairs(ctx, pairs, scores)
}

// linkTol is the relative difference allowed between the parameters (and
// scores, and losses) of two float64 link runs of steps optimizer steps
// that split each step differently on a graph of nodes nodes: testkit.SplitTol's
// derivation (TestSplitsMatchFullGraph) carried over steps steps. Two
// orders of a sum of K ≤ nodes terms differ by at most 2γ_K of the terms'
// magnitudes, which moves each of Adam's updates (lr = 0.01) by at most
// lr·2γ_K of a parameter's scale; over steps steps that adds up to
// steps·lr·2γ_K, with a factor of 100 for gradients dominated by
// cancellation, as there (two steps on Cora give 1.2e-12, SplitTol).
func linkTol(steps, nodes int) float64 {
	return float64(steps) * 0.01 * floattol.Orders(floattol.Gamma(nodes, floattol.UFloat64)) * 100
}

// TestDistLinkMatchesMiniBatch: 1, 2 and 3 ranks of distmini training
// links reach the loss, the parameters (the model's and the decoder's),
// the test pairs' scores and every node's embedding of strategy.minibatch,
// with dropout on, and every rank holds the same parameters, scores and
// embeddings bit for bit. Every rank cuts the same batches of edges as
// minibatch and trains the positives whose source it owns: in float64 the
// runs differ from one process only in the order of their sums (rows split
// between ranks, gradients all-reduced in rank order; dropout masks are
// keyed by the rows' global ids, and no decoder has dropout), which linkTol
// bounds. The cases cover link.exclude = "batch" (the whole global batch's
// positives taken out of every rank's blocks) and "none", both losses with
// one and two negatives, decoders with parameters, SAGE, and batches of 6
// edges on a 256-node R-MAT graph, where a rank often owns none of a
// batch's positives and only samples and reduces; on Cora the feature
// bytes are near their prediction. -short runs the most ranks of each
// case only, for one epoch instead of two. (The margin loss does not see a decoder's output bias, as
// hadamard-mlp's: its gradient is 0 but for rounding, which Adam's
// normalisation blows up to steps of lr·g/ε, so hadamard-mlp is not
// compared under that loss.)
func TestDistLinkMatchesMiniBatch(t *testing.T) {
	drop := []string{`train.dtype="float64"`, "model.dropout=0.5", "model.input_dropout=0.3"}
	epochs := 2
	if testing.Short() {
		epochs = 1
	}
	for _, tc := range []struct {
		name    string
		sets    []string
		ranks   []int
		decoder bool // the decoder has parameters
		bytes   bool // check the feature bytes against their prediction
	}{
		{"exclude-batch", []string{"train.batch_size=512", "link.exclude=batch"}, []int{1, 2, 3}, false, true},
		{"sage-margin", []string{"train.batch_size=512", "link.exclude=none", `model.name="sage"`, "link.loss=margin", "link.decoder=distmult", "link.negatives=2"}, []int{3}, true, true},
		{"rmat-small-batches", []string{"data.dataset=rmat-8-8-16-4-0", "train.batch_size=6", "link.exclude=batch", "link.decoder=hadamard-mlp"}, []int{3}, true, false},
	} {
		if testing.Short() {
			tc.ranks = tc.ranks[len(tc.ranks)-1:]
		}
		t.Run(tc.name, func(t *testing.T) {
			sets := append(slices.Clone(drop), tc.sets...)
			ref := runRanks(t, 1, epochs, linkBase, append(sets, "train.mode=minibatch")...)[0]
			tol := linkTol(ref.steps, ref.nodes)
			for _, n := range tc.ranks {
				runs := runRanks(t, n, epochs, linkBase, append(sets, "train.mode=distmini")...)
				for r, run := range runs {
					if d := testkit.MaxRelDiff(t, run.params, runs[0].params); d != 0 {
						t.Fatalf("%d ranks: rank %d's parameters differ from rank 0's by %g", n, r, d)
					}
					if !slices.Equal(run.scores, runs[0].scores) {
						t.Fatalf("%d ranks: rank %d scores the test pairs otherwise than rank 0", n, r)
					}
				}
				if tc.decoder && !slices.ContainsFunc(slices.Collect(maps.Keys(runs[0].params)), func(k string) bool { return strings.HasPrefix(k, "decoder.") }) {
					t.Fatalf("%d ranks: no decoder parameter among the stepper's", n)
				}
				if runs[0].steps != ref.steps {
					t.Fatalf("%d ranks took %d steps, minibatch %d", n, runs[0].steps, ref.steps)
				}
				dp := testkit.MaxRelDiff(t, runs[0].params, ref.params)
				if dp > tol {
					t.Fatalf("%d ranks: parameters differ from minibatch's by %g (relative), above %g", n, dp, tol)
				}
				ds := sameOutputs(t, runs, ref, tol)
				if math.Abs(runs[0].loss-ref.loss) > tol*math.Abs(ref.loss) {
					t.Fatalf("%d ranks: loss %v, minibatch %v", n, runs[0].loss, ref.loss)
				}
				edges := 0
				for _, s := range runs[0].stats {
					edges += s.TrainEdges
				}
				if len(runs[0].stats) != n || edges == 0 {
					t.Fatalf("%d ranks: %d rank entries owning %d training edges", n, len(runs[0].stats), edges)
				}
				if tc.bytes && n > 1 {
					featureBytesNearPrediction(t, runs[0].stats)
				}
				t.Logf("%d ranks, %d steps: loss %.6f; relative difference to minibatch: parameters %.3g, scores %.3g (bound %.3g)", n, ref.steps, runs[0].loss, dp, ds, tol)
			}
		})
	}
}

// sameOutputs checks that every rank of runs scores the test pairs and
// embeds every node bit for bit as rank 0 does, and within tol (relative
// to the largest) as ref does; it returns the scores' difference.
func sameOutputs(t *testing.T, runs []rankRun, ref rankRun, tol float64) float64 {
	t.Helper()
	n := len(runs)
	for r, run := range runs {
		if !slices.Equal(run.scores, runs[0].scores) || !slices.Equal(run.outputs, runs[0].outputs) {
			t.Fatalf("%d ranks: rank %d scores the test pairs or embeds the nodes otherwise than rank 0", n, r)
		}
	}
	ds := testkit.MaxRelDiff(t, map[string][]float64{"scores": runs[0].scores}, map[string][]float64{"scores": ref.scores})
	if len(ref.scores) == 0 || ds > tol {
		t.Fatalf("%d ranks: the %d test scores differ from minibatch's by %g (relative to the largest), above %g", n, len(ref.scores), ds, tol)
	}
	if d := testkit.MaxRelDiff(t, map[string][]float64{"outputs": runs[0].outputs}, map[string][]float64{"outputs": ref.outputs}); len(ref.outputs) != ref.nodes*16 || d > tol {
		t.Fatalf("%d ranks: %d embedding values (minibatch: %d) differ from minibatch's by %g (relative to the largest), above %g", n, len(runs[0].outputs), len(ref.outputs), d, tol)
	}
	return ds
}

// featureBytesNearPrediction checks that the ranks together sent the
// feature bytes that the partition and the fanouts predict for the
// endpoints of their parts of the batches, to the 15 % of
// TestDistMiniBytesNearPrediction (an expectation against one epoch's
// draws).
func featureBytesNearPrediction(t *testing.T, stats []RankStats) {
	t.Helper()
	got, want := int64(0), int64(0)
	for _, s := range stats {
		got, want = got+s.SentBy["features"], want+s.PredictedBy["features"]
	}
	if rel := float64(got-want) / float64(want); want == 0 || math.Abs(rel) > 0.15 {
		t.Fatalf("%d ranks sent %d feature bytes, the partition predicts %d", len(stats), got, want)
	}
}

// TestDistLinkScoresOverBlocks: a model that cannot run layer by layer
// (batch normalisation: each rank would normalise its rows apart) embeds
// and scores over full-neighbourhood blocks instead; before any step
// (the running statistics are every rank's initial ones) 2 ranks score
// the test pairs and embed every node as strategy.minibatch does, to the
// order of the sums (testkit.SplitTol).
func TestDistLinkScoresOverBlocks(t *testing.T) {
	sets := []string{`train.dtype="float64"`, "model.options.batchnorm=true"}
	ref := runRanks(t, 1, 0, linkBase, append(sets, "train.mode=minibatch")...)[0]
	runs := runRanks(t, 2, 0, linkBase, append(sets, "train.mode=distmini")...)
	sameOutputs(t, runs, ref, testkit.SplitTol)
}
