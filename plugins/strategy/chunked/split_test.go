package chunked

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"strata/core/backend"
	"strata/core/config"
	"strata/core/train"
	"strata/plugins/strategy/internal/testkit"
)

// splitRow is a case of TestChunkedSplitMatchesFullGraph.
type splitRow struct {
	model   string
	data    []string // settings of the dataset (and the depth)
	dedup   string
	devices int
	modes   string // the layers' modes
	reload  string // per split layer, the input rows its backward loads: none, dst (the destinations') or all
}

// TestChunkedSplitMatchesFullGraph trains with chunked.intermediates =
// "split" and full-graph from the same initial parameters, every dropout
// on, and compares the loss, the gradients and the parameters after
// every step to testkit.SplitTol (float64: the same sums in another
// order), for models whose aggregation comes before and after the weight,
// with a root term, and with attention (which falls back to
// recomputation), with and without deduplication, on one and two
// devices. It checks which layers split, and whether their backward
// reloads the input rows.
func TestChunkedSplitMatchesFullGraph(t *testing.T) {
	rmat := []string{`data.dataset="rmat-10-8-32-5-1"`, "data.symmetrize=true", "model.hidden=64"}
	cora := []string{`data.dataset="embedded:cora"`}
	rows := []splitRow{
		// 32 features < 64 hidden: GCN's layer 0 aggregates the input
		// first (Fig. 4c: its backward reads no input row), layer 1
		// multiplies by W first (dW reads the input rows); SAGE's and
		// GIN's layer 0 aggregate first too, and their root term reads
		// the destinations' rows only.
		{"gcn", rmat, "p2p_reuse", 1, "split split", "none all"},
		{"gcn", rmat, "none", 2, "split split", "none all"},
		{"gcn", cora, "p2p_reuse", 1, "split split", "all all"},
		{"sage", cora, "none", 1, "split split", "all all"},
		{"sage", rmat, "p2p_reuse", 2, "split split", "dst all"},
		{"gin", rmat, "p2p", 2, "split split", "dst all"},
		// Layer 1 (16 to 16) aggregates first: its root term reads its
		// destinations' rows, and its input takes a gradient.
		{"sage", append(slices.Clone(cora), "model.layers=3"), "p2p_reuse", 2, "split split split", "all dst all"},
		{"gat", rmat, "p2p_reuse", 1, "recompute recompute", ""},
		{"gat", cora, "none", 2, "recompute recompute", ""},
	}
	if testing.Short() { // one of each: no input row and a reload, destination rows on two devices, attention
		rows = []splitRow{rows[0], rows[4], rows[7]}
	}
	for _, c := range rows {
		t.Run(fmt.Sprintf("%s/%s/%s/devices=%d", c.model, c.data[0][len(`data.dataset="`):len(c.data[0])-1], c.dedup, c.devices), func(t *testing.T) {
			sets := append(append(append(testkit.ModelSets(c.model), testkit.SplitDropouts(c.model)...), "model.layers=2"), c.data...)
			sets = append(sets, `train.dtype="float64"`, `train.backend="sim"`)
			chunked := append(slices.Clone(sets), `train.mode="chunked"`, fmt.Sprintf("chunked.chunks=%d", 3*c.devices), `chunked.intermediates="split"`,
				`chunked.dedup="`+c.dedup+`"`)
			if c.devices > 1 {
				chunked = append(chunked, `devices.preset="pcie-only"`, fmt.Sprintf("devices.count=%d", c.devices))
			}
			want := testkit.RunSteps(t, 2, testkit.CoraBase, sets...)
			got := testkit.RunSteps(t, 2, testkit.CoraBase, chunked...)
			testkit.CompareSteps(t, got, want, testkit.SplitTol, testkit.SplitTol)

			r, _ := newTestRun(t, testkit.MustParse(t, testkit.CoraBase, chunked...))
			if modes := strings.Join(r.modes(), " "); modes != c.modes {
				t.Errorf("modes %q, want %q", modes, c.modes)
			}
			var reload []string
			for l := range r.layers {
				if r.isSplit(l) {
					reload = append(reload, map[bool]string{false: "none", true: "dst"}[r.split[l].DstRows])
					if r.split[l].NeedsInput {
						reload[len(reload)-1] = "all"
					}
				} else if r.splitWhy[l] == "" {
					t.Errorf("layer %d recomputes without a reason", l)
				}
			}
			if got := strings.Join(reload, " "); got != c.reload {
				t.Errorf("input rows reloaded %q, want %q", got, c.reload)
			}
			t.Logf("modes %v, fallback %q", r.modes(), r.splitWhy)
		})
	}
}

