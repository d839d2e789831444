//go:build mpi

package dist

import (
	"context"
	"os"
	"testing"

	"strata/core/comm"
	"strata/core/train/strategytest"
	_ "strata/plugins/mpi"
	"strata/plugins/strategy/internal/testkit"
)

// TestDistUnderMPI runs on the ranks mpirun started (make test-mpi, 2 and
// 4 ranks): every rank trains distmini (node classification and link
// prediction) and distfull for one epoch over the MPI communicator and
// checks its parameters and predictions (a link run's test scores)
// against the one-process strategy it runs itself. Alone it skips.
func TestDistUnderMPI(t *testing.T) {
	if _, _, ok := comm.Launched(os.Getenv); !ok {
		t.Skip("not started by mpirun (make test-mpi)")
	}
	c, err := comm.Join(context.Background(), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	base := strategytest.CoraBase + "\n[sampler]\nname = \"uniform\"\nfanouts = [4, 6]\n"
	for _, tc := range []struct {
		text, ref, dist string
		batch           []string // the batch size, for the strategies that sample
	}{
		{base, "minibatch", "distmini", []string{"train.batch_size=32"}},
		{strategytest.CoraBase, "fullgraph", "distfull", nil},
		{linkBase, "minibatch", "distmini", []string{"train.batch_size=512", "link.exclude=batch"}},
	} {
		sets := append([]string{`train.dtype="float64"`, "model.dropout=0.5", "model.input_dropout=0.3"}, tc.batch...)
		ref, err := trainRank(context.Background(), t, testkit.MustParse(t, tc.text, append(sets, "train.mode="+tc.ref)...), 1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := trainRank(comm.With(context.Background(), c), t, testkit.MustParse(t, tc.text, append(sets, "train.mode="+tc.dist)...), 1)
		if err != nil {
			t.Fatal(err)
		}
		// Only the order of the sums differs (TestDistributedMatchesOneProcess,
		// TestDistLinkMatchesMiniBatch).
		tol := max(testkit.SplitTol, linkTol(ref.steps, ref.nodes))
		d := testkit.MaxRelDiff(t, got.params, ref.params)
		if d > tol {
			t.Fatalf("rank %d of %d: %s's parameters differ from %s's by %g", c.Rank(), c.Size(), tc.dist, tc.ref, d)
		}
		if s := samePredictions(got.pred, ref.pred); len(ref.pred) > 0 && s < 1 {
			t.Fatalf("rank %d of %d: %s predicts %.4f of the nodes as %s", c.Rank(), c.Size(), tc.dist, s, tc.ref)
		}
		if ds := testkit.MaxRelDiff(t, map[string][]float64{"scores": got.scores}, map[string][]float64{"scores": ref.scores}); ds > tol {
			t.Fatalf("rank %d of %d: %s's test scores differ from %s's by %g", c.Rank(), c.Size(), tc.dist, tc.ref, ds)
		}
		if len(got.stats) != c.Size() {
			t.Fatalf("%d rank entries on %d ranks", len(got.stats), c.Size())
		}
		t.Logf("rank %d of %d: %s vs %s (%d test scores): max relative parameter difference %.3g", c.Rank(), c.Size(), tc.dist, tc.ref, len(got.scores), d)
	}
}
