package hybrid

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strata/core/backend"
	"strata/core/backend/cpu"
	"strata/core/config"
	"strata/core/ir"
	"strata/core/tensor"
	"strata/core/train"
	"strata/plugins/strategy/internal/testkit"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// hybridBase is a two-layer run on Cora with enough training nodes for
// several batches.
const hybridBase = testkit.CoraBase + `
[sampler]
name = "uniform"
fanouts = [4, 6]
`

// oneEpoch builds the stepper cfg selects, runs one epoch with the loop's
// optimizer and returns the parameters and the stepper's figures.
func oneEpoch(t *testing.T, cfg *config.Config) (map[string][]float64, train.EpochRecord) {
	t.Helper()
	ctx := context.Background()
	env, st := testkit.NewTestStepper(t, cfg)
	opt, err := env.NewOptimizer(env.Backend)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Epoch(ctx, 11, func() error { return opt.Step(st.Params().List()) }); err != nil {
		t.Fatal(err)
	}
	snap, err := st.Params().Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var rec train.EpochRecord
	if r, ok := st.(train.EpochReporter); ok {
		r.ReportEpoch(&rec)
	}
	return snap, rec
}

// TestHybridEqualsMinibatch: with DRM off and a fixed split, an epoch of
// hybrid training with every dropout on leaves the parameters of
// single-replica mini-batch training on the same global batches, whatever
// the split between CPU trainers and devices: a batch's masks are keyed
// by its rows' global ids under one seed per batch, so the trainers
// differ from one replica only in the order of the gradient sums (each
// trainer's rows, then the host all-reduce in trainer order). In float64
// that is the 1e-12 of TestSplitsMatchFullGraph. GCN, GraphSAGE, GAT (with
// attention dropout) and GIN; -short runs half the splits of each.
func TestHybridEqualsMinibatch(t *testing.T) {
	for mi, model := range []string{"gcn", "sage", "gat", "gin"} {
		common := append(testkit.SplitDropouts(model), `train.dtype="float64"`, "train.batch_size=48", `data.split="random-20-30-seed0"`)
		ref, _ := oneEpoch(t, testkit.MustParse(t, hybridBase, append(common, `model.name="`+model+`"`, `train.mode="minibatch"`)...))
		cases := []struct {
			name string
			sets []string
		}{
			{"cpu backend, one CPU trainer", []string{"hybrid.cpu_share=1"}},
			{"cpu backend, three CPU trainers", []string{"hybrid.cpu_share=1", "hybrid.cpu_trainers=3"}},
			{"one device only", []string{`train.backend="sim"`, "hybrid.cpu_share=0", "hybrid.cpu_trainers=0"}},
			{"two devices + CPU, 30% CPU", []string{`train.backend="sim"`, "devices.count=2", "hybrid.cpu_share=0.3"}},
			{"two devices + two CPU, 70% CPU, no prefetch", []string{`train.backend="sim"`, "devices.count=2", "hybrid.cpu_share=0.7", "hybrid.cpu_trainers=2", "hybrid.prefetch=false"}},
			{"one device + CPU, all on the CPU", []string{`train.backend="sim"`, "hybrid.cpu_share=1"}},
			{"two devices + CPU, sampled on the devices", []string{`train.backend="sim"`, "devices.count=2", "hybrid.cpu_share=0.3", `hybrid.sample_on="device"`}},
		}
		for ci, c := range cases {
			if testing.Short() && (ci+mi)%2 != 0 {
				continue
			}
			t.Run(model+"/"+c.name, func(t *testing.T) {
				got, _ := oneEpoch(t, testkit.MustParse(t, hybridBase, append(append(common, `model.name="`+model+`"`, `train.mode="hybrid"`), c.sets...)...))
				if d := testkit.MaxRelDiff(t, got, ref); d > testkit.SplitTol {
					t.Fatalf("parameters differ from mini-batch training's by %.3g (relative)", d)
				}
			})
		}
	}
}

// TestHybridPerTrainer: with hybrid.batching = "per-trainer" every device
// trains a batch of train.batch_size nodes each step and the CPU trainers
// the share of the step besides (c / (devices' + c) = cpu_share, at most
// the batch size each), so an epoch is single-replica mini-batch training
// on batches of devices × batch size + c nodes, to the split tolerance
// (see TestHybridEqualsMinibatch), and has fewer steps than split batching.
func TestHybridPerTrainer(t *testing.T) {
	common := append(testkit.SplitDropouts("sage"), `model.name="sage"`, `train.dtype="float64"`, `data.split="random-20-30-seed0"`)
	cases := []struct {
		name  string
		sets  []string
		batch int // the mini-batch of the same steps
	}{
		// 2 devices × 24 = 48; c = round(0.25/0.75 × 48) = 16.
		{"two devices + CPU, 25% CPU", []string{"devices.count=2", "hybrid.cpu_share=0.25"}, 64},
		// c = round(0.6/0.4 × 48) = 72, capped at one batch of 24.
		{"two devices + CPU, capped", []string{"devices.count=2", "hybrid.cpu_share=0.6"}, 72},
		// c = round(0.5/0.5 × 24) = 24, over two CPU trainers.
		{"one device + two CPU, no prefetch", []string{"hybrid.cpu_share=0.5", "hybrid.cpu_trainers=2", "hybrid.prefetch=false"}, 48},
		{"devices only", []string{"devices.count=2", "hybrid.cpu_share=0", "hybrid.cpu_trainers=0"}, 48},
	}
	for i, c := range cases {
		if testing.Short() && i >= 2 {
			continue // -short: the plain and the capped CPU batch
		}
		t.Run(c.name, func(t *testing.T) {
			ref, _ := oneEpoch(t, testkit.MustParse(t, hybridBase, append(common, `train.mode="minibatch"`, fmt.Sprintf("train.batch_size=%d", c.batch))...))
			sets := append(append(common, `train.mode="hybrid"`, `train.backend="sim"`, "train.batch_size=24", `hybrid.batching="per-trainer"`), c.sets...)
			got, rec := oneEpoch(t, testkit.MustParse(t, hybridBase, sets...))
			if d := testkit.MaxRelDiff(t, got, ref); d > testkit.SplitTol {
				t.Fatalf("parameters differ from mini-batch training on batches of %d by %.3g (relative)", c.batch, d)
			}
			train := 20 * 7 // random-20-30: 20 training nodes per class, 7 classes on Cora
			if steps, want := len(strings.Split(rec.Extra["hybrid_step_shares"], ";")), (train+c.batch-1)/c.batch; steps != want {
				t.Errorf("%d steps, want %d", steps, want)
			}
		})
	}
}

