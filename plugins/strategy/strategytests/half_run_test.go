package strategytests

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"strata/core/config"
	"strata/core/train"
	"strata/plugins/strategy/internal/testkit"
)

// halfOutcome is what must not depend on the storage of exactly
// representable features: the numbers of a run.
type halfOutcome struct {
	Loss, Train, Valid, Test float64
	Best                     int
}

func outcome(r *train.Result) halfOutcome {
	return halfOutcome{r.FinalLoss, r.TrainAcc, r.BestValidAcc, r.TestAcc, r.BestEpoch}
}

// TestHalfFeaturesMatchFloat32 trains on Cora's 0/1 features unnormalised
// (feature_norm = "none"), which float16 and bfloat16 hold exactly: every
// strategy and backend that reads 16-bit rows gives the float32 run's
// numbers bit for bit, and two 16-bit runs agree (determinism). Row-
// normalised features (1/row sum) are not exact in 16 bits: there the
// float16 run must differ from the float32 one, which shows the rows are
// really read from their 16-bit storage.
func TestHalfFeaturesMatchFloat32(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		sets []string
	}{
		{"fullgraph/gcn", []string{`model.name="gcn"`, "train.epochs=3"}},
		{"fullgraph/gat", []string{`model.name="gat"`, "train.epochs=2"}},
		{"fullgraph/sage", []string{`model.name="sage"`, "train.epochs=2"}},
		{"fullgraph/gin/sim", []string{`model.name="gin"`, `train.backend="sim"`, "train.epochs=2"}},
		{"minibatch/sage", []string{`model.name="sage"`, `train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[5, 10]", "train.batch_size=70", "train.epochs=2"}},
		{"minibatch/gcn/sim", []string{`train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[5, 10]", "train.batch_size=70", "train.epochs=2", `train.backend="sim"`}},
		{"micro/gcn", []string{"train.micro_batches=3", `partition.name="range"`, "train.epochs=2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := func(fd, norm string) halfOutcome {
				t.Helper()
				sets := append([]string{`data.feature_dtype="` + fd + `"`, `data.feature_norm="` + norm + `"`}, c.sets...)
				r, err := train.Run(ctx, testkit.MustParse(t, testkit.CoraBase, sets...), train.Options{Host: testkit.TestHost(t)})
				if err != nil {
					t.Fatal(err)
				}
				return outcome(r)
			}
			want := run("float32", "none")
			dtypes := []string{"float16", "bfloat16"}
			if testing.Short() && c.name != "fullgraph/gcn" {
				dtypes = dtypes[:1] // -short: bfloat16 on the first case only
			}
			for _, fd := range dtypes {
				if got := run(fd, "none"); got != want {
					t.Errorf("%s: %+v, float32 %+v", fd, got, want)
				}
			}
			if c.name == "fullgraph/gcn" {
				if again := run("float16", "none"); again != want {
					t.Errorf("a second float16 run: %+v, the first %+v", again, want)
				}
				if a, b := run("float32", "row"), run("float16", "row"); a.Loss == b.Loss {
					t.Errorf("row-normalised features: float16 loss %v equals float32's; the 16-bit rows were not read", b.Loss)
				}
			}
		})
	}
}

// TestHalfFeaturesRejected: where 16-bit rows cannot be read the config is
// an error naming data.feature_dtype, never a silent float32 run.
func TestHalfFeaturesRejected(t *testing.T) {
	cases := []struct {
		sets []string
		err  string
	}{
		{[]string{`data.feature_dtype="float8"`}, `data.feature_dtype = "float8": allowed values are`},
		{[]string{`data.feature_dtype="float16"`, `train.dtype="float64"`}, `data.feature_dtype = "float16" stores features for float32 math`},
		{[]string{`data.feature_dtype="bfloat16"`, `train.mode="chunked"`, `train.backend="sim"`}, `data.feature_dtype = "bfloat16": train.mode = "chunked" cannot read 16-bit feature rows`},
		{[]string{`data.feature_dtype="float16"`, `train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[5, 10]", `train.backend="sim"`, `cache.name="degree"`},
			`data.feature_dtype = "float16": the tiered feature store ([cache]) holds float32 rows only`},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.sets), func(t *testing.T) {
			cfg, err := config.Parse("test.toml", []byte(testkit.CoraBase), c.sets...)
			if err == nil {
				cfg.Output.Progress = "off"
				_, err = train.Run(context.Background(), cfg, train.Options{Host: testkit.TestHost(t)})
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("error %v, want %q", err, c.err)
			}
		})
	}
}
