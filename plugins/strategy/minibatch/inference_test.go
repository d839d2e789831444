package minibatch

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"strata/core/config"
	"strata/core/train"
	"strata/plugins/strategy/internal/testkit"
)

// mini is mini-batch training with one fanout per layer of a model of
// layers layers.
func mini(layers int) []string {
	return []string{`train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[" + strings.Repeat("5, ", layers-1) + "5]", "train.batch_size=512"}
}

// TestInferenceRejects checks the configs layer-wise inference refuses,
// each with a KeyError naming the key, under both block strategies.
func TestInferenceRejects(t *testing.T) {
	for _, c := range []struct {
		name, key string
		sets      []string
	}{
		{"jumping knowledge", "minibatch.inference", append(mini(3), `minibatch.inference="layerwise"`, `model.jk="cat"`, "model.layers=3")},
		{"link prediction", "minibatch.inference", append(mini(2), `minibatch.inference="layerwise"`, `train.task="link"`, `data.edge_split="random-85-5-10"`)},
		{"micro, jumping knowledge", "micro.inference", []string{`train.mode="micro"`, `micro.inference="layerwise"`, `model.jk="max"`, "model.layers=3", `partition.name="range"`, "micro.micro_batches=2"}},
		{"unknown value", "minibatch.inference", append(mini(2), `minibatch.inference="layer"`)},
	} {
		cfg, err := config.Parse("test.toml", []byte(testkit.CoraBase), c.sets...)
		if err == nil {
			_, err = testkit.StepsIn(context.Background(), t, 1, cfg)
		}
		var ke *config.Error
		if !errors.As(err, &ke) || !strings.Contains(ke.Key, c.key) {
			t.Errorf("%s: error %v, want a KeyError on %s", c.name, err, c.key)
		}
	}
}

// TestLayerwiseRun: a whole run with layer-wise evaluation reports the
// accuracies of the run that evaluates over L-hop blocks (its logits
// agree to rounding, TestLayerwiseMatchesBlocks; a flipped near-tie would
// move an accuracy by one node, 1/len(split)).
func TestLayerwiseRun(t *testing.T) {
	sets := []string{`train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[5, 5]", "train.batch_size=512", `train.dtype="float64"`, "train.epochs=2"}
	run := func(sets ...string) *train.Result {
		r, err := train.Run(context.Background(), testkit.MustParse(t, testkit.CoraBase, sets...), train.Options{Host: testkit.TestHost(t)})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := run(sets...), run(append(sets, `minibatch.inference="layerwise"`)...)
	if a.FinalLoss != b.FinalLoss || math.Abs(a.TestAcc-b.TestAcc) > 1.5/1000 || math.Abs(a.BestValidAcc-b.BestValidAcc) > 1.5/500 {
		t.Errorf("layer-wise: loss %v, valid %v, test %v; blocks: %v, %v, %v", b.FinalLoss, b.BestValidAcc, b.TestAcc, a.FinalLoss, a.BestValidAcc, a.TestAcc)
	}
}