// TestHybridCPUTrainerThreads: the threads a CPU trainer runs on do not
// change its result (the cpu backend is deterministic in the thread
// count), so balance thread cannot change what is learned.
func TestHybridCPUTrainerThreads(t *testing.T) {
	sets := []string{"model.dropout=0.5", "train.batch_size=64", `train.mode="hybrid"`, "hybrid.cpu_share=1"}
	one, _ := oneEpoch(t, testkit.MustParse(t, hybridBase, append(sets, "hybrid.threads=1")...))
	all, _ := oneEpoch(t, testkit.MustParse(t, hybridBase, append(sets, fmt.Sprintf("hybrid.threads=%d", runtime.NumCPU()))...))
	for name, want := range one {
		for i := range want {
			if all[name][i] != want[i] {
				t.Fatalf("%s[%d]: %v with one thread, %v with %d", name, i, want[i], all[name][i], runtime.NumCPU())
			}
		}
	}
}

// TestHybridCPUTrainerRecycles: a CPU trainer binds its steps on a
// recycling view of the cpu backend, so its programs' buffers come from
// the pool (backend.Recycler); the run's own backend does not recycle.
func TestHybridCPUTrainerRecycles(t *testing.T) {
	cfg := testkit.MustParse(t, hybridBase, `train.mode="hybrid"`, "hybrid.cpu_share=1", "train.batch_size=64")
	_, st := testkit.NewTestStepper(t, cfg)
	s := st.(*hybridStepper)
	for name, c := range map[string]struct {
		be      backend.Backend
		recycle bool
	}{"the CPU trainer's step": {s.trainers[s.nDev].runner(1).Env.Be, true}, "the run's backend": {s.e.Be, false}} {
		be, ok := c.be.(*cpu.Backend)
		if !ok {
			t.Fatalf("%s: backend %T, want the cpu backend", name, c.be)
		}
		before := be.PoolStats()
		x, err := be.AllocRecycled(tensor.Float32, []int{1 << 20}, tensor.Host)
		if err != nil {
			t.Fatal(err)
		}
		be.Release(x)
		if used := be.PoolStats() != before; used != c.recycle {
			t.Errorf("%s: the pool was used: %v, want %v", name, used, c.recycle)
		}
	}
}

// TestHybridPredictedDRMDeterministic: with hybrid.drm = "predicted" the
// adjustments come from the performance model, so two runs adjust alike;
// from 90% of the work on the CPU they move work to the devices.
func TestHybridPredictedDRMDeterministic(t *testing.T) {
	sets := []string{`train.mode="hybrid"`, `train.backend="sim"`, "devices.count=2", "hybrid.cpu_share=0.9", `hybrid.drm="predicted"`, "hybrid.cpu_gbps=20",
		"hybrid.cpu_gflops=200", "hybrid.agg_gbps=50", "hybrid.bind_meps=50", "hybrid.dropout_meps=2000",
		"train.batch_size=16", `data.split="random-20-30-seed0"`}
	var logs [2]string
	var shares [2]string
	for i := range logs {
		_, rec := oneEpoch(t, testkit.MustParse(t, hybridBase, sets...))
		logs[i], shares[i] = rec.Extra["hybrid_drm_log"], rec.Extra["hybrid_step_shares"]
	}
	if logs[0] == "" || !strings.Contains(logs[0], "work 0.900->") {
		t.Fatalf("no balance-work adjustment from a 90%% CPU share: log %q", logs[0])
	}
	if logs[0] != logs[1] || shares[0] != shares[1] {
		t.Errorf("two runs adjusted differently:\n%s\n%s\nshares %s vs %s", logs[0], logs[1], shares[0], shares[1])
	}
}

// TestHybridCancelNoLeak: an epoch cancelled mid-way (and one failing in
// the optimizer step) returns, every pipeline goroutine ends, and the
// stepper holds no more than before the epoch.
func TestHybridCancelNoLeak(t *testing.T) {
	for _, prefetch := range []bool{true, false} {
		t.Run(fmt.Sprintf("prefetch=%v", prefetch), func(t *testing.T) {
			cfg := testkit.MustParse(t, hybridBase, `train.mode="hybrid"`, `train.backend="sim"`, "devices.count=2", "hybrid.cpu_share=0.5",
				"train.batch_size=8", "train.prefetch=1", fmt.Sprintf("hybrid.prefetch=%v", prefetch))
			ctx := context.Background()
			env, st := testkit.NewTestStepper(t, cfg)
			// A whole epoch first: the optimizers allocate their state on
			// their first step.
			if _, err := st.Epoch(ctx, 2, func() error { return nil }); err != nil {
				t.Fatal(err)
			}
			before, goroutines := env.Backend.Stats().InUse, runtime.NumGoroutine()
			cctx, cancel := context.WithCancel(ctx)
			steps := 0
			_, err := st.Epoch(cctx, 3, func() error {
				if steps++; steps == 3 {
					cancel()
				}
				return nil
			})
			if !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled epoch: %v, want context.Canceled", err)
			}
			boom := errors.New("boom")
			if _, err := st.Epoch(ctx, 4, func() error { return boom }); !errors.Is(err, boom) {
				t.Errorf("failing step: %v, want boom", err)
			}
			for tier, n := range env.Backend.Stats().InUse {
				if n != before[tier] {
					t.Errorf("%s holds %d bytes after the epochs, %d before", tier, n, before[tier])
				}
			}
			deadline := time.Now().Add(5 * time.Second)
			for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > goroutines {
				t.Errorf("%d goroutines after the epochs, %d before: a stage leaked", n, goroutines)
			}
		})
	}
}

