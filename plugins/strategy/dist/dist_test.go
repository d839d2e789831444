package dist

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"strata/core/comm"
	"strata/core/config"
	"strata/core/graph"
	"strata/core/sampling"
	"strata/core/train"
	"strata/core/train/strategytest"
	"strata/plugins/sampler"
	"strata/plugins/strategy/internal/steprun"
	"strata/plugins/strategy/internal/testkit"
)

// rankRun is what one rank ended with.
type rankRun struct {
	params map[string][]float64
	pred   []int32
	// scores are a link task's scores of the test pairs (positives,
	// then negatives); a link run predicts no classes.
	scores []float64
	// outputs are a link run's embeddings of every node
	// (train.OutputPredictor).
	outputs []float64
	steps   int // optimizer steps taken
	nodes   int // the graph's
	stats   []RankStats
	loss    float64
}

// runRanks trains cfg for epochs on n in-process ranks (goroutines, each
// with its own environment, as MPI processes would have) and returns
// every rank's parameters, predictions and figures.
func runRanks(t *testing.T, n, epochs int, text string, sets ...string) []rankRun {
	t.Helper()
	out := make([]rankRun, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r, c := range comm.NewLocal(n) {
		cfg := testkit.MustParse(t, text, sets...)
		wg.Go(func() { out[r], errs[r] = trainRank(comm.With(context.Background(), c), t, cfg, epochs) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d of %d: %v", r, n, err)
		}
	}
	return out
}

func trainRank(ctx context.Context, t *testing.T, cfg *config.Config, epochs int) (rankRun, error) {
	var out rankRun
	strat, err := train.StrategyFor(cfg)
	if err != nil {
		return out, err
	}
	env, _, closeEnv, err := train.NewEnv(ctx, cfg, testkit.TestHost(t))
	if err != nil {
		return out, err
	}
	defer closeEnv()
	st, err := strat.NewStepper(ctx, env)
	if err != nil {
		return out, err
	}
	defer st.Release()
	opt, err := env.NewOptimizer(env.Backend)
	if err != nil {
		return out, err
	}
	for ep := 0; ep < epochs; ep++ {
		if out.loss, err = st.Epoch(ctx, uint64(cfg.Train.Seed)*1_000_003+uint64(ep), func() error { out.steps++; return opt.Step(st.Params().List()) }); err != nil {
			return out, err
		}
	}
	out.nodes = env.Dataset.NumNodes
	if out.params, err = st.Params().Snapshot(); err != nil {
		return out, err
	}
	if env.Link != nil {
		if out.scores, err = scoreTestPairs(ctx, env, st); err != nil {
			return out, err
		}
		if op, ok := st.(train.OutputPredictor); ok {
			if out.outputs, _, _, err = op.PredictOutputs(ctx); err != nil {
				return out, err
			}
		}
	} else {
		out.pred = make([]int32, env.Dataset.NumNodes)
		if err := st.Predict(ctx, out.pred); err != nil {
			return out, err
		}
	}
	if r, ok := st.(train.ResultReporter); ok {
		var res train.Result
		r.ReportResult(&res)
		if f, ok := res.Figures[res.Mode].(*DistFigures); ok {
			out.stats = f.Ranks
		}
	}
	return out, nil
}

// samePredictions is the share of nodes two runs predict alike.
func samePredictions(a, b []int32) float64 {
	same := 0
	for i := range a {
		if a[i] == b[i] {
			same++
		}
	}
	return float64(same) / float64(len(a))
}

// TestDistributedMatchesOneProcess: 1, 2 and 4 ranks of the distributed
// strategies reach the loss, the parameters and the predictions of the
// one-process strategy they distribute (minibatch, fullgraph), with every
// dropout on, and every rank holds the same parameters bit for bit. The
// runs are in float64: a rank's masks are keyed by the global ids of its
// rows, so the ranks differ from one process only in the order of their
// sums (rows split between ranks, gradients all-reduced in rank order):
// splitTol, derived at TestSplitsMatchFullGraph (which also checks
// distfull on the power-law graph and every model). Predictions could
// differ only where two logits tie to within that: none of Cora's 2708
// nodes do.
func TestDistributedMatchesOneProcess(t *testing.T) {
	base := strategytest.CoraBase + "\n[sampler]\nname = \"uniform\"\nfanouts = [4, 6]\n"
	drop := []string{`train.dtype="float64"`, "model.dropout=0.5", "model.input_dropout=0.3"}
	for _, tc := range []struct {
		name, ref, dist string
		sets            []string
		ranks           []int
	}{
		{"mini", "minibatch", "distmini", []string{"train.batch_size=32"}, []int{1, 2, 4}},
		{"mini-sage", "minibatch", "distmini", []string{"train.batch_size=32", `model.name="sage"`}, []int{3}},
		{"mini-gat", "minibatch", "distmini", []string{"train.batch_size=32", `model.name="gat"`, "model.options.attn_dropout=0.4"}, []int{3}},
		{"mini-gin", "minibatch", "distmini", []string{"train.batch_size=32", `model.name="gin"`}, []int{3}},
		{"full", "fullgraph", "distfull", nil, []int{1, 2, 4}},
		// distfull's layer-by-layer halo exchange with other layers: the
		// self term of SAGE, GAT's attention (and its dropout) over the
		// halo rows.
		{"full-sage", "fullgraph", "distfull", []string{`model.name="sage"`}, []int{1, 3}},
		{"full-gat", "fullgraph", "distfull", []string{`model.name="gat"`, "model.options.attn_dropout=0.4"}, []int{1, 3}},
		{"full-gin", "fullgraph", "distfull", []string{`model.name="gin"`}, []int{3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := base
			if tc.dist == "distfull" {
				text = strategytest.CoraBase
			}
			sets := append(append([]string{"train.mode=" + tc.ref}, drop...), tc.sets...)
			ref := runRanks(t, 1, 2, text, sets...)[0]
			for _, n := range tc.ranks {
				sets := append(append([]string{"train.mode=" + tc.dist}, drop...), tc.sets...)
				runs := runRanks(t, n, 2, text, sets...)
				for r, run := range runs {
					if d := testkit.MaxRelDiff(t, run.params, runs[0].params); d != 0 {
						t.Fatalf("%d ranks: rank %d's parameters differ from rank 0's by %g", n, r, d)
					}
					if !slices.Equal(run.pred, runs[0].pred) {
						t.Fatalf("%d ranks: rank %d predicts other classes than rank 0", n, r)
					}
				}
				if d := testkit.MaxRelDiff(t, runs[0].params, ref.params); d > testkit.SplitTol {
					t.Fatalf("%d ranks: parameters differ from %s by %g (relative)", n, tc.ref, d)
				}
				if !slices.Equal(runs[0].pred, ref.pred) {
					t.Fatalf("%d ranks: %.4f of the nodes predicted as %s does", n, samePredictions(runs[0].pred, ref.pred), tc.ref)
				}
				if math.Abs(runs[0].loss-ref.loss) > testkit.SplitTol*math.Abs(ref.loss) {
					t.Fatalf("%d ranks: loss %v, %s %v", n, runs[0].loss, tc.ref, ref.loss)
				}
				t.Logf("%d ranks: max relative parameter difference %.3g to %s", n, testkit.MaxRelDiff(t, runs[0].params, ref.params), tc.ref)
			}
		})
	}
}

// TestDistFullBytesAsPredicted: the bytes every rank sends in an epoch
// for each layer's halo, forward and backward, are the ones its
// partition predicts (its rows in the other ranks' 1-hop halos × the
// layer's width), and the gradient bytes those of the reduce-scatter and
// all-gather; METIS sends fewer halo bytes than a random partition.
func TestDistFullBytesAsPredicted(t *testing.T) {
	halo := map[string]int64{}
	for _, part := range []string{"metis", "random"} {
		runs := runRanks(t, 4, 1, strategytest.CoraBase, "train.mode=distfull", "partition.name="+part)
		fwd, bwd := int64(0), int64(0)
		for r, s := range runs[0].stats {
			if s.Rank != r {
				t.Fatalf("stats of rank %d in place %d", s.Rank, r)
			}
			// Cora's GCN: 2 layers, so halo-forward L1, L2 and halo-backward L2.
			if len(s.PredictedBy) != 3 {
				t.Fatalf("%s: rank %d: predicted purposes %v, want forward L1, L2 and backward L2", part, r, s.PredictedBy)
			}
			for k, want := range s.PredictedBy {
				if got := s.SentBy[k]; got != want {
					t.Fatalf("%s: rank %d sent %d bytes for %s, the partition predicts %d", part, r, got, k, want)
				}
				halo[part] += want
			}
			for k, v := range s.SentBy {
				if strings.HasPrefix(k, "halo") && s.PredictedBy[k] != v {
					t.Fatalf("%s: rank %d sent %d bytes for %s, not predicted", part, r, v, k)
				}
			}
			if s.SentBy["gradients"] == 0 {
				t.Fatalf("%s: rank %d sent no gradients", part, r)
			}
			fwd, bwd = fwd+s.SentBy["halo-forward L2"], bwd+s.SentBy["halo-backward L2"]
		}
		// Every halo row's gradient goes back to its owner: all ranks
		// together send as many bytes backward for layer 2 as forward.
		if fwd != bwd || fwd == 0 {
			t.Fatalf("%s: layer 2's halo: %d bytes forward, %d backward", part, fwd, bwd)
		}
	}
	if halo["metis"] >= halo["random"] {
		t.Fatalf("METIS partitions send %d halo bytes, random ones %d", halo["metis"], halo["random"])
	}
	t.Logf("halo bytes per epoch, 4 ranks: %v", halo)
	// float64 training: layer 1's rows (the features) still travel as
	// float32, layer 2's rows and gradients as float64.
	runs := runRanks(t, 2, 1, strategytest.CoraBase, "train.mode=distfull", `train.dtype="float64"`)
	for r, s := range runs[0].stats {
		if len(s.PredictedBy) != 3 {
			t.Fatalf("float64: rank %d: predicted purposes %v", r, s.PredictedBy)
		}
		for k, want := range s.PredictedBy {
			if got := s.SentBy[k]; got != want {
				t.Fatalf("float64: rank %d sent %d bytes for %s, the partition predicts %d", r, got, k, want)
			}
		}
		if f1, f2 := s.SentBy["halo-forward L1"], s.SentBy["halo-forward L2"]; f1%(1433*4) != 0 || f2%(16*8) != 0 {
			t.Fatalf("float64: rank %d sent %d bytes of 1433-wide float32 rows and %d of 16-wide float64 rows", r, f1, f2)
		}
	}
}

// TestDistConfigErrors: a sampler the owners cannot run is an error
// naming the key.
func TestDistConfigErrors(t *testing.T) {
	cfg := testkit.MustParse(t, strategytest.CoraBase, "train.mode=distmini", `sampler.name="khop"`)
	err := (*DistMini)(nil).CheckConfig(cfg)
	if err == nil {
		t.Fatal("distmini with sampler.khop accepted")
	}
	if !strings.Contains(err.Error(), "sampler.name") {
		t.Fatalf("error names no key: %v", err)
	}
}

// TestDistFullPredictedRMAT prints the halo bytes that METIS and random
// partitions of R-MAT 2^18 predict for distfull (GCN, 2 layers, hidden
// 128: 128 + 128 + 128 values a halo row per epoch) on 2, 4 and 8 ranks
// (the measured bytes equal them: docs/performance/mpi.md) and checks that
// METIS never predicts more. Long: it partitions the graph six times.
func TestDistFullPredictedRMAT(t *testing.T) {
	if testing.Short() {
		t.Skip("partitions R-MAT 2^18 six times (make test-long)")
	}
	total := map[string]int64{}
	for _, k := range []int{2, 4, 8} {
		for _, part := range []string{"metis", "random"} {
			cfg := testkit.MustParse(t, "[data]\ndataset = \"rmat-18-16-128-16-0\"\n[model]\nname = \"gcn\"\nhidden = 128\n[train]\nmode = \"distfull\"\n", "partition.name="+part)
			ctx := context.Background()
			env, _, closeEnv, err := train.NewEnv(ctx, cfg, testkit.TestHost(t))
			if err != nil {
				t.Fatal(err)
			}
			owner, _, err := rankPartition(ctx, cfg, env.Adjs.Adj, k)
			if err != nil {
				closeEnv()
				t.Fatal(err)
			}
			sum, most := int64(0), int64(0)
			for r := 0; r < k; r++ { // the partition is every rank's: only the rank differs
				sent, held := haloRows(env.Adjs.Adj, owner, r, k)
				b := (sent*(128+128) + held*128) * 4
				sum, most = sum+b, max(most, b)
			}
			closeEnv()
			total[part] = sum
			t.Logf("%d ranks, %s: %d halo bytes an epoch, the busiest rank %d", k, part, sum, most)
		}
		if total["metis"] > total["random"] {
			t.Fatalf("%d ranks: METIS predicts %d halo bytes, random parts %d", k, total["metis"], total["random"])
		}
	}
}

// TestDistMiniBytesNearPrediction: the feature bytes distmini's ranks
// send in an epoch are those of the input nodes of the blocks that the
// same seeds and random streams give when sampled in one process (a
// replay: exactly), and close to what the partition and the fanouts
// predict without the draws (expectedSampledRows, an expectation), for
// METIS and random partitions; METIS sends fewer.
func TestDistMiniBytesNearPrediction(t *testing.T) {
	base := strategytest.CoraBase + "\n[sampler]\nname = \"uniform\"\nfanouts = [4, 6]\n"
	sent := map[string]int64{}
	ranks := []int{2, 4}
	if testing.Short() {
		ranks = ranks[1:]
	}
	for _, part := range []string{"metis", "random"} {
		for _, n := range ranks {
			cfg := testkit.MustParse(t, base, "train.mode=distmini", "train.batch_size=32", "partition.name="+part)
			runs := runRanks(t, n, 1, base, "train.mode=distmini", "train.batch_size=32", "partition.name="+part)
			replay := replayMiniFeatureRows(t, cfg, n)
			got, want := int64(0), int64(0)
			for r, s := range runs[0].stats {
				got, want = got+s.SentBy["features"], want+s.PredictedBy["features"]
				if b := replay[r] * 1433 * 4; s.SentBy["features"] != b {
					t.Fatalf("%s, %d ranks: rank %d sent %d feature bytes, the replayed blocks need %d", part, n, r, s.SentBy["features"], b)
				}
			}
			rel := float64(got-want) / float64(want)
			t.Logf("%s, %d ranks: %d feature bytes sent (as replayed), %d expected (%+.2f%%)", part, n, got, want, 100*rel)
			if math.Abs(rel) > 0.15 {
				t.Fatalf("%s, %d ranks: %d feature bytes sent, the partition predicts %d (%+.1f%%)", part, n, got, want, 100*rel)
			}
			sent[part] += got
		}
	}
	if sent["metis"] >= sent["random"] {
		t.Fatalf("METIS partitions send %d feature bytes, random ones %d", sent["metis"], sent["random"])
	}
}

// replayMiniFeatureRows samples, in one process over the whole graph, the
// blocks of every batch of distmini's first epoch on n ranks, with the
// streams the ranks use, and counts per rank the feature rows of its
// nodes that the other ranks' blocks read.
func replayMiniFeatureRows(t *testing.T, cfg *config.Config, n int) []int64 {
	t.Helper()
	ctx := context.Background()
	env, _, closeEnv, err := train.NewEnv(ctx, cfg, testkit.TestHost(t))
	if err != nil {
		t.Fatal(err)
	}
	defer closeEnv()
	rs, err := rowSampler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fanouts, replace := rs.RowFanouts()
	owner, _, err := rankPartition(ctx, cfg, env.Adjs.Adj, n)
	if err != nil {
		t.Fatal(err)
	}
	return replayRows(t, env.Adjs.Adj, owner, n, env.Dataset.Train, cfg, fanouts, replace)
}

// replayRows is replayMiniFeatureRows over adj partitioned by owner.
func replayRows(t *testing.T, adj *graph.CSR, owner []int32, n int, trainIDs []int32, cfg *config.Config, fanouts []int, replace bool) []int64 {
	t.Helper()
	seed := uint64(cfg.Train.Seed) * 1_000_003 // the first epoch's (core/train)
	order := steprun.Shuffled(trainIDs, seed)
	out := make([]int64, n)
	for b, lo := 0, 0; lo < len(order); b, lo = b+1, lo+batchSize(cfg) {
		rng := seed*0x9e3779b97f4a7c15 + uint64(b)
		for j := 0; j < n; j++ {
			var dst []int32
			for _, v := range order[lo:min(lo+batchSize(cfg), len(order))] {
				if owner[v] == int32(j) {
					dst = append(dst, v)
				}
			}
			in := map[int32]bool{}
			for _, v := range dst {
				in[v] = true
			}
			for l := len(fanouts) - 1; l >= 0; l-- {
				_, nbr, err := sampler.SampleRows(adj, dst, dst, l, fanouts[l], replace, rng)
				if err != nil {
					t.Fatal(err)
				}
				for _, u := range nbr {
					if !in[u] {
						in[u] = true
						dst = append(dst, u)
					}
				}
			}
			for u := range in {
				if o := owner[u]; int(o) != j {
					out[o]++
				}
			}
		}
	}
	return out
}

// TestDistMiniPredictedPhysics prints, for configs/sage-physics-minibatch
// on 2, 4 and 8 ranks with METIS and random parts, the feature bytes of
// the first epoch that the partition and fanouts predict (the
// expectation) and that a one-process replay of the ranks' streams gives
// (what the MPI run measures: docs/performance/mpi.md). It reads the topology
// only (no feature row), so it needs no big memory. Long: needs the
// shared dataset.
func TestDistMiniPredictedPhysics(t *testing.T) {
	if testing.Short() {
		t.Skip("reads coauthor-physics and partitions it six times (make test-long)")
	}
	cfg, err := config.Load("../../../configs/sage-physics-minibatch.toml")
	if err != nil {
		t.Skip(err)
	}
	ctx := context.Background()
	ds, err := graph.OpenContext(graph.WithFeatureRows(ctx, nil), cfg.DatasetSpec())
	if err != nil {
		t.Skipf("coauthor-physics: %v", err)
	}
	adjs, err := train.BuildAdjacencies(ds, cfg.Data.Symmetrize)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := rowSampler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fanouts, replace := rs.RowFanouts()
	for _, n := range []int{2, 4, 8} {
		for _, part := range []string{"metis", "random"} {
			pc := testkit.MustParse(t, "[data]\ndataset = \"x\"\n[model]\nname = \"sage\"\n", "partition.name="+part)
			owner, _, err := rankPartition(ctx, pc, adjs.Adj, n)
			if err != nil {
				t.Fatal(err)
			}
			replay := replayRows(t, adjs.Adj, owner, n, ds.Train, cfg, fanouts, replace)
			order := steprun.Shuffled(ds.Train, uint64(cfg.Train.Seed)*1_000_003)
			exp, got := 0.0, int64(0)
			for lo := 0; lo < len(order); lo += batchSize(cfg) {
				seeds := make([][]int32, n)
				for _, v := range order[lo:min(lo+batchSize(cfg), len(order))] {
					seeds[owner[v]] = append(seeds[owner[v]], v)
				}
				for me := 0; me < n; me++ {
					exp += expectedSampledRows(adjs.Adj, owner, me, seeds, fanouts, replace)
				}
			}
			for _, r := range replay {
				got += r
			}
			row := float64(ds.FeatDim * 4)
			t.Logf("%d ranks, %s: expected %.0f feature bytes, replayed %d (%+.2f%%)", n, part, exp*row, got*int64(row), 100*(float64(got)-exp)/exp)
		}
	}
}

// TestDistRanksLoadOwnRows: on several ranks NewEnv loads no feature row,
// and each rank holds exactly its own nodes' rows of the matrix one
// process prepares (Cora's 0/1 features row-normalised, the "auto"
// decision taken over every rank's rows).
func TestDistRanksLoadOwnRows(t *testing.T) {
	const n = 3
	cfg := testkit.MustParse(t, strategytest.CoraBase, "train.mode=distfull")
	whole, _, closeWhole, err := train.NewEnv(context.Background(), cfg, testkit.TestHost(t))
	if err != nil {
		t.Fatal(err)
	}
	defer closeWhole()
	dim := whole.Dim
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r, c := range comm.NewLocal(n) {
		wg.Go(func() {
			ctx := comm.With(context.Background(), c)
			env, _, closeEnv, err := train.NewEnv(ctx, testkit.MustParse(t, strategytest.CoraBase, "train.mode=distfull"), testkit.TestHost(t))
			if err != nil {
				errs[r] = err
				return
			}
			defer closeEnv()
			if env.Features != nil || env.Dim != dim {
				errs[r] = fmt.Errorf("NewEnv on rank %d of %d: %d feature values of width %d, want none of width %d", r, n, len(env.Features), env.Dim, dim)
				return
			}
			d, err := newDistRank(ctx, cfg, steprun.EnvOf(env), sampling.Full{Hops: 2})
			if err != nil {
				errs[r] = err
				return
			}
			defer d.Release()
			if want := steprun.GatherRows(whole.Features, dim, d.owned[r]); !slices.Equal(d.feats, want) {
				errs[r] = fmt.Errorf("rank %d of %d: its %d rows differ from the whole matrix's", r, n, len(d.owned[r]))
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
