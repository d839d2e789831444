package chunked

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"strata/core/topology"
	"strata/internal/floattol"
	"strata/plugins/strategy/internal/testkit"
)

// hybridRMat is the graph of the hybrid's tests: 1024 nodes, 32
// features, 5 classes; 64 hidden, so GCN's layer 0 aggregates its input
// before the weight and layer 1 multiplies by the weight first.
var hybridRMat = []string{`data.dataset="rmat-10-8-32-5-1"`, "data.symmetrize=true", "model.hidden=64"}

// TestHybridPricesByHand checks the hybrid's prices of each layer
// against hand counts on a 2-layer GCN and GAT (float32, 4 chunks, one
// simulated PCIe GPU: T_hd = 16 GB/s, a V100's roofline unless the
// device memory is slowed to 1 GB/s). The split keeps N·32 values of
// layer 0 (its aggregation) and loads no input row; it reruns a·W and
// the bias on the destinations, Σ_c 2·Src_c·(32·64) flops and
// N·64·2 values written and read once; layer 1 keeps its aggregation's
// N·5 values and reloads its input rows, rerunning nothing (dW reads
// the input itself). Then split = (2·kept + reload)/T_hd + rerun; cache
// and recompute are op 1's formulas over the engine's sizes; the choice
// is the cheapest (ties: recompute, split, cache). Split wins GCN's
// layer 0 on the V100, recompute its layer 1; with slow device memory
// recomputing costs most and caching wins layer 0 (the split's rerun
// writes its values at 1 GB/s) while the split wins layer 1 (it reruns
// nothing and keeps less than the cache); GAT's layers (attention: edge
// values) never split.
func TestHybridPricesByHand(t *testing.T) {
	const n, elt = 1024, 4
	cases := []struct {
		model   string
		memGBps float64 // 0: a V100's
		modes   string
	}{
		{"gcn", 0, "split recompute"},
		{"gcn", 1, "cache split"},
		{"gat", 0, "recompute recompute"},
		{"gat", 1, "cache cache"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/mem_gbps=%g", c.model, c.memGBps), func(t *testing.T) {
			sets := append(append(slices.Clone(hybridRMat), testkit.ModelSets(c.model)...), `train.dtype="float32"`, "chunked.chunks=4")
			dev := topology.V100
			if c.memGBps > 0 {
				sets, dev.MemGBps = append(sets, fmt.Sprintf("devices.mem_gbps=%g", c.memGBps)), c.memGBps
			}
			r, _ := newTestRun(t, testkit.MustParse(t, testkit.CoraBase, chunkedSets(sets...)...))
			if got := strings.Join(r.modes(), " "); got != c.modes {
				t.Errorf("modes %q, want %q", got, c.modes)
			}
			hd := topology.PCIeGBps * 1e9
			var dst, src int64 // Σ over the chunks
			var rerun float64  // layer 0's rerun, by the roofline
			for _, ch := range r.plan.Chunks {
				dst, src = dst+int64(len(ch.Dst)), src+int64(len(ch.Src))
				rerun += 2*float64(len(ch.Src))*32*64/(dev.PeakGFLOPS*1e9) + 2*float64(len(ch.Dst)*64*2*elt)/(dev.MemGBps*1e9)
			}
			if dst != n {
				t.Fatalf("the chunks hold %d destinations, want %d", dst, n)
			}
			want := []layerCost{
				{splits: true, keptBytes: n * 32 * elt, srcBytes: src * 32 * elt, rerunS: rerun},
				{splits: true, keptBytes: n * 5 * elt, srcBytes: src * 64 * elt, reloadBytes: src * 64 * elt},
			}
			if c.model == "gat" {
				want = []layerCost{{srcBytes: src * 32 * elt}, {srcBytes: src * 64 * elt}}
			}
			for l, got := range r.prices {
				checkLayerPrice(t, l, got, want[l], hd)
			}
		})
	}
}