// TestDRMDecide checks Alg. 1's cases.
func TestDRMDecide(t *testing.T) {
	s := drmState{share: 0.5, sample: 2, load: 2, train: 4}
	cases := []struct {
		name  string
		t     stageTimes
		share float64
		th    [3]int
		what  string
	}{
		{"accelerator bottleneck: work to the CPU", stageTimes{SC: 1, Load: 1, TC: 2, TA: 6}, 0.6, [3]int{2, 2, 4}, "work 0.500->0.600"},
		{"transfer bundled with the accelerator", stageTimes{SC: 1, Load: 1, TC: 2, Tran: 6, TA: 1}, 0.6, [3]int{2, 2, 4}, "work"},
		{"CPU trainer bottleneck, accelerator fastest: work to the devices", stageTimes{SC: 2, Load: 3, TC: 8, TA: 1}, 0.4, [3]int{2, 2, 4}, "work 0.500->0.400"},
		{"CPU trainer bottleneck, sampler fastest: a thread", stageTimes{SC: 1, Load: 3, TC: 8, TA: 2}, 0.5, [3]int{1, 2, 5}, "thread sample->cpu_train"},
		{"loader bottleneck: a thread from the fastest CPU task", stageTimes{SC: 2, Load: 9, TC: 1, TA: 3}, 0.5, [3]int{2, 3, 3}, "thread cpu_train->load"},
		{"balanced within 5%", stageTimes{SC: 1, Load: 1, TC: 5, TA: 5.1}, 0.5, [3]int{2, 2, 4}, ""},
		{"nothing measured", stageTimes{}, 0.5, [3]int{2, 2, 4}, ""},
		{"small imbalance: proportional move", stageTimes{SC: 1, Load: 1, TC: 4, TA: 5}, 0.556, [3]int{2, 2, 4}, "work 0.500->0.556"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, what := drmDecide(s, s, c.t, 0.1, true, nil)
			if math.Abs(got.share-c.share) > 1e-9 || got.sample != c.th[0] || got.load != c.th[1] || got.train != c.th[2] || !strings.HasPrefix(what, c.what) || (c.what == "") != (what == "") {
				t.Errorf("got share %v threads %d/%d/%d %q, want %v %v %q", got.share, got.sample, got.load, got.train, what, c.share, c.th, c.what)
			}
		})
	}
	// Without prefetch a side's transfer precedes its training: the
	// devices' 3 + 3 s outweigh the CPU trainer's 0.5 + 4 s, although each
	// device stage alone is faster than the CPU trainer.
	seq := stageTimes{SC: 1, Load: 1, Tran: 3, TA: 3, TC: 4, Bind: 0.5}
	if got, what := drmDecide(s, s, seq, 0.1, false, nil); got.share <= 0.5 || !strings.HasPrefix(what, "work") {
		t.Errorf("sequential stages: share %v %q, want work to the CPU", got.share, what)
	}
	if got, _ := drmDecide(s, s, seq, 0.1, true, nil); got.share > 0.5 {
		t.Errorf("overlapping stages: share %v, want no work to the CPU (the CPU trainer is the slowest stage)", got.share)
	}
	// One thread each: balance thread has nothing to move, so a CPU
	// trainer bottleneck balances work instead.
	one := drmState{share: 0.9, sample: 1, load: 1, train: 1}
	if got, what := drmDecide(one, one, stageTimes{SC: 1, Load: 0.5, TC: 9, TA: 2}, 0.1, true, nil); got.share != 0.8 || !strings.HasPrefix(what, "work") {
		t.Errorf("CPU-bound with one thread per task: share %v %q, want 0.8 by balance work", got.share, what)
	}
}

// TestDRMDecideSampling checks Alg. 1's branches with the devices
// sampling (lines 11-12, 17-24, 25-32): T_SA is a task of its own and
// balance work moves sampling between the CPU sampler and the devices'.
// The CPU trainers' parts have 100 edges, the devices' 400, and half of
// the devices' sampling is on the CPU.
func TestDRMDecideSampling(t *testing.T) {
	s := drmState{share: 0.5, sampleCPU: 0.5, sample: 2, load: 2, train: 4}
	sw := &samplingWork{cpuParts: 100, devParts: 400}
	cases := []struct {
		name          string
		t             stageTimes
		share, sample float64
		th            [3]int
		what          string
	}{
		// 1/300 s per edge on the CPU, 6/200 on the devices: equal at
		// x = (12 - 1/3) / (4/3 + 12) = 0.875, moved by the step.
		{"device sampler bottleneck: sampling to the CPU", stageTimes{SC: 1, SA: 6, Load: 1, TC: 2, TA: 2}, 0.5, 0.6, [3]int{2, 2, 4}, "sampling 0.500->0.600"},
		{"CPU sampler bottleneck, device sampler fastest: sampling to the devices", stageTimes{SC: 8, SA: 0.5, Load: 2, TC: 3, TA: 4}, 0.5, 0.4, [3]int{2, 2, 4}, "sampling 0.500->0.400"},
		{"CPU sampler bottleneck, accelerator fastest, device sampler second", stageTimes{SC: 8, SA: 1, Load: 2, TC: 3, TA: 0.5}, 0.5, 0.4, [3]int{2, 2, 4}, "sampling 0.500->0.400"},
		{"CPU sampler bottleneck, loader fastest: a thread", stageTimes{SC: 8, SA: 3, Load: 1, TC: 2, TA: 4}, 0.5, 0.5, [3]int{3, 1, 4}, "thread load->sample"},
		{"CPU trainer bottleneck, device sampler fastest, accelerator second: work to the devices", stageTimes{SC: 2, SA: 0.5, Load: 3, TC: 8, TA: 1}, 0.4, 0.5, [3]int{2, 2, 4}, "work 0.500->0.400"},
		{"the accelerator's side leaves its sampler out", stageTimes{SC: 1, SA: 5, Load: 1, TC: 4, TA: 4.1}, 0.5, 0.6, [3]int{2, 2, 4}, "sampling 0.500->0.600"},
		{"samplers balanced within 5%", stageTimes{SC: 5, SA: 5.1, Load: 1, TC: 2, TA: 2}, 0.5, 0.5, [3]int{2, 2, 4}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, what := drmDecide(s, s, c.t, 0.1, true, sw)
			if math.Abs(got.share-c.share) > 1e-9 || math.Abs(got.sampleCPU-c.sample) > 1e-9 || got.sample != c.th[0] || got.load != c.th[1] || got.train != c.th[2] ||
				!strings.HasPrefix(what, c.what) || (c.what == "") != (what == "") {
				t.Errorf("got share %v, sampling %v, threads %d/%d/%d %q; want %v, %v, %v %q", got.share, got.sampleCPU, got.sample, got.load, got.train, what, c.share, c.sample, c.th, c.what)
			}
		})
	}
	// One thread each: a CPU sampler bottleneck with no thread to give
	// balances sampling instead.
	one := drmState{share: 0.5, sampleCPU: 0.5, sample: 1, load: 1, train: 1}
	if got, what := drmDecide(one, one, stageTimes{SC: 8, SA: 3, Load: 1, TC: 2, TA: 4}, 0.1, true, sw); got.sampleCPU != 0.4 || !strings.HasPrefix(what, "sampling") {
		t.Errorf("CPU sampler bound with one thread per task: sampling %v %q, want 0.4", got.sampleCPU, what)
	}
}

