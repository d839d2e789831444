package minibatch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"strata/core/config"
	"strata/core/engine"
	"strata/core/sampling"
	"strata/core/train"
	"strata/plugins/sampler"
	"strata/plugins/strategy/internal/microsplit"
	"strata/plugins/strategy/internal/steprun"
	"strata/plugins/strategy/internal/testkit"
)

// gradients returns a copy of every parameter gradient.
func gradients(t *testing.T, e steprun.Env, ps *engine.Params) map[string][]float64 {
	t.Helper()
	out := map[string][]float64{}
	for _, p := range ps.List() {
		v := make([]float64, p.Grad.Numel())
		if err := e.Be.Download(p.Grad, v); err != nil {
			t.Fatal(err)
		}
		out[p.Name] = v
	}
	return out
}

// TestSplitBlocks checks the sub-blocks of a micro-batch against sampling
// its nodes' full neighbourhoods afresh: the same nodes and edges, from
// SplitBlocks and from one microsplit.BlockSplitter reused over every
// split in turn (its table of source ids carried from call to call).
func TestSplitBlocks(t *testing.T) {
	ctx := context.Background()
	e := testkit.TestEnv(t)
	full := sampling.Full{Hops: 2}
	whole, err := full.Sample(ctx, e.Adjs.Adj, e.DS.Train, 0)
	if err != nil {
		t.Fatal(err)
	}
	var reused microsplit.BlockSplitter
	for i, rows := range [][]int32{{0}, {3, 1, 7}, steprun.Iota32(len(e.DS.Train)), {5}, {3, 1, 7}, {0}} {
		sub := microsplit.SplitBlocks(whole, rows)
		if i%2 == 1 {
			sub = reused.Split(whole, rows)
		} else if again := reused.Split(whole, rows); blocksText(again) != blocksText(sub) {
			t.Errorf("rows %v: a reused BlockSplitter's blocks differ from SplitBlocks'", rows)
		}
		nodes := make([]int32, len(rows))
		for i, r := range rows {
			nodes[i] = e.DS.Train[r]
		}
		fresh, err := full.Sample(ctx, e.Adjs.Adj, nodes, 0)
		if err != nil {
			t.Fatal(err)
		}
		for l := range sub {
			if err := sub[l].Adj.Validate(); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(sub[l].Dst) != fmt.Sprint(fresh[l].Dst) || fmt.Sprint(sub[l].Src) != fmt.Sprint(fresh[l].Src) ||
				fmt.Sprint(sub[l].Adj.Indptr) != fmt.Sprint(fresh[l].Adj.Indptr) || fmt.Sprint(sub[l].Adj.Idx32) != fmt.Sprint(fresh[l].Adj.Idx32) {
				t.Errorf("rows %v layer %d: split block differs from a fresh sample", rows, l)
			}
		}
	}
}

// blocksText prints what blocks hold (their graphs by value).
func blocksText(bs []sampling.Block) string {
	var b strings.Builder
	for _, x := range bs {
		fmt.Fprintln(&b, x.Dst, x.Src, x.Excluded, *x.Adj)
	}
	return b.String()
}

