package minibatch

import (
	"context"
	"slices"
	"testing"

	"strata/plugins/strategy/internal/testkit"
)

// TestReplicasFollowTheSchedule trains data-parallel on two simulated
// devices with SGD, gradient clipping and a rate halved every epoch: the
// second replica's optimizer (the strategy's own) must take each epoch's
// rate and clip as the loop's does, so that both replicas hold the same
// parameters, bit for bit, after every epoch.
func TestReplicasFollowTheSchedule(t *testing.T) {
	cfg := testkit.MustParse(t, testkit.CoraBase, `train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[5, 5]",
		"train.batch_size=512", `train.backend="sim"`, "devices.count=2", `train.optimizer="sgd"`, "train.momentum=0.9", "train.lr=0.5",
		"train.grad_clip=0.05", "train.lr_schedule.name=step", "train.lr_schedule.step_size=1", "train.lr_schedule.gamma=0.5")
	env, st := testkit.NewTestStepper(t, cfg)
	m := st.(*miniBatches)
	if len(m.replicas) != 2 {
		t.Fatalf("%d replicas, want 2", len(m.replicas))
	}
	opt, err := env.NewOptimizer(env.Backend)
	if err != nil {
		t.Fatal(err)
	}
	for e := range 3 {
		env.SetEpoch(e)
		if _, err := st.Epoch(context.Background(), uint64(e+1), func() error { return opt.Step(st.Params().List()) }); err != nil {
			t.Fatal(err)
		}
		a, err := m.replicas[0].PS.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		b, err := m.replicas[1].PS.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		for name, v := range a {
			if !slices.Equal(v, b[name]) {
				t.Fatalf("epoch %d: the replicas' %s differ (largest relative difference %.3g)", e, name, testkit.RelDiff(b, a))
			}
		}
	}
}