// TestHybridDRMMovesSampling: with the devices sampling and a slow CPU
// sampler (predicted DRM), DRM gives the devices back the share of their
// sampling the CPU sampler started with, step by step, and the CPU
// sampler's predicted time falls with it.
func TestHybridDRMMovesSampling(t *testing.T) {
	cfg := testkit.MustParse(t, hybridBase, `train.mode="hybrid"`, `train.backend="sim"`, "devices.count=2", "hybrid.cpu_share=0.2",
		`hybrid.sample_on="device"`, "hybrid.sample_cpu_share=0.5", `hybrid.drm="predicted"`, "hybrid.sample_meps=0.01",
		"train.batch_size=16", "train.prefetch=1", `data.split="random-20-30-seed0"`)
	_, rec := oneEpoch(t, cfg)
	log := rec.Extra["hybrid_drm_log"]
	if !strings.Contains(log, "sampling 0.500->0.450") {
		t.Fatalf("DRM log %q: want the CPU sampler's share of the devices' sampling moved down from 0.5 by drm_step", log)
	}
	for _, a := range strings.Split(log, ";") {
		if _, what, _ := strings.Cut(a, ":"); strings.HasPrefix(what, "sampling") {
			var from, to float64
			if _, err := fmt.Sscanf(what, "sampling %f->%f", &from, &to); err != nil || to >= from {
				t.Errorf("adjustment %q: want sampling moved to the devices", a)
			}
		}
	}
}

// TestHybridBadConfig: hybrid keys that cannot work are errors naming
// the key.
// TestHybridSectionWithAnotherMode: [hybrid] belongs to strategy.hybrid;
// set under another train.mode it is an error at the section's line
// when parsing, unless it only repeats the defaults.
func TestHybridSectionWithAnotherMode(t *testing.T) {
	_, err := config.Parse("h.toml", []byte(hybridBase), `train.mode="minibatch"`, "hybrid.cpu_share=0.5")
	errs := config.Errors(err)
	if len(errs) != 1 || errs[0].Key != "hybrid" || !strings.Contains(errs[0].Msg, `set train.mode = "hybrid" or remove [hybrid]`) {
		t.Fatalf("error %v, want one naming [hybrid] and the fix", err)
	}
	if _, err := config.Parse("h.toml", []byte(hybridBase), `train.mode="minibatch"`, "hybrid.cpu_share=0.25"); err != nil {
		t.Fatalf("[hybrid] at its defaults under minibatch: %v", err)
	}
}

// TestHybridBadHostValues: a described host's cores and memory bandwidth
// are refused outside their ranges when the config is read, naming the
// key.
func TestHybridBadHostValues(t *testing.T) {
	for _, c := range []struct{ set, key string }{
		{"hybrid.host.cores=0", "hybrid.host.cores"},
		{"hybrid.host.cores=-2", "hybrid.host.cores"},
		{"hybrid.host.mem_gbps=0", "hybrid.host.mem_gbps"},
	} {
		_, err := config.Parse("h.toml", []byte(hybridBase), `train.mode="hybrid"`, `train.backend="sim"`, c.set)
		errs := config.Errors(err)
		if len(errs) != 1 || errs[0].Key != c.key {
			t.Errorf("%s: error %v, want one naming %s", c.set, err, c.key)
		}
	}
}

func TestHybridBadConfig(t *testing.T) {
	cases := []struct {
		name string
		sets []string
		key  string
	}{
		{"no devices", []string{`train.mode="hybrid"`}, "train.backend"},
		{"no devices, drm on", []string{`train.mode="hybrid"`, "hybrid.cpu_share=1", `hybrid.drm="measured"`}, "train.backend"},
		{"zero CPU trainers with DRM", []string{`train.mode="hybrid"`, `train.backend="sim"`, "hybrid.cpu_trainers=0", "hybrid.cpu_share=0", `hybrid.drm="predicted"`}, "hybrid.cpu_trainers"},
		{"zero CPU trainers with a CPU share", []string{`train.mode="hybrid"`, `train.backend="sim"`, "hybrid.cpu_trainers=0"}, "hybrid.cpu_share"},
		{"threads above the cores", []string{`train.mode="hybrid"`, `train.backend="sim"`, fmt.Sprintf("hybrid.threads=%d", runtime.NumCPU()+1)}, "hybrid.threads"},
		{"sampling on the devices without devices", []string{`train.mode="hybrid"`, "hybrid.cpu_share=1", `hybrid.sample_on="device"`}, "hybrid.sample_on"},
		{"no sampler", []string{`train.mode="hybrid"`, `train.backend="sim"`, `sampler.name=""`, "sampler.fanouts=[]"}, "train.mode"},
		{"model share without devices", []string{`train.mode="hybrid"`, `hybrid.cpu_share="model"`}, "hybrid.cpu_share"},
		{"model share without CPU trainers", []string{`train.mode="hybrid"`, `train.backend="sim"`, `hybrid.cpu_share="model"`, "hybrid.cpu_trainers=0"}, "hybrid.cpu_share"},
		{"per-trainer batches without devices", []string{`train.mode="hybrid"`, "hybrid.cpu_share=1", `hybrid.batching="per-trainer"`}, "hybrid.batching"},
		{"per-trainer batches, all on the CPU", []string{`train.mode="hybrid"`, `train.backend="sim"`, "hybrid.cpu_share=1", `hybrid.batching="per-trainer"`}, "hybrid.cpu_share"},
		{"per-trainer batches and no trainer", []string{`train.mode="hybrid"`, "hybrid.cpu_trainers=0", "hybrid.cpu_share=0", `hybrid.batching="per-trainer"`}, "train.backend"},
		{"model share, devices without kernel times", []string{`train.mode="hybrid"`, `train.backend="sim"`, `hybrid.cpu_share="model"`, `devices.cost_model="none"`}, "hybrid.cpu_share"},
		{"a described host on the cpu backend", []string{`train.mode="hybrid"`, "hybrid.cpu_share=1", "hybrid.host.cores=128"}, "hybrid.host"},
		{"a described host, measured DRM", []string{`train.mode="hybrid"`, `train.backend="sim"`, "hybrid.host.cores=128", `hybrid.drm="measured"`}, "hybrid.drm"},
		{"a described host, calibrated", []string{`train.mode="hybrid"`, `train.backend="sim"`, "hybrid.host.mem_gbps=205", "hybrid.calibrate=true"}, "hybrid.calibrate"},
		{"CPU sampling share without device sampling", []string{`train.mode="hybrid"`, `train.backend="sim"`, "hybrid.sample_cpu_share=0.5"}, "hybrid.sample_cpu_share"},
		{"threads above the described host's cores", []string{`train.mode="hybrid"`, `train.backend="sim"`, "hybrid.host.cores=4", "hybrid.threads=8"}, "hybrid.threads"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := hybridBase
			if c.name == "no sampler" {
				text = testkit.CoraBase
				c.sets = c.sets[:2]
			}
			cfg := testkit.MustParse(t, text, c.sets...)
			err := train.Check(context.Background(), cfg, testkit.TestHost(t), true)
			errs := config.Errors(err)
			if len(errs) != 1 || errs[0].Key != c.key {
				t.Fatalf("error %v, want one config error naming %s", err, c.key)
			}
		})
	}
}

