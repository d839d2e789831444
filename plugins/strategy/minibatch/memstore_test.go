package minibatch

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	"strata/core/backend"
	"strata/core/train"
	"strata/plugins/strategy/internal/testkit"
)

// TestCapacityBytesPerDevice checks that cache.capacity_bytes is a budget
// per device: D devices cache D times the rows of one.
func TestCapacityBytesPerDevice(t *testing.T) {
	const budget = 100 * 1433 * 4 // 100 rows of Cora's features per device
	for _, c := range []struct {
		sets []string
		want []int
	}{
		{[]string{"devices.count=1"}, []int{100}},
		{[]string{"devices.count=3"}, []int{100, 100, 100}},
		{[]string{`devices.preset="nvlink-ring-4"`, `store.placement="replicated"`}, []int{100, 100, 100, 100}},
	} {
		sets := append([]string{`train.backend="sim"`, `train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[5, 5]",
			`cache.name="degree"`, "cache.capacity_bytes=" + strconv.Itoa(budget)}, c.sets...)
		e := testkit.TestEnv(t, sets...)
		cfg := testkit.MustParse(t, testkit.CoraBase, sets...)
		devs := e.Be.(backend.MultiDevice).DeviceTiers()
		s, err := newFeatureStore(context.Background(), cfg, e, devs)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Cached(); !equalInts(got, c.want) {
			t.Errorf("%v: cached rows %v, want %v", c.sets, got, c.want)
		}
		s.Close()
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestStoreGraphRatio trains data-parallel on four simulated devices with
// the samplers reading the graph through the store: the numbers equal
// those of host sampling for every graph ratio and hot tier (reads are
// exact), the topology reads are counted, and a replicated whole topology
// is read without a link (three configurations in -short, six in the long
// tests).
func TestStoreGraphRatio(t *testing.T) {
	base := []string{`model.name="sage"`, `train.mode="minibatch"`, `sampler.name="khop"`, "sampler.fanouts=[5, 5]",
		"train.batch_size=70", "train.epochs=2", `train.backend="sim"`, `devices.preset="nvlink-ring-4"`,
		`cache.name="degree"`, "cache.capacity_bytes=800000"}
	run := func(extra ...string) *train.Result { return runWith(t, base, extra...) }
	host := run()
	variants := [][]string{
		{"store.graph_ratio=0.5"},
		{"store.graph_ratio=1.0", `store.placement="replicated"`},
		{"store.graph_ratio=0.5", `placement.name="xgnn"`},
		{"store.graph_ratio=1.0", `store.placement="replicated"`, `store.topology_placement="interleaved"`},
	}
	if !testing.Short() {
		variants = append(variants, []string{"store.graph_ratio=0.0"}, []string{`store.graph_ratio="auto"`},
			[]string{"store.graph_ratio=0.5", `store.placement="replicated-interleaved"`})
	}
	for _, extra := range variants {
		r := run(extra...)
		if r.FinalLoss != host.FinalLoss || r.TestAcc != host.TestAcc {
			t.Errorf("%v: loss %v, accuracy %v; host sampling %v, %v", extra, r.FinalLoss, r.TestAcc, host.FinalLoss, host.TestAcc)
		}
		extraTopo := r.TrafficByPurpose["topology"] - host.TrafficByPurpose["topology"]
		replicatedAll := extra[0] == "store.graph_ratio=1.0" && len(extra) == 2 // the whole topology on every device
		if replicatedAll && extraTopo != 0 || !replicatedAll && extraTopo <= 0 {
			t.Errorf("%v: %d topology bytes read through the store", extra, extraTopo)
		}
	}
	// Bad input: config errors naming the key.
	for _, c := range []struct {
		sets []string
		want string
	}{
		{[]string{"store.graph_ratio=1.0", "cache.capacity_bytes=1000"}, "store.graph_ratio"},
		{[]string{"store.graph_ratio=0.5", `sampler.name="uniform"`, `store.placement="replicated"`, `placement.name="xgnn"`}, "store.placement"},
		{[]string{`store.topology_placement="interleaved"`}, "store.topology_placement"},
		{[]string{`store.graph_ratio="auto"`, "store.graph_fit=true"}, "store.graph_fit"},
	} {
		_, err := train.Run(context.Background(), testkit.MustParse(t, testkit.CoraBase, append(append([]string(nil), base...), c.sets...)...), train.Options{Host: testkit.TestHost(t)})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %s", c.sets, err, c.want)
		}
	}
}

// TestReorderScore checks data.reorder = "score" (data tiering Alg. 2):
// training on the relabelled nodes gives the results of the original
// labels (one full-neighbour batch without dropout, so only the order of
// float sums differs: the first step's loss within float32StepTol; the
// feature store holds float32 rows, and after an Adam step float32 runs
// have no uniform bound, see compareFloat32Step), the feature store keeps no lookup map and moves
// the same feature bytes, and the run is deterministic (a second run, in
// the long tests).
func TestReorderScore(t *testing.T) {
	base := []string{`model.name="sage"`, "model.dropout=0.0", "model.input_dropout=0.0", `train.mode="minibatch"`, `sampler.name="full"`, "sampler.layers=2",
		"train.batch_size=140", "train.epochs=1", "train.eval_every=0", `train.backend="sim"`, `cache.name="rpagerank"`, "cache.capacity=0.3"}
	run := func(extra ...string) *train.Result { return runWith(t, base, extra...) }
	orig, score := run(), run(`data.reorder="score"`)
	again := score
	if !testing.Short() {
		again = run(`data.reorder="score"`)
	}
	if tol := testkit.Float32StepTol(testkit.ChunkedSumLength(t, testkit.CoraBase, base)); math.Abs(orig.FinalLoss-score.FinalLoss) > tol*orig.FinalLoss {
		t.Errorf("reordered: loss %v; original %v (relative bound %.2g)", score.FinalLoss, orig.FinalLoss, tol)
	}
	if orig.TrafficByPurpose["features"] != score.TrafficByPurpose["features"] {
		t.Errorf("feature bytes %d reordered, %d original", score.TrafficByPurpose["features"], orig.TrafficByPurpose["features"])
	}
	if score.FinalLoss != again.FinalLoss || score.TestAcc != again.TestAcc {
		t.Errorf("two reordered runs differ: %v vs %v", score.FinalLoss, again.FinalLoss)
	}
	e := testkit.TestEnv(t, append(append([]string(nil), base...), `data.reorder="score"`)...)
	s, err := newFeatureStore(context.Background(), testkit.MustParse(t, testkit.CoraBase, append(append([]string(nil), base...), `data.reorder="score"`)...), e, e.Be.(backend.MultiDevice).DeviceTiers())
	if err != nil {
		t.Fatal(err)
	}
	if s.LookupMap() {
		t.Error("the store of a reordered run keeps a lookup map")
	}
	s.Close()
	_, err = train.Run(context.Background(), testkit.MustParse(t, testkit.CoraBase, `data.reorder="score"`), train.Options{Host: testkit.TestHost(t)})
	if err == nil || !strings.Contains(err.Error(), "data.reorder") {
		t.Errorf("score without a cache: error %v", err)
	}
}

// runWith trains Cora with base and extra settings.
func runWith(t *testing.T, base []string, extra ...string) *train.Result {
	t.Helper()
	r, err := train.Run(context.Background(), testkit.MustParse(t, testkit.CoraBase, append(append([]string(nil), base...), extra...)...), train.Options{Host: testkit.TestHost(t)})
	if err != nil {
		t.Fatalf("%v: %v", extra, err)
	}
	return r
}