// TestMicroGradientsMatchWholeBatch accumulates the gradients of a batch's
// micro-batches and compares them with the whole batch's, for every model,
// over full-neighbour blocks (full-graph micro-batching) and over sampled
// blocks (micro-batches of a mini-batch), with every dropout on: the
// masks follow the rows' global ids, so a micro-batch draws its rows'
// masks of the whole batch.
func TestMicroGradientsMatchWholeBatch(t *testing.T) {
	ctx := context.Background()
	for _, model := range testkit.BettyModels() {
		for _, mode := range []string{"fullgraph", "minibatch"} {
			t.Run(model+"/"+mode, func(t *testing.T) {
				e := testkit.TestEnv(t, append(append(testkit.ModelSets(model), testkit.SplitDropouts(model)...), `train.dtype="float64"`)...)
				r, err := steprun.NewRunner(e, 1)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Release()
				nodes := e.DS.Train
				var smp sampling.Sampler = sampling.Full{Hops: 2}
				if mode == "minibatch" {
					nodes = steprun.Shuffled(e.DS.Train, 7)[:64]
					smp = &sampler.Uniform{Fanouts: []int{5, 10}}
				}
				blocks, err := smp.Sample(ctx, e.Adjs.Adj, nodes, 3)
				if err != nil {
					t.Fatal(err)
				}
				run := func(bl []sampling.Block, out []int32, share float64, acc bool) {
					bb, err := r.Bind(bl, steprun.FeatRows{}, nil, false)
					if err != nil {
						t.Fatal(err)
					}
					defer bb.Release(e)
					if _, err := r.TrainBatch(ctx, bb, out, 1, share, acc); err != nil {
						t.Fatal(err)
					}
				}
				run(blocks, blocks[1].Dst, 1, false)
				want := gradients(t, e, r.PS)
				s, err := microsplit.NewSplitter(ctx, testkit.MustParse(t, testkit.CoraBase, "train.micro_batches=5", `partition.name="betty-reg"`), "nodes")
				if err != nil {
					t.Fatal(err)
				}
				mbs, _, err := s.Split(ctx, blocks, 5)
				if err != nil {
					t.Fatal(err)
				}
				if err := r.PS.ZeroGrads(); err != nil {
					t.Fatal(err)
				}
				for _, mb := range mbs {
					run(mb.Blocks, mb.Nodes, float64(len(mb.Nodes))/float64(len(nodes)), true)
				}
				got := gradients(t, e, r.PS)
				worst := 0.0
				for name, w := range want {
					for i := range w {
						worst = max(worst, math.Abs(got[name][i]-w[i])/max(1, math.Abs(w[i])))
					}
				}
				if worst > testkit.SplitTol { // the same sums in another order (TestSplitsMatchFullGraph derives it)
					t.Errorf("accumulated gradients differ from the whole batch's by %.3g, bound %.3g", worst, testkit.SplitTol)
				}
				t.Logf("%d micro-batches: largest gradient difference %.2g", len(mbs), worst)
			})
		}
	}
}

// TestAutoMicroBatches trains full-graph with micro_batches = "auto" on
// simulated devices too small for the whole batch: the chosen K fits by
// the estimate and by the measured peak, and a smaller device needs more
// micro-batches.
func TestAutoMicroBatches(t *testing.T) {
	ctx := context.Background()
	prevK := 0
	for _, capacity := range []int64{16_000_000, 10_000_000, 6_000_000} {
		t.Run(fmt.Sprint(capacity), func(t *testing.T) {
			cfg := testkit.MustParse(t, testkit.CoraBase, `model.name="sage"`, `train.backend="sim"`, fmt.Sprintf("devices.memory_bytes=%d", capacity),
				`train.micro_batches="auto"`, `partition.name="betty-reg"`, "train.epochs=2")
			r, err := train.Run(ctx, cfg, train.Options{Host: testkit.TestHost(t)})
			if err != nil {
				t.Fatal(err)
			}
			if !testkit.Splits(r).Auto || testkit.Splits(r).MicroBatches < 2 || r.EstimatedPeakBytes > capacity || r.PeakTierBytes["device0"] > capacity {
				t.Errorf("auto: K=%d, estimated peak %d, measured %d for a %d-byte device", testkit.Splits(r).MicroBatches, r.EstimatedPeakBytes, r.PeakTierBytes["device0"], capacity)
			}
			if testkit.Splits(r).MicroBatches <= prevK {
				t.Errorf("K=%d on %d bytes, not more than %d on a larger device", testkit.Splits(r).MicroBatches, capacity, prevK)
			}
			prevK = testkit.Splits(r).MicroBatches
			t.Logf("%d bytes: K=%d, estimated peak %d, measured %d, redundancy %.2f", capacity, testkit.Splits(r).MicroBatches, r.EstimatedPeakBytes, r.PeakTierBytes["device0"], testkit.Splits(r).Redundancy)
		})
	}
}