// TestHybridDRMConverges: from 90% of the work on the CPU, predicted DRM
// brings the CPU share within 0.1 of the best static split (the share
// whose predicted epoch is fastest, by a sweep with DRM off) within a
// few epochs. The devices are made slow (10 GB/s, 100 GFLOP/s, 4 GB/s
// links) and the CPU fast (its memory, GEMM, aggregation, bind and
// dropout rates: the model prices each), so that the best split is not
// at an end. Long: it trains 15 epochs.
func TestHybridDRMConverges(t *testing.T) {
	if testing.Short() {
		t.Skip("a sweep of 11 static splits and 4 epochs of DRM (about 20 s); TestHybridPredictedDRMDeterministic covers DRM in -short")
	}
	sets := []string{`train.mode="hybrid"`, `train.backend="sim"`, "devices.host_gbps=[4.0,4.0]", "devices.mem_gbps=10", "devices.peak_gflops=100", "hybrid.cpu_gbps=20",
		"hybrid.cpu_gflops=200", "hybrid.agg_gbps=50", "hybrid.bind_meps=50", "hybrid.dropout_meps=2000",
		"train.batch_size=16", "train.prefetch=1", `data.split="random-20-30-seed0"`, `model.name="sage"`}
	predicted := func(share string, drm string) (float64, train.EpochRecord) {
		cfg := testkit.MustParse(t, hybridBase, append(sets, "hybrid.cpu_share="+share, `hybrid.drm="`+drm+`"`)...)
		_, st := testkit.NewTestStepper(t, cfg)
		var rec train.EpochRecord
		for ep := range 5 {
			if _, err := st.Epoch(context.Background(), uint64(ep), func() error { return nil }); err != nil {
				t.Fatal(err)
			}
			rec = train.EpochRecord{}
			st.(train.EpochReporter).ReportEpoch(&rec)
			if drm == "off" {
				break
			}
		}
		return st.(train.Pipelined).PredictedS(), rec
	}
	best, bestS := 0.0, math.Inf(1)
	for i := 0; i <= 10; i++ {
		share := float64(i) / 10
		if s, _ := predicted(fmt.Sprint(share), "off"); s < bestS {
			best, bestS = share, s
		}
	}
	// HyScale's mapping at compile time (cpu_share = "model") lands on
	// the best static share, to the sweep's step.
	_, mapped := predicted(`"model"`, "off")
	var model float64
	fmt.Sscan(mapped.Extra["hybrid_cpu_share"], &model)
	if math.Abs(model-best) > 0.1 {
		t.Errorf("cpu_share = \"model\" chose %.2f, best static share %.1f", model, best)
	}
	_, rec := predicted("0.9", "predicted")
	var final float64
	fmt.Sscan(rec.Extra["hybrid_cpu_share"], &final)
	t.Logf("best static share %.1f (%.4g s/epoch); the model's mapping %.2f; DRM from 0.9 after 5 epochs: %.3f; last epoch's steps: %s", best, bestS, model, final, rec.Extra["hybrid_step_shares"])
	if best == 0.9 || best == 0 || best == 1 {
		t.Fatalf("best static share %.1f: the devices are not slow enough to test convergence", best)
	}
	if math.Abs(final-best) > 0.1 {
		t.Errorf("DRM ended at CPU share %.3f, best static share %.1f", final, best)
	}
}