// TestChunkedSplitKeepsAggregations trains one epoch of a 2-layer GCN on
// a 1024-node R-MAT graph (32 features, 64 hidden, 5 classes, float64)
// with intermediates = "split": layer 0 aggregates its 32-wide input
// before the weight and layer 1 its 5-wide product after it, so the
// split keeps 1024·32 and 1024·5 values, 8 bytes each, whatever the
// chunks, in the result and on the links (down in forward, up in
// backward), and layer 0's backward loads no input row; caching keeps
// every saved tensor, more.
func TestChunkedSplitKeepsAggregations(t *testing.T) {
	want := []int64{1024 * 32 * 8, 1024 * 5 * 8}
	base := chunkedSets(`data.dataset="rmat-10-8-32-5-1"`, "data.symmetrize=true", "model.hidden=64", `train.dtype="float64"`, "chunked.chunks=4")
	kept := map[string]int64{}
	for _, inter := range []string{"split", "cache"} {
		st, be, _ := trainOneEpoch(t, append(base, `chunked.intermediates="`+inter+`"`), false)
		var res train.Result
		st.ReportResult(&res)
		fig := res.Figures["chunked"].(*ChunkedFigures)
		kept[inter] = be.(backend.TrafficCounter).TrafficByPurpose()[purposeIntermediates] / 2 // down and up
		if inter != "split" {
			if fig.IntermediatesBytes != nil {
				t.Errorf("%s reports intermediates_bytes %v", inter, fig.IntermediatesBytes)
			}
			continue
		}
		var sum int64
		for _, b := range fig.IntermediatesBytes {
			sum += b
		}
		if sum != kept[inter] {
			t.Errorf("%d intermediate bytes on the links, want twice the %d kept", 2*kept[inter], sum)
		}
		if fmt.Sprint(fig.IntermediatesBytes) != fmt.Sprint(want) {
			t.Errorf("split kept %v bytes per layer, want the aggregations' outputs %v", fig.IntermediatesBytes, want)
		}
		// Layer 0's backward loads no feature row; layer 1's reloads
		// its rows (dW reads them).
		by := be.(backend.TrafficCounter).TrafficByPurpose()
		if f, a := by[backend.PurposeFeatures], by[backend.PurposeActivations]; f != st.comm.Ru*32*8 || a != 2*st.comm.Ru*64*8 {
			t.Errorf("features %d bytes, activations %d; want one pass of %d rows of 32 and two of 64", f, a, st.comm.Ru)
		}
	}
	if kept["split"] >= kept["cache"] {
		t.Errorf("split keeps %d bytes, caching %d", kept["split"], kept["cache"])
	}
	t.Logf("kept bytes: %v", kept)
}

// TestChunkedSplitBadValue: a misspelt chunked.intermediates is a
// config error (exit 2) at the key that lists split among the values.
func TestChunkedSplitBadValue(t *testing.T) {
	_, err := config.Parse("bad.toml", []byte(testkit.CoraBase), `train.mode="chunked"`, `chunked.intermediates="splitt"`)
	var ce *config.Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "chunked.intermediates") || !strings.Contains(err.Error(), "split") {
		t.Fatalf("chunked.intermediates = \"splitt\": %v", err)
	}
}
