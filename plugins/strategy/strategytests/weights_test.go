package strategytests

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	"strata/core/train"
	"strata/core/train/strategytest"
	"strata/plugins/strategy/internal/testkit"
)

// weightedRun trains model on dir (float64, dropouts on, 3 epochs).
func weightedRun(t *testing.T, dir, model string, sets ...string) *train.Result {
	t.Helper()
	all := append(testkit.SplitDropouts(model), `model.name="`+model+`"`, `train.dtype="float64"`, "train.epochs=3", "data.dataset="+strconv.Quote(dir))
	r, err := train.Run(context.Background(), testkit.MustParse(t, testkit.CoraBase, append(all, sets...)...), train.Options{Host: testkit.TestHost(t)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestEdgeWeightsAcrossStrategies: weights all 1 train as no weights, to
// the bit; varied weights change the result, and chunked training (its
// chunks and their halos), one mini-batch of every training node over
// full-neighbour blocks and micro-batches give full-graph training's
// loss to rounding and its test accuracy.
func TestEdgeWeightsAcrossStrategies(t *testing.T) {
	none, unit, varied := strategytest.WeightedCora(t, "none"), strategytest.WeightedCora(t, "unit"), strategytest.WeightedCora(t, "varied")
	for _, c := range []struct{ model, option string }{{"gcn", ""}, {"graphconv", ""}, {"graphconv", `model.options.aggr="mean"`}, {"sage", ""}} {
		t.Run(c.model+c.option, func(t *testing.T) {
			var opt []string
			if c.option != "" {
				opt = []string{c.option}
			}
			plain, ones := weightedRun(t, none, c.model, opt...), weightedRun(t, unit, c.model, opt...)
			if plain.FinalLoss != ones.FinalLoss || plain.TestAcc != ones.TestAcc {
				t.Errorf("weights all 1: loss %.17g, test %v; no weights: %.17g, %v", ones.FinalLoss, ones.TestAcc, plain.FinalLoss, plain.TestAcc)
			}
			full := weightedRun(t, varied, c.model, opt...)
			if full.FinalLoss == plain.FinalLoss {
				t.Errorf("varied weights train to the unweighted loss %.17g: not used", full.FinalLoss)
			}
			for name, split := range map[string][]string{
				"chunked":    {`train.mode="chunked"`, "chunked.chunks=4"},
				"mini-batch": {`train.mode="minibatch"`, `sampler.name="full"`, "sampler.layers=2", "train.batch_size=140"},
				"micro":      {"train.micro_batches=3", `partition.name="range"`},
			} {
				r := weightedRun(t, varied, c.model, append(opt, split...)...)
				if d := math.Abs(full.FinalLoss-r.FinalLoss) / full.FinalLoss; d > testkit.SplitTol || r.TestAcc != full.TestAcc {
					t.Errorf("full graph: loss %.15g, test %v; %s: %.15g, %v", full.FinalLoss, full.TestAcc, name, r.FinalLoss, r.TestAcc)
				}
			}
		})
	}
}

// TestEdgeWeightsRefused: a dataset with weights is refused, naming the
// key and the fix, wherever they would be ignored.
func TestEdgeWeightsRefused(t *testing.T) {
	dir := strategytest.WeightedCora(t, "varied")
	for _, c := range []struct {
		sets []string
		want []string
	}{
		{[]string{`model.name="gat"`}, []string{`model.name = "gat": the layer module "gat" does not take edge weights (it declares no //strata:edge-weights), and dataset "cora-varied" has edge weights; use model.name = "`, `"gcn"`}},
		{[]string{`train.mode="hybrid"`, `sampler.name="uniform"`, "sampler.fanouts=[5, 5]", "hybrid.cpu_share=1", `hybrid.drm="off"`}, []string{`train.mode = "hybrid" does not carry edge weights yet`}},
		{[]string{`train.mode="distfull"`}, []string{`train.mode = "distfull" does not carry edge weights yet`}},
		{[]string{`train.mode="minibatch"`, `sampler.name="randomwalk"`}, []string{`sampler.name = "randomwalk": its blocks hold edges of their own (not edges of the graph), which have no weights, and dataset "cora-varied" has edge weights; use sampler.name = "`, `"uniform"`}},
		{[]string{`model.name="graphconv"`, `model.options.aggr="max"`}, []string{`reads the edges with layer 0's aggregate with reducer "max", which ignores their weights`}},
		{[]string{`model.name="sage"`, `model.options.aggr="median"`}, []string{`reads the edges with layer 0's op gather_src, which ignores their weights`}},
	} {
		t.Run(strings.Join(c.sets, " "), func(t *testing.T) {
			cfg := testkit.MustParse(t, testkit.CoraBase, append(c.sets, "data.dataset="+strconv.Quote(dir))...)
			err := train.Check(context.Background(), cfg, testkit.TestHost(t), false)
			for _, w := range c.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want %q", err, w)
				}
			}
		})
	}
}