// TestHyscaleCostModel checks costmodel.hyscale's equations against the
// paper's formulas evaluated here.
func TestHyscaleCostModel(t *testing.T) {
	cm, release, err := train.LoadCostModel(context.Background(), testkit.TestHost(t), "costmodel.hyscale")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	const S = 4.0
	// Two layers: |E| 1000 and 200, aggregated widths 64 and 16, MACs 5e6 and 1e5.
	agg := []float64{1000 * 64 * S / 20e9, 200 * 16 * S / 20e9}
	upd := []float64{2 * 5e6 / 100e9, 2 * 1e5 / 100e9}
	trainer := agg[0] + upd[0] + agg[1] + upd[1] + upd[0] + agg[1] + upd[1] // Eq. 10, ⊕ = +
	fpga := max(agg[0], upd[0]) + max(agg[1], upd[1]) + upd[0] + max(agg[1], upd[1])
	cases := []struct {
		name string
		op   int32
		in   []float64
		want float64
	}{
		{"sampling", hsSample, []float64{3e6, 2, 10}, 3e6 / 20e6},
		{"Eq. 7 loading", hsLoad, []float64{5000, 100, S, 2, 4}, 5000 * 100 * S / 8e9},
		{"Eq. 8 transfer", hsTransfer, []float64{5000, 100, S, 16, 1e6}, (5000*100*S + 1e6) / 16e9},
		{"Eq. 10-12 trainer", hsTrainer, []float64{0, 20, 100, S, 2, 1000, 64, 5e6, 200, 16, 1e5}, trainer},
		{"Eq. 10 pipelined (FPGA)", hsTrainer, []float64{1, 20, 100, S, 2, 1000, 64, 5e6, 200, 16, 1e5}, fpga},
		{"Eq. 13 sync", hsSync, []float64{1e6, S, 16}, 2 * 1e6 * S / 16e9},
		{"a layer's pass with dropout", hsLayer, []float64{0, 20, 100, S, 1000, 64, 5e6, 3e5, 150}, 1000*64*S/20e9 + 2*5e6/100e9 + 3e5/150e6},
		{"a layer's pass, pipelined", hsLayer, []float64{1, 20, 100, S, 1000, 64, 5e6, 0, 0}, max(1000*64*S/20e9, 2*5e6/100e9)},
		{"CPU bind", hsBind, []float64{2e6, 4, 1e8, 2}, 2e6/4e6 + 1e8/2e9},
		{"sampling on a device", hsDeviceSample, []float64{3.2e7, 900, 6.4e6, 16}, 3.2e7/900e9 + 6.4e6/16e9},
		{"iteration, CPU trainers apart, pipelined", hsHybridIteration, []float64{1, 2, 3, 3.5, 4, 2, 0.5, 1e6, 1}, 4.5},
		{"iteration, CPU trainers apart, in sequence", hsHybridIteration, []float64{1, 2, 3, 0.5, 4, 5, 0.5, 1e6, 0}, 1 + 2 + 7 + 0.5},
		{"iteration, host stages bounded by their shared threads", hsHybridIteration, []float64{1, 2, 3, 3.5, 4, 2, 0.5, 1e6, 1, 12, 2}, 6},
		{"iteration, host stages within their shared threads", hsHybridIteration, []float64{1, 2, 3, 3.5, 4, 2, 0.5, 1e6, 1, 6, 2}, 4.5},
		{"iteration in sequence: no shared-thread bound", hsHybridIteration, []float64{1, 2, 3, 0.5, 4, 5, 0.5, 1e6, 0, 100, 1}, 1 + 2 + 7 + 0.5},
		{"Eq. 7 with fresh staging memory", hsLoad, []float64{5000, 100, S, 2, 4, 3e8, 6}, 5000*100*S/8e9 + 3e8/6e9},
		{"Eq. 6 pipelined iteration", hsIteration, []float64{1, 2, 3, 4, 0.5, 1e6, 1}, 4.5},
		{"stages in sequence", hsIteration, []float64{1, 2, 3, 4, 0.5, 1e6, 0}, 10.5},
	}
	for _, c := range cases {
		out, err := cm.Predict(c.op, c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if math.Abs(out[0]-c.want) > 1e-12*max(1, c.want) {
			t.Errorf("%s: %g, want %g", c.name, out[0], c.want)
		}
	}
	if out, _ := cm.Predict(hsIteration, []float64{1, 2, 3, 4, 0.5, 9e6, 1}); math.Abs(out[1]-2) > 1e-12 {
		t.Errorf("Eq. 5: %g MTEPS for 9e6 edges in 4.5 s, want 2", out[1])
	}
	if _, err := cm.Predict(hsLoad, []float64{-1, 100, S, 2, 4}); err == nil {
		t.Error("a negative row count was accepted")
	}
	if _, err := cm.Predict(hsTrainer, []float64{0, 20, 100, S, 3, 1000, 64, 5e6}); err == nil {
		t.Error("three layers with the sizes of one were accepted")
	}
}

// TestHybridSampleOnDevice: with hybrid.sample_on = "device" each device
// trainer's part is sampled through the topology held in its own memory
// (core/store): the blocks equal the CPU sampler's on the host graph for
// the same seed, the reads are counted, and T_SA is their time on the
// device's memory. With a share of the devices' sampling on the CPU
// sampler (DRM's balance work between T_SC and T_SA) the blocks are the
// same, the device reads less (nothing at share 1) and the CPU sampler
// reads the rest.
func TestHybridSampleOnDevice(t *testing.T) {
	var prevLocal float64 = math.Inf(1)
	for _, share := range []float64{0, 0.4, 1} {
		t.Run(fmt.Sprintf("cpu share %g", share), func(t *testing.T) {
			cfg := testkit.MustParse(t, hybridBase, `train.mode="hybrid"`, `train.backend="sim"`, "devices.count=2", "hybrid.cpu_share=0.3",
				`hybrid.sample_on="device"`, "train.batch_size=64", fmt.Sprintf("hybrid.sample_cpu_share=%g", share))
			env, st := testkit.NewTestStepper(t, cfg)
			s := st.(*hybridStepper)
			nodes := env.Dataset.Train[:64]
			b := &hybridBatch{n: 3, st: s.state}
			seed := uint64(11)
			s.sample(context.Background(), b, nodes, seed)
			if b.err != nil {
				t.Fatal(b.err)
			}
			var local float64
			rng := seed*0x9e3779b97f4a7c15 + 3 // the seed of batch 3, as sample derives it
			for k, part := range s.split(nodes, s.state.share, cut{}) {
				want, err := s.sampler.Sample(context.Background(), s.e.Adjs.Adj, part, rng)
				if err != nil {
					t.Fatal(err)
				}
				got := b.parts[k].blocks
				if len(got) != len(want) {
					t.Fatalf("%s: %d blocks, want %d", s.trainers[k].name, len(got), len(want))
				}
				for l := range want {
					if !slices.Equal(got[l].Src, want[l].Src) || !slices.Equal(got[l].Dst, want[l].Dst) ||
						!slices.Equal(got[l].Adj.Indptr, want[l].Adj.Indptr) || !slices.Equal(got[l].Adj.Idx32, want[l].Adj.Idx32) {
						t.Fatalf("%s block %d differs from the CPU sampler's", s.trainers[k].name, l)
					}
				}
				pw := b.work.parts[k]
				dev := !s.trainers[k].cpu
				if dev && (share < 1) != (pw.sampleLocal > 0) || !dev && pw.sampleLocal > 0 {
					t.Errorf("%s: %g bytes read in device memory at CPU share %g", s.trainers[k].name, pw.sampleLocal, share)
				}
				if dev && (share > 0) != (pw.hostNbrs > 0) {
					t.Errorf("%s: the CPU sampler read %g of its neighbours at CPU share %g", s.trainers[k].name, pw.hostNbrs, share)
				}
				local += pw.sampleLocal
			}
			if local >= prevLocal {
				t.Errorf("the devices read %g bytes at CPU share %g, not less than %g at a smaller share", local, share, prevLocal)
			}
			prevLocal = local
			if (share < 1) != (b.times.SA > 0) {
				t.Errorf("T_SA = %g at CPU share %g", b.times.SA, share)
			}
			pred, err := s.perf.predict(&b.work, b.st, 1)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(pred.SA-b.times.SA) > 1e-12 {
				t.Errorf("predicted T_SA %g, simulated %g", pred.SA, b.times.SA)
			}
		})
	}
}

// TestHybridCalibrate: the probes measure every value of the CPU's
// machine description (positive, finite), an epoch predicts with them,
// and its steps are predicted again with the mean of the calibrations
// before and after it.
func TestHybridCalibrate(t *testing.T) {
	cfg := testkit.MustParse(t, hybridBase, `train.mode="hybrid"`, "hybrid.cpu_share=1", "hybrid.calibrate=true", "model.dropout=0.5", "train.batch_size=64")
	_, st := testkit.NewTestStepper(t, cfg)
	s := st.(*hybridStepper)
	if _, err := st.Epoch(context.Background(), 1, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	br := s.stats.bracket
	if br == nil || len(br.perStep) != s.stats.steps || !(br.epochS > 0) {
		t.Fatalf("the epoch was not predicted again with the calibrations before and after it: %+v", br)
	}
	m := br.before // the epoch calibrated before it began
	for name, v := range map[string]float64{"cpu_gflops": m.GFLOPS, "cpu_gbps": m.GBps, "agg_gbps": m.AggGBps, "sample_meps": m.SampleMEPS, "dropout_meps": m.DropMEPS, "bind_meps": m.BindMEPS, "touch_gbps": m.TouchGBps} {
		if !(v > 0) || math.IsInf(v, 0) {
			t.Errorf("%s = %g", name, v)
		}
	}
	if m == machineOf(cfg.Strategy.Module.(*Hybrid).HybridOptions) {
		t.Error("the epoch predicted with the configured machine description, not the calibrated one")
	}
	if p := s.stats.predicted; !(p.TC > 0 && p.Load > 0 && p.SC > 0 && p.Bind > 0) {
		t.Errorf("predicted stage times %+v: a stage without a prediction", p)
	}
	// The bracketed machine lies between the two calibrations, rate by rate.
	for _, r := range [][3]float64{{br.before.GFLOPS, br.after.GFLOPS, br.machine.GFLOPS}, {br.before.GBps, br.after.GBps, br.machine.GBps},
		{br.before.SampleMEPS, br.after.SampleMEPS, br.machine.SampleMEPS}, {br.before.BindMEPS, br.after.BindMEPS, br.machine.BindMEPS}} {
		if lo, hi := min(r[0], r[1]), max(r[0], r[1]); !(r[2] >= lo*(1-1e-12) && r[2] <= hi*(1+1e-12)) {
			t.Errorf("bracketed rate %g outside the calibrations %g and %g", r[2], r[0], r[1])
		}
	}
}

// TestHyscaleModelTerms: the full backward and dropout make the CPU
// trainer's prediction longer than Eq. 10's thin backward, and dropout
// counts only with dropout on.
func TestHyscaleModelTerms(t *testing.T) {
	work := func(cfg *config.Config) (stageTimes, *hybridStepper) {
		_, st := testkit.NewTestStepper(t, cfg)
		s := st.(*hybridStepper)
		b := &hybridBatch{st: s.state}
		s.sample(context.Background(), b, s.e.DS.Train[:64], 1)
		p, err := s.perf.predict(&b.work, b.st, 1)
		if err != nil {
			t.Fatal(err)
		}
		return p, s
	}
	sets := []string{`train.mode="hybrid"`, "hybrid.cpu_share=1", "train.batch_size=64", `model.name="sage"`}
	paper, paperS := work(testkit.MustParse(t, hybridBase, append(sets, "hybrid.paper_model=true", "model.dropout=0")...))
	full, s := work(testkit.MustParse(t, hybridBase, append(sets, "model.dropout=0")...))
	drop, dropS := work(testkit.MustParse(t, hybridBase, append(sets, "model.dropout=0.5")...))
	if !(full.TC > paper.TC) {
		t.Errorf("full backward %g s, Eq. 10's %g s: want longer", full.TC, paper.TC)
	}
	if !(drop.TC > full.TC) {
		t.Errorf("with dropout %g s, without %g s: want longer", drop.TC, full.TC)
	}
	// Staging memory the pool could not recycle adds its first touch to
	// the loading; the paper model keeps Eq. 7 as printed.
	for _, c := range []struct {
		s      *hybridStepper
		longer bool
	}{{s, true}, {paperS, false}} {
		b := &hybridBatch{st: c.s.state}
		c.s.sample(context.Background(), b, c.s.e.DS.Train[:64], 1)
		recycled, err := c.s.perf.predict(&b.work, b.st, 1)
		if err != nil {
			t.Fatal(err)
		}
		b.work.freshBytes = 1e8
		fresh, err := c.s.perf.predict(&b.work, b.st, 1)
		if err != nil {
			t.Fatal(err)
		}
		if (fresh.Load > recycled.Load) != c.longer {
			t.Errorf("paper model %v: loading into fresh memory %g s, recycled %g s: longer %v, want %v", c.s.h.PaperModel, fresh.Load, recycled.Load, fresh.Load > recycled.Load, c.longer)
		}
	}
	if paper.Bind != 0 || !(full.Bind > 0) {
		t.Errorf("CPU bind: %g s (paper model), %g s (ours): want 0 and > 0", paper.Bind, full.Bind)
	}
	// GraphSAGE's first layer: the weight's gradient but not its input's.
	if s.perf.bmacsSrc[0]+s.perf.bmacsDst[0] != s.perf.macsSrc[0]+s.perf.macsDst[0] {
		t.Errorf("layer 1 backward MACs %g+%g, forward %g+%g: want equal (no input gradient)", s.perf.bmacsSrc[0], s.perf.bmacsDst[0], s.perf.macsSrc[0], s.perf.macsDst[0])
	}
	if s.perf.bmacsSrc[1]+s.perf.bmacsDst[1] != 2*(s.perf.macsSrc[1]+s.perf.macsDst[1]) {
		t.Errorf("layer 2 backward MACs %g+%g, forward %g+%g: want twice", s.perf.bmacsSrc[1], s.perf.bmacsDst[1], s.perf.macsSrc[1], s.perf.macsDst[1])
	}
	// Dropout elements per row: the input's dropout is multiplied into
	// its matmuls, which mask the input for the products and again for
	// the weight gradients; layer 2's is formed, and its mask is applied
	// to its value and to its gradient. Twice the width either way.
	for _, op := range dropS.e.Model.Ops {
		if op.Kind != ir.OpDropout || op.Alpha <= 0 {
			continue
		}
		l := op.Layer
		if got, want := dropS.perf.dropSrc[l]+dropS.perf.dropDst[l], 2*float64(op.Shape[1]); got != want {
			t.Errorf("layer %d: %g dropout elements a row, want %g (twice its width %d)", l+1, got, want, op.Shape[1])
		}
	}
}

// TestHybridSampleThreads: the sampler runs a step's parts in parallel,
// one goroutine each, so the model's sampling threads are bounded by the
// parts (by the edges over the largest part when they differ), and parts
// sampled on the devices count neither in the threads nor in the edges.
func TestHybridSampleThreads(t *testing.T) {
	part := func(e ...float64) partWork { return partWork{edges: e} }
	cases := []struct {
		name     string
		parts    []partWork
		cpu      []bool
		onDevice bool
		threads  int
		want     float64
		edges    float64
	}{
		{"one part, four threads", []partWork{part(100, 900)}, []bool{true}, false, 4, 1, 1000},
		{"four equal parts, two threads", []partWork{part(50), part(50), part(50), part(50)}, []bool{true, true, true, true}, false, 2, 2, 200},
		{"three equal parts, four threads", []partWork{part(50), part(50), part(50)}, []bool{true, false, false}, false, 4, 3, 150},
		{"unequal parts: the largest bounds", []partWork{part(300), part(100)}, []bool{true, true}, false, 4, 400.0 / 300, 400},
		{"device parts sampled on the devices", []partWork{part(100), part(100), part(100)}, []bool{true, false, false}, true, 4, 1, 100},
		{"no sampled edges", []partWork{part(0)}, []bool{true}, false, 3, 3, 0},
		{"zero threads count as one", []partWork{part(10), part(10)}, []bool{true, true}, false, 0, 1, 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := &stepWork{parts: c.parts, cpu: c.cpu}
			edges, busy := w.cpuSampled(c.onDevice, c.threads)
			if math.Abs(busy-c.want) > 1e-12 || edges != c.edges {
				t.Errorf("cpuSampled = %v edges on %v threads, want %v on %v", edges, busy, c.edges, c.want)
			}
		})
	}
}

// TestProbeSettlePerThread: a probe's rate is the median of its rounds in
// its unit, per thread it ran on.
func TestProbeSettlePerThread(t *testing.T) {
	for _, c := range []struct {
		threads int
		got     []float64
		unit    float64
		want    float64
	}{
		{0, []float64{3e9, 1e9, 2e9}, 1e9, 2},
		{1, []float64{3e9, 1e9, 2e9}, 1e9, 2},
		{4, []float64{8e6, 4e6, 12e6, 16e6, 20e6}, 1e6, 3},
	} {
		var rate float64
		p := &probe{rate: &rate, unit: c.unit, threads: c.threads, got: c.got}
		p.settle()
		if math.Abs(rate-c.want) > 1e-12 {
			t.Errorf("threads %d, rounds %v: rate %v, want %v", c.threads, c.got, rate, c.want)
		}
	}
}

// TestRunProbesBeside: the beside function runs, looping, for the whole
// of the probes' rounds, is cancelled at their end (runProbes returns
// after it has), and its error is runProbes' error.
func TestRunProbesBeside(t *testing.T) {
	var running, calls atomic.Int32
	beside := func(ctx context.Context) error {
		calls.Add(1)
		running.Store(1)
		defer running.Store(0)
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Millisecond):
		}
		return nil
	}
	var rate float64
	alone := 0
	p := &probe{rate: &rate, unit: 1, f: func() (float64, error) {
		if running.Load() == 0 {
			alone++
		}
		time.Sleep(time.Millisecond)
		return 1, nil
	}}
	if err := runProbes(context.Background(), []*probe{p}, beside); err != nil {
		t.Fatal(err)
	}
	if running.Load() != 0 {
		t.Error("runProbes returned while the beside function still ran")
	}
	if calls.Load() < 2 {
		t.Errorf("beside ran %d times, want it looping for the probes' rounds", calls.Load())
	}
	if len(p.got) != probeRounds || alone > len(p.got)*5 { // between two calls of beside a probe call may find it idle
		t.Errorf("%d rounds, %d probe calls alone", len(p.got), alone)
	}
	boom := errors.New("boom")
	err := runProbes(context.Background(), []*probe{{rate: &rate, unit: 1, f: func() (float64, error) { time.Sleep(time.Millisecond); return 1, nil }}},
		func(context.Context) error { return boom })
	if !errors.Is(err, boom) {
		t.Errorf("beside's error: runProbes returned %v", err)
	}
}

