package chunked

import (
	"context"
	"math"
	"testing"

	"strata/core/backend"
	"strata/core/train"
	"strata/plugins/strategy/internal/steprun"
	"strata/plugins/strategy/internal/testkit"
)

// sumTol bounds the relative difference of two float64 sums of the same
// fewer than 1000 non-negative terms in different orders: each rounding
// costs at most 2^-53 of the partial sum, so under 1000·2^-53 ≈ 1.1e-13.
const sumTol = 1e-12

// TestConcurrentClocks trains one chunked epoch on Cora with 8 chunks on
// 1, 2 and 4 simulated devices and checks the two clocks of deviceClocks
// against each other and against the backend's own counters:
//   - the sequential clock is all the run's work, every kernel of every
//     device plus every link's bytes at its bandwidth (Traffic, Predicted),
//     so the concurrent schedule moves the same bytes over the same links;
//   - on one device the two clocks are equal, bit for bit;
//   - on m > 1 devices the concurrent epoch is strictly shorter than the
//     sequential one and no shorter than sequential/m (the slowest of m
//     devices is at least their mean, at every synchronisation point);
//   - the loss is bit-identical to that of the same epoch without the
//     clocks: they only read the counters.
func TestConcurrentClocks(t *testing.T) {
	cases := []struct {
		name    string
		devices []string
		m       int
	}{
		{"one device", nil, 1},
		{"two over pcie", []string{`devices.preset="pcie-only"`, "devices.count=2"}, 2},
		{"nvlink clique of four", []string{`devices.preset="nvlink-clique-4"`}, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sets := chunkedSets(append(tc.devices, "chunked.chunks=8", `train.dtype="float64"`)...)
			loss, figs, work := clockedEpoch(t, sets, false)
			if tc.m == 1 && figs.PredictedConcurrentS != figs.PredictedSequentialS {
				t.Errorf("one device: concurrent %.17g s, sequential %.17g s", figs.PredictedConcurrentS, figs.PredictedSequentialS)
			}
			if math.Abs(figs.PredictedSequentialS-work) > sumTol*work {
				t.Errorf("sequential clock %.17g s, the backend's kernels and link times %.17g s", figs.PredictedSequentialS, work)
			}
			if tc.m > 1 && (figs.PredictedConcurrentS >= figs.PredictedSequentialS || figs.PredictedConcurrentS < figs.PredictedSequentialS/float64(tc.m)) {
				t.Errorf("%d devices: concurrent %.6g s outside [sequential/m, sequential) = [%.6g, %.6g)",
					tc.m, figs.PredictedConcurrentS, figs.PredictedSequentialS/float64(tc.m), figs.PredictedSequentialS)
			}
			if without, _, _ := clockedEpoch(t, sets, true); without != loss {
				t.Errorf("loss %.17g with the clocks, %.17g without", loss, without)
			}
			t.Logf("m=%d: concurrent %.4g s, sequential %.4g s (%.2fx)", tc.m, figs.PredictedConcurrentS, figs.PredictedSequentialS, figs.PredictedSequentialS/figs.PredictedConcurrentS)
		})
	}
}

// clockedEpoch trains one chunked epoch of the config sets (with the
// clocks off when off) and returns its loss, the strategy's figures and
// the backend's total work: every device kernel's predicted seconds plus
// every link's bytes at its bandwidth.
func clockedEpoch(t *testing.T, sets []string, off bool) (float64, *ChunkedFigures, float64) {
	t.Helper()
	st, be, loss := trainOneEpoch(t, sets, off)
	var res train.Result
	st.ReportResult(&res)
	var work float64
	for _, l := range be.(backend.TrafficCounter).Traffic() {
		work += l.Seconds
	}
	for _, m := range be.(backend.TimePredictor).Predicted().KernelS {
		for _, s := range m {
			work += s
		}
	}
	return loss, res.Figures["chunked"].(*ChunkedFigures), work
}

// trainOneEpoch sets up chunked training of the config sets on Cora
// (the clocks off when off), clears the backend's counters and trains one
// epoch; it returns the run, its backend and the loss. The test's cleanup
// releases them.
func trainOneEpoch(t *testing.T, sets []string, off bool) (*chunkedRun, backend.Backend, float64) {
	t.Helper()
	ctx := context.Background()
	cfg := testkit.MustParse(t, testkit.CoraBase, sets...)
	env, _, closeEnv, err := train.NewEnv(ctx, cfg, testkit.TestHost(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeEnv)
	st, err := newChunkedRun(ctx, cfg, *cfg.Strategy.Module.(*Chunked), steprun.EnvOf(env))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Release)
	st.clocks.off = off
	env.Backend.(interface{ ResetTraffic() }).ResetTraffic()
	loss, err := st.Epoch(ctx, 1, func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	return st, env.Backend, loss
}