// checkLayerPrice compares layer l's prices with the hand counts in want
// (what the split keeps, reloads and reruns, the input rows) and op 1's
// formulas over the engine's sizes, and its choice with the cheapest.
func checkLayerPrice(t *testing.T, l int, got, want layerCost, hd float64) {
	t.Helper()
	// Each price is at most 3 roundings of terms summed over the chunks
	// (the rerun: a sum of 4 chunks' terms of 4 roundings each).
	near := func(a, b float64) bool { return math.Abs(a-b) <= floattol.Gamma(16, floattol.UFloat64)*math.Abs(b) }
	if got.splits != want.splits || got.keptBytes != want.keptBytes || got.reloadBytes != want.reloadBytes || got.srcBytes != want.srcBytes || !near(got.rerunS, want.rerunS) {
		t.Errorf("layer %d: splits %v, keeps %d, reloads %d, input rows %d, reruns %.6g s; want %v, %d, %d, %d, %.6g s",
			l, got.splits, got.keptBytes, got.reloadBytes, got.srcBytes, got.rerunS, want.splits, want.keptBytes, want.reloadBytes, want.srcBytes, want.rerunS)
	}
	cache := 2 * float64(got.savedBytes) / hd
	if got.inputInCache {
		cache += float64(got.srcBytes) / hd
	}
	recompute := float64(got.srcBytes)/hd + got.forwardS
	split := math.Inf(1)
	if want.splits {
		split = (2*float64(want.keptBytes)+float64(want.reloadBytes))/hd + want.rerunS
	}
	if !near(got.cacheS, cache) || !near(got.recomputeS, recompute) || !(math.IsInf(split, 1) && math.IsInf(got.splitS, 1) || near(got.splitS, split)) {
		t.Errorf("layer %d: cache %.6g s, recompute %.6g s, split %.6g s; want %.6g, %.6g, %.6g", l, got.cacheS, got.recomputeS, got.splitS, cache, recompute, split)
	}
	choice, best := "recompute", recompute
	if split < best {
		choice, best = "split", split
	}
	if cache < best {
		choice = "cache"
	}
	if got.choice != choice {
		t.Errorf("layer %d chose %s, the cheapest is %s (cache %.6g, recompute %.6g, split %.6g s)", l, got.choice, choice, cache, recompute, split)
	}
	t.Logf("layer %d: %s (cache %.4g µs, recompute %.4g, split %.4g)", l, got.choice, 1e6*got.cacheS, 1e6*got.recomputeS, 1e6*got.splitS)
}

// TestHybridMatchesFullGraph trains with chunked.intermediates = "hybrid"
// where it chooses to split a layer, beside a cached or a recomputed
// one, and full-graph from the same initial parameters, every dropout
// on, and compares the loss, the gradients and the parameters after
// every step to testkit.SplitTol (float64: the same sums in another
// order), on one and two devices, with and without deduplication.
func TestHybridMatchesFullGraph(t *testing.T) {
	rows := []struct {
		model   string
		extra   []string
		devices int
		modes   string
	}{
		{"gcn", []string{`chunked.dedup="p2p_reuse"`}, 1, "split recompute"},
		// Device memory at 10 GB/s: rerunning layer 1's dropout over its
		// input rows costs more than caching.
		{"gcn", []string{`chunked.dedup="none"`, "devices.mem_gbps=10"}, 1, "split cache"},
		{"sage", []string{`chunked.dedup="p2p_reuse"`}, 2, "split recompute"},
		{"gin", []string{`chunked.dedup="p2p"`, "devices.mem_gbps=30"}, 2, "recompute split"},
	}
	if testing.Short() {
		rows = rows[:2]
	}
	for _, c := range rows {
		t.Run(fmt.Sprintf("%s/%s/devices=%d", c.model, strings.Join(c.extra, ","), c.devices), func(t *testing.T) {
			sets := append(append(append(testkit.ModelSets(c.model), testkit.SplitDropouts(c.model)...), hybridRMat...), `train.dtype="float64"`, `train.backend="sim"`)
			chunked := append(append(slices.Clone(sets), `train.mode="chunked"`, fmt.Sprintf("chunked.chunks=%d", 4*c.devices), `chunked.intermediates="hybrid"`), c.extra...)
			if c.devices > 1 {
				chunked = append(chunked, `devices.preset="pcie-only"`, fmt.Sprintf("devices.count=%d", c.devices))
			}
			r, _ := newTestRun(t, testkit.MustParse(t, testkit.CoraBase, chunked...))
			if got := strings.Join(r.modes(), " "); got != c.modes {
				t.Fatalf("modes %q, want %q", got, c.modes)
			}
			want := testkit.RunSteps(t, 2, testkit.CoraBase, sets...)
			got := testkit.RunSteps(t, 2, testkit.CoraBase, chunked...)
			testkit.CompareSteps(t, got, want, testkit.SplitTol, testkit.SplitTol)
		})
	}
}