// TestHybridCalibrateBesideStep: with two-stage prefetch the calibration
// runs the CPU trainer's step beside the stage probes on parameters of
// its own: the run's parameters and their gradients are as before, and
// every probed rate is positive.
func TestHybridCalibrateBesideStep(t *testing.T) {
	cfg := testkit.MustParse(t, hybridBase, `train.mode="hybrid"`, "hybrid.cpu_share=1", "hybrid.prefetch=true", "model.dropout=0.5", "train.batch_size=64")
	_, st := testkit.NewTestStepper(t, cfg)
	s := st.(*hybridStepper)
	ps := s.trainers[s.nDev].r.PS
	snap := func() map[string][]float64 {
		t.Helper()
		v, err := ps.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps.List() {
			g := make([]float32, p.Grad.Numel())
			if err := s.e.Be.Download(p.Grad, g); err != nil {
				t.Fatal(err)
			}
			v[p.Name+".grad"] = make([]float64, len(g))
			for i, x := range g {
				v[p.Name+".grad"][i] = float64(x)
			}
		}
		return v
	}
	before := snap()
	m, err := s.calibrate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if after := snap(); !reflect.DeepEqual(before, after) {
		t.Error("the calibration changed the run's parameters or gradients")
	}
	for name, v := range map[string]float64{"cpu_gbps": m.GBps, "sample_meps": m.SampleMEPS, "bind_meps": m.BindMEPS, "touch_gbps": m.TouchGBps} {
		if !(v > 0) || math.IsInf(v, 0) {
			t.Errorf("%s = %g", name, v)
		}
	}
}

