package minibatch

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"strata/core/config"
	"strata/core/graph"
	"strata/core/train"
	"strata/internal/floattol"
	"strata/plugins/strategy/internal/testkit"
)

// TestSparseInputTrainsAsDense trains Cora's SAGE on mini-batches (float64,
// layer-wise evaluation) with the input rows bound by their entries
// (minibatch.sparse_input) and dense. The runs differ only in the order of
// the first layer's sums, over K = 1,433 features forward and at most N =
// 2,708 input rows for the weight gradients; the rest of each step is the
// same computation on values that differ relatively by about that, so the
// final losses agree to twice γ_{K+N} (float64) relative, as the engine's
// full-graph test derives (TestSparseInputTrainsAsDense there), and the
// accuracies to a flipped near-tie (one node of a split).
func TestSparseInputTrainsAsDense(t *testing.T) {
	sets := []string{`train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[5, 5]", "train.batch_size=512",
		`train.dtype="float64"`, "train.epochs=2", `minibatch.inference="layerwise"`}
	run := func(sets ...string) *train.Result {
		r, err := train.Run(context.Background(), testkit.MustParse(t, testkit.CoraBase, sets...), train.Options{Host: testkit.TestHost(t)})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	de, sp := run(sets...), run(append(sets, "minibatch.sparse_input=true")...)
	ds, err := graph.Open("embedded:cora")
	if err != nil {
		t.Fatal(err)
	}
	tol := floattol.Orders(floattol.Gamma(ds.FeatDim+ds.NumNodes, floattol.UFloat64))
	if d := math.Abs(sp.FinalLoss-de.FinalLoss) / de.FinalLoss; !(d <= tol) {
		t.Errorf("final loss %.17g sparse, %.17g dense: relative %.3g > %.3g", sp.FinalLoss, de.FinalLoss, d, tol)
	}
	if math.Abs(sp.TestAcc-de.TestAcc) > 1.5/float64(len(ds.Test)) || math.Abs(sp.BestValidAcc-de.BestValidAcc) > 1.5/float64(len(ds.Valid)) {
		t.Errorf("accuracies: sparse valid %v test %v, dense %v %v", sp.BestValidAcc, sp.TestAcc, de.BestValidAcc, de.TestAcc)
	}
}

// TestSparseInputRejects: sparse input with a source of dense rows is a
// KeyError on minibatch.sparse_input.
func TestSparseInputRejects(t *testing.T) {
	for name, extra := range map[string]string{"disk tier": `minibatch.features.tier="disk"`, "cache": `cache.name="degree"`} {
		cfg, err := config.Parse("test.toml", []byte(testkit.CoraBase), append(mini(2), "minibatch.sparse_input=true", extra)...)
		if err == nil {
			err = (*Minibatch)(nil).CheckConfig(cfg)
		}
		var ke *config.Error
		if !errors.As(err, &ke) || !strings.Contains(ke.Key, "sparse_input") {
			t.Errorf("%s: error %v, want a KeyError on minibatch.sparse_input", name, err)
		}
	}
}