// TestMicroBatchBadInput checks the errors of micro-batching: each names
// the key and the fix.
func TestMicroBatchBadInput(t *testing.T) {
	ctx := context.Background()
	auto := []string{`model.name="sage"`, `train.micro_batches="auto"`, `partition.name="betty-reg"`, "train.epochs=1"}
	sim := append([]string{`train.backend="sim"`}, auto...)
	mini := []string{`model.name="sage"`, `train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[5, 10]", "train.batch_size=32", `partition.name="betty-reg"`, "train.epochs=1"}
	cases := []struct {
		name string
		sets []string
		err  []string
	}{
		{"zero", []string{"train.micro_batches=0"}, []string{"train.micro_batches = 0: must be in [1, 1048576]"}},
		{"other string", []string{`train.micro_batches="max"`}, []string{`train.micro_batches = "max": the only string train.micro_batches takes is "auto"`}},
		{"more than the training nodes", []string{"train.micro_batches=141", `partition.name="range"`}, []string{"train.micro_batches = 141 is more than the 140 training nodes"}},
		{"more than a mini-batch", append(mini, "train.micro_batches=33"), []string{"train.micro_batches = 33 is more than the train.batch_size = 32 output nodes of a mini-batch"}},
		{"more than the training nodes of a mini-batch", append(mini, "train.micro_batches=150", "train.batch_size=1024"), []string{"train.micro_batches = 150 is more than the 140 training nodes"}},
		{"auto on the cpu", auto, []string{`train.micro_batches = "auto" sizes the micro-batches to the device's memory, but train.backend = "cpu" does not report its memory`, `train.backend = "cuda"`}},
		{"auto without a capacity", sim, []string{"devices.memory_bytes is 0 (unlimited); set devices.memory_bytes"}},
		{"auto without a partitioner", []string{`train.backend="sim"`, "devices.memory_bytes=10000000", `train.micro_batches="auto"`}, []string{`train.micro_batches = "auto" needs a partitioner to split the training nodes: add [partition]`}},
		{"auto minibatch without a capacity", append(mini, `train.micro_batches="auto"`, `train.backend="sim"`), []string{"devices.memory_bytes is 0"}},
		{"parameters alone do not fit", append(sim, "devices.memory_bytes=600000"), []string{"the parameters, their gradients and the optimizer state alone need", "the smallest feasible capacity is devices.memory_bytes = "}},
		{"one node does not fit", append(sim, "devices.memory_bytes=3000000"), []string{"even a micro-batch of one output node", "the smallest feasible capacity is devices.memory_bytes = "}},
		{"evaluation does not fit", append(mini, `train.micro_batches="auto"`, `train.backend="sim"`, "devices.memory_bytes=1000000"), []string{"evaluation does not fit devices.memory_bytes = 1000000 (1.0 MiB) even one node at a time", "the smallest feasible capacity is devices.memory_bytes = "}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := config.Parse("test.toml", []byte(testkit.CoraBase), c.sets...)
			if err == nil {
				cfg.Output.Progress = "off"
				_, err = train.Run(ctx, cfg, train.Options{Host: testkit.TestHost(t)})
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.err {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
			// The capacity an infeasible run names is enough.
			var inf *microsplit.InfeasibleError
			var evalInf *microsplit.EvalInfeasibleError
			least := int64(0)
			switch {
			case errors.As(err, &inf):
				least = max(inf.MinCapacity, inf.EvalCapacity)
			case errors.As(err, &evalInf):
				least = evalInf.MinCapacity
			}
			if least > 0 {
				cfg := testkit.MustParse(t, testkit.CoraBase, append(slices.Clone(c.sets), fmt.Sprintf("devices.memory_bytes=%d", least))...)
				if _, err := train.Run(ctx, cfg, train.Options{Host: testkit.TestHost(t)}); err != nil {
					t.Errorf("the smallest feasible capacity %d does not fit: %v", least, err)
				}
			}
		})
	}
}

// TestMicroBatchDisconnected splits the training nodes of a graph that
// falls apart (an R-MAT graph with one edge per node: most training nodes
// are isolated, so Betty's REG has more components than parts): every
// micro-batch gets nodes, and training runs.
func TestMicroBatchDisconnected(t *testing.T) {
	ctx := context.Background()
	base := []string{`data.dataset="rmat-10-1-16-4-0"`, `model.name="sage"`, "train.epochs=2", `train.backend="sim"`}
	cases := []struct {
		name string
		sets []string
		k    int // 0: auto, more than 1
	}{
		{"betty-reg", []string{"train.micro_batches=16", `partition.name="betty-reg"`}, 16},
		{"metis", []string{"train.micro_batches=16", `partition.name="metis"`}, 16},
		{"auto", []string{`train.micro_batches="auto"`, `partition.name="betty-reg"`, "devices.memory_bytes=110000"}, 0},
		{"minibatch", []string{`train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[5, 5]", "train.batch_size=40", "train.micro_batches=8", `partition.name="metis"`}, 8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := train.Run(ctx, testkit.MustParse(t, testkit.CoraBase, append(slices.Clone(base), c.sets...)...), train.Options{Host: testkit.TestHost(t)})
			if err != nil {
				t.Fatal(err)
			}
			if c.k > 0 && testkit.Splits(r).MicroBatches != c.k || c.k == 0 && testkit.Splits(r).MicroBatches < 2 {
				t.Errorf("%d micro-batches", testkit.Splits(r).MicroBatches)
			}
		})
	}
	// fillEmpty on its own: parts a partitioner left empty get a row each.
	rows := [][]int32{{0, 1, 2, 3, 4}, nil, {5}, nil}
	microsplit.FillEmpty(rows)
	for p, r := range rows {
		if len(r) == 0 || !slices.IsSorted(r) {
			t.Errorf("part %d: %v", p, r)
		}
	}
}

// TestMiniBatchMicro trains sampled mini-batches whole and split into
// micro-batches (fixed K with two partitioners, "auto", and data-parallel
// on two devices): the same sampled blocks, so the same losses (three
// epochs; one with -short).
func TestMiniBatchMicro(t *testing.T) {
	ctx := context.Background()
	base := []string{`model.name="sage"`, `train.dtype="float64"`, "model.dropout=0.5", "train.epochs=3", `train.mode="minibatch"`,
		`sampler.name="uniform"`, "sampler.fanouts=[5, 10]", "train.batch_size=64", `train.backend="sim"`}
	if testing.Short() { // one epoch's steps instead of three
		base = append(base, "train.epochs=1")
	}
	cases := []struct {
		name string
		sets []string
		k    int // reported K (the largest of the last epoch)
	}{
		{"whole", nil, 1},
		{"betty-reg", []string{"train.micro_batches=4", `partition.name="betty-reg"`}, 4},
		{"metis", []string{"train.micro_batches=3", `partition.name="metis"`}, 3},
		{"auto", []string{`train.micro_batches="auto"`, `partition.name="betty-reg"`, "devices.memory_bytes=8000000"}, -1},
		{"two devices whole", []string{"devices.count=2"}, 1},
		{"two devices", []string{"train.micro_batches=2", `partition.name="range"`, "devices.count=2"}, 2},
	}
	var want float64
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := train.Run(ctx, testkit.MustParse(t, testkit.CoraBase, append(slices.Clone(base), c.sets...)...), train.Options{Host: testkit.TestHost(t)})
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(c.name, "whole") { // data-parallel shards sample their own blocks
				want = r.FinalLoss
			} else if d := math.Abs(r.FinalLoss-want) / want; d > testkit.SplitTol {
				t.Errorf("final loss %.12f, whole batches %.12f", r.FinalLoss, want)
			}
			switch {
			case c.k > 0 && testkit.Splits(r).MicroBatches != c.k:
				t.Errorf("%d micro-batches, want %d", testkit.Splits(r).MicroBatches, c.k)
			case c.k < 0 && (!testkit.Splits(r).Auto || testkit.Splits(r).MicroBatches < 2 || r.EstimatedPeakBytes > 8_000_000 || r.PeakTierBytes["device0"] > 8_000_000):
				t.Errorf("auto: K=%d, estimated %d, peak %v", testkit.Splits(r).MicroBatches, r.EstimatedPeakBytes, r.PeakTierBytes)
			}
			t.Logf("K=%d loss %.12f peak %v estimated %d", testkit.Splits(r).MicroBatches, r.FinalLoss, r.PeakTierBytes, r.EstimatedPeakBytes)
		})
	}
}

// TestMiniBatchMicroPipeline runs micro-batches of a sampled batch (the
// whole training set, dropout on) through the feature cache and the
// overlapped transfer stage: the step's loss stays the whole batch's,
// within float32StepTol (the feature store holds float32 rows; one step,
// since float32 runs after an Adam step have no uniform bound, see
// compareFloat32Step).
func TestMiniBatchMicroPipeline(t *testing.T) {
	ctx := context.Background()
	base := []string{`model.name="sage"`, "model.dropout=0.5", "train.epochs=1", "train.eval_every=0", `train.mode="minibatch"`, `sampler.name="uniform"`,
		"sampler.fanouts=[5, 10]", "train.batch_size=140", `train.backend="sim"`, `cache.name="degree"`, "cache.capacity=0.3"}
	tol := testkit.Float32StepTol(testkit.ChunkedSumLength(t, testkit.CoraBase, base))
	cases := []struct {
		name string
		sets []string
	}{
		{"whole", nil},
		{"cache", []string{"train.micro_batches=4", `partition.name="betty-reg"`}},
		{"overlap", []string{"train.micro_batches=4", `partition.name="betty-reg"`, "train.overlap=true"}},
		{"auto", []string{`train.micro_batches="auto"`, `partition.name="betty-reg"`, "devices.memory_bytes=11000000"}},
	}
	var want *train.Result
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := train.Run(ctx, testkit.MustParse(t, testkit.CoraBase, append(slices.Clone(base), c.sets...)...), train.Options{Host: testkit.TestHost(t)})
			if err != nil {
				t.Fatal(err)
			}
			if want == nil {
				want = r
				return
			}
			if d := math.Abs(r.FinalLoss-want.FinalLoss) / want.FinalLoss; d > tol {
				t.Errorf("loss %.9f, whole batch %.9f (relative %.2g, bound %.2g)", r.FinalLoss, want.FinalLoss, d, tol)
			}
			if r.Figures["minibatch"].(*Figures).CacheHitRate <= 0 || !testkit.Splits(r).Auto && testkit.Splits(r).MicroBatches != 4 {
				t.Errorf("hit rate %v, %d micro-batches", r.Figures["minibatch"].(*Figures).CacheHitRate, testkit.Splits(r).MicroBatches)
			}
			if testkit.Splits(r).Auto && (testkit.Splits(r).MicroBatches < 2 || r.PeakTierBytes["device0"] > 11000000) {
				t.Errorf("auto beside the cache: K=%d, peak %d, estimated %d", testkit.Splits(r).MicroBatches, r.PeakTierBytes["device0"], r.EstimatedPeakBytes)
			}
			t.Logf("K=%d, peak %d, estimated %d, hit rate %.2f", testkit.Splits(r).MicroBatches, r.PeakTierBytes["device0"], r.EstimatedPeakBytes, r.Figures["minibatch"].(*Figures).CacheHitRate)
		})
	}
}

// TestBettyAutoConfig trains the shipped configs/betty-auto-cora.toml: its
// whole batch does not fit the simulated device, "auto" picks K from the
// estimate, the peak stays under the capacity, and the test accuracy is
// no more than 0.5 points below the same run on an unconstrained device
// (full graph, one piece). With -short it trains 10 epochs and skips the
// accuracy check.
func TestBettyAutoConfig(t *testing.T) {
	ctx := context.Background()
	const path = "../../../configs/betty-auto-cora.toml"
	var sets []string
	if testing.Short() {
		sets = []string{"train.epochs=10"}
	}
	load := func(extra ...string) *config.Config {
		cfg, err := config.Load(path, append(slices.Clone(sets), extra...)...)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Output.Progress = "off"
		return cfg
	}
	cfg := load()
	capacity := cfg.Devices.MemoryBytes
	auto, err := train.Run(ctx, cfg, train.Options{Host: testkit.TestHost(t)})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := train.Run(ctx, load("train.micro_batches=1", "devices.memory_bytes=0", `partition.name=""`), train.Options{Host: testkit.TestHost(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("auto: K=%d, estimated peak %d, measured %d of %d; test accuracy %.3f; unconstrained: peak %d, test accuracy %.3f",
		testkit.Splits(auto).MicroBatches, auto.EstimatedPeakBytes, auto.PeakTierBytes["device0"], capacity, auto.TestAcc, ref.PeakTierBytes["device0"], ref.TestAcc)
	if !testkit.Splits(auto).Auto || testkit.Splits(auto).MicroBatches < 2 || auto.PeakTierBytes["device0"] > capacity || ref.PeakTierBytes["device0"] <= capacity {
		t.Errorf("auto K=%d peak %d, unconstrained peak %d, capacity %d", testkit.Splits(auto).MicroBatches, auto.PeakTierBytes["device0"], ref.PeakTierBytes["device0"], capacity)
	}
	// Micro-batches draw their dropout masks per micro-batch, so the two
	// runs differ as two seeds do (TestMicroBatchesMatchFullGraph holds
	// them equal without dropout); what must not happen is a loss.
	if !testing.Short() && auto.TestAcc < ref.TestAcc-0.005 {
		t.Errorf("test accuracy %.3f with micro-batches, %.3f unconstrained: more than 0.5 points lost", auto.TestAcc, ref.TestAcc)
	}
}

// TestSplitShardInfeasible splits a sampled shard for a device too small
// for one output node: the error names the capacity this batch needs at
// least, and the estimate's search stops at one node per micro-batch.
func TestSplitShardInfeasible(t *testing.T) {
	ctx := context.Background()
	sets := []string{`model.name="sage"`, `train.backend="sim"`, "devices.memory_bytes=800000", `train.mode="minibatch"`, `sampler.name="uniform"`,
		"sampler.fanouts=[5, 10]", "train.batch_size=32", `train.micro_batches="auto"`, `partition.name="betty-reg"`}
	e := testkit.TestEnv(t, sets...)
	mm, err := newMiniMicro(ctx, testkit.MustParse(t, testkit.CoraBase, sets...), e)
	if err != nil {
		t.Fatal(err)
	}
	defer mm.close()
	nodes := e.DS.Train[:32]
	blocks, err := (&sampler.Uniform{Fanouts: []int{5, 10}}).Sample(ctx, e.Adjs.Adj, nodes, 1)
	if err != nil {
		t.Fatal(err)
	}
	sh := shard{nodes: nodes, blocks: blocks}
	err = mm.splitShard(ctx, &sh)
	var inf *microsplit.InfeasibleError
	if !errors.As(err, &inf) || !inf.Sampled || inf.MinCapacity <= 800000 || !strings.Contains(err.Error(), "the smallest feasible capacity is at least devices.memory_bytes = ") {
		t.Fatalf("error %v", err)
	}
	// At the capacity it names, the shard splits and every micro-batch fits.
	mm.split.Capacity = inf.MinCapacity
	// Each keeps its rows, not its blocks (split when it trains), and
	// those rows' blocks are the estimated ones.
	if err := mm.splitShard(ctx, &sh); err != nil {
		t.Fatal(err)
	}
	for _, mb := range sh.micro {
		if mb.Blocks != nil {
			t.Fatalf("micro-batch of %d nodes keeps its blocks", len(mb.Nodes))
		}
		est, err := mm.split.Est.Step(mb.SplitFrom(sh.blocks))
		if err != nil {
			t.Fatal(err)
		}
		if mb.Est.Peak > inf.MinCapacity || est != mb.Est {
			t.Errorf("micro-batch of %d nodes: estimated %d, %+v from its rows' blocks", len(mb.Nodes), mb.Est.Peak, est)
		}
	}
}