// TestRunProbesSetupUntimed: a probe's setup runs before every call of
// its kernel and outside its time. The setup sleeps ten times as long as
// the kernel; the test times both itself, so the bound holds on a loaded
// machine (where both sleeps stretch): the rate must be nearer the
// kernel's own rate than the rate of setup and kernel together.
func TestRunProbesSetupUntimed(t *testing.T) {
	const setupSleep, kernelSleep = 30 * time.Millisecond, 3 * time.Millisecond
	var rate float64
	var order []string
	var setupTime, kernelTime time.Duration
	timed := func(d *time.Duration, sleep time.Duration) {
		t0 := time.Now()
		time.Sleep(sleep)
		*d += time.Since(t0)
	}
	p := &probe{rate: &rate, unit: 1,
		setup: func() { order = append(order, "setup"); timed(&setupTime, setupSleep) },
		f: func() (float64, error) {
			order = append(order, "f")
			timed(&kernelTime, kernelSleep)
			return 1, nil
		}}
	if err := runProbes(context.Background(), []*probe{p}, nil); err != nil {
		t.Fatal(err)
	}
	for i, s := range order {
		if want := []string{"setup", "f"}[i%2]; s != want {
			t.Fatalf("call %d is %s, want %s (setup before every kernel call): %v", i, s, want, order)
		}
	}
	calls := len(order) / 2
	if len(order)%2 != 0 || calls < probeRounds {
		t.Fatalf("%d calls, want setup and kernel in pairs, at least one pair a round", len(order))
	}
	kernel := kernelTime.Seconds() / float64(calls)
	setup := setupTime.Seconds() / float64(calls)
	if bound := 1 / (kernel + setup/2); rate < bound {
		t.Errorf("rate %.1f calls/s, under %.1f: the setup's time was counted (kernel %.1f ms, setup %.1f ms a call)", rate, bound, 1e3*kernel, 1e3*setup)
	}
}
