package strategytests

import (
	"context"
	"fmt"
	"strata/core/comm"
	"strata/plugins/strategy/internal/testkit"
	"sync"
	"testing"
)

// splitVariant is one way of splitting full-graph training of a step.
type splitVariant struct {
	name  string
	sets  []string
	ranks int // in-process ranks (distfull); 0: one process
}

// splitVariants are the splits the strategies promise to compute
// exactly: HongTu's chunks (1, 2, 4, 8; intermediates cached,
// recomputed, chosen per layer, or split within the layer: aggregation
// outputs kept, the rest recomputed, attention recomputed), Betty's micro-batches (K = 1 as full-graph and as one micro-batch, 2, 4),
// distfull's ranks (1, 2, 4) and one mini-batch of every training node
// over full-neighbour blocks.
func splitVariants() []splitVariant {
	var out []splitVariant
	for _, k := range []int{1, 2, 4, 8} {
		for _, inter := range []string{"cache", "recompute", "hybrid", "split"} {
			out = append(out, splitVariant{name: fmt.Sprintf("chunked/%d/%s", k, inter),
				sets: []string{`train.mode="chunked"`, fmt.Sprintf("chunked.chunks=%d", k), `chunked.intermediates="` + inter + `"`}})
		}
	}
	out = append(out, splitVariant{name: "micro/1", sets: []string{"train.micro_batches=1"}})
	// strategy.micro's K = 1: one micro-batch of the training nodes'
	// receptive field, no partitioner (Betty's whole batch).
	out = append(out, splitVariant{name: "micro/one-batch", sets: []string{`train.mode="micro"`, "train.micro_batches=1"}})
	for _, k := range []int{2, 4} {
		out = append(out, splitVariant{name: fmt.Sprintf("micro/%d", k), sets: []string{fmt.Sprintf("train.micro_batches=%d", k), `partition.name="metis"`}})
	}
	for _, n := range []int{1, 2, 4} {
		out = append(out, splitVariant{name: fmt.Sprintf("distfull/%d", n), sets: []string{`train.mode="distfull"`}, ranks: n})
	}
	out = append(out, splitVariant{name: "minibatch/full-neighbour", sets: []string{`train.mode="minibatch"`, `sampler.name="full"`, "sampler.layers=2", "train.batch_size=100000"}})
	return out
}

// TestSplitsMatchFullGraph is issue 29's "one answer whatever the split":
// with every dropout on, each split of full-graph training (chunks,
// micro-batches, ranks, one full-neighbour mini-batch) gives the loss,
// the gradients and the parameters of full-graph training, step after
// step, for GCN, GraphSAGE, GAT and GIN on Cora and a power-law R-MAT
// graph. A row draws its masks by its global id, so the runs differ only
// in the order of their float64 sums (a node's rows split between
// chunks or ranks, micro-batch gradients added in turn, rank-order
// all-reduces).
//
// The bound, splitTol = 1e-12: two orders of a sum of K terms differ by
// at most 2γ_K = 2Ku/(1-Ku) (u = 2^-53) of the sum of the terms'
// magnitudes; the longest sums are the weight gradients' over the rows
// (K ≤ 2708 on Cora), 2γ_K ≈ 6e-13. Adam's first step moves a parameter
// by lr·g/(|g|+ε), which a relative change δ of g moves by at most
// lr·δ·ε/(|g|+ε) ≤ lr·δ, its second by about lr·δ as well, so after two
// steps (lr = 0.01) the parameters differ by ~2·lr·6e-13 ≈ 1e-14 of their
// scale where a gradient is not dominated by cancellation; 1e-12 leaves a
// factor of 100 for that (observed: at most 7e-14). A mask drawn by a
// row's position instead moves the outputs by O(1)
// (core/engine's TestDropoutFollowsRows). -short runs every variant once,
// on the eight (model, graph) pairs in turn.
func TestSplitsMatchFullGraph(t *testing.T) {
	graphs := []struct{ name, dataset string }{{"cora", "embedded:cora"}, {"rmat-powerlaw", "rmat-10-8-32-5-1"}}
	variants := splitVariants()
	combo := 0 // the (model, graph) pair's index
	for _, model := range []string{"gcn", "sage", "gat", "gin"} {
		for _, g := range graphs {
			sets := append(append(testkit.ModelSets(model), testkit.SplitDropouts(model)...), `train.dtype="float64"`, `data.dataset="`+g.dataset+`"`,
				"data.symmetrize=true", "model.layers=2", "train.eval_every=0")
			var want []testkit.StepRecord
			combo++
			for vi, v := range variants {
				if testing.Short() && vi%(4*len(graphs)) != combo-1 {
					continue // each variant once, on pairs in turn
				}
				t.Run(fmt.Sprintf("%s/%s/%s", model, g.name, v.name), func(t *testing.T) {
					if want == nil {
						want = runSplit(t, 2, 0, sets...)
					}
					got := runSplit(t, 2, v.ranks, append(append([]string(nil), sets...), v.sets...)...)
					testkit.CompareSteps(t, got, want, testkit.SplitTol, testkit.SplitTol)
				})
			}
		}
	}
}

// runSplit runs steps optimizer steps of the config sets select on
// ranks in-process ranks (goroutines, as MPI processes would run; 0 for
// none) and returns rank 0's records, after checking that every rank
// ended each step with the same loss and parameters.
func runSplit(t *testing.T, steps, ranks int, sets ...string) []testkit.StepRecord {
	t.Helper()
	if ranks == 0 {
		return testkit.RunSteps(t, steps, testkit.CoraBase, sets...)
	}
	out := make([][]testkit.StepRecord, ranks)
	errs := make([]error, ranks)
	var wg sync.WaitGroup
	for r, c := range comm.NewLocal(ranks) {
		cfg := testkit.MustParse(t, testkit.CoraBase, sets...)
		wg.Go(func() { out[r], errs[r] = testkit.StepsIn(comm.With(context.Background(), c), t, steps, cfg) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d of %d: %v", r, ranks, err)
		}
	}
	for r := 1; r < ranks; r++ {
		for s := range steps {
			if out[r][s].Loss != out[0][s].Loss || testkit.RelDiff(out[r][s].Params, out[0][s].Params) != 0 {
				t.Fatalf("step %d: rank %d ends with another loss or other parameters than rank 0", s, r)
			}
		}
	}
	return out[0]
}
