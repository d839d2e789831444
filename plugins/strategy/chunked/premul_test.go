package chunked

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"strata/plugins/strategy/internal/testkit"
)

// TestChunkedPremulMatchesFullGraph trains with node passes
// (chunked.premultiply: a layer's product with W before its aggregation
// computed once per node, the chunks aggregating its rows) and
// full-graph from the same initial parameters, every dropout on, and
// compares the loss, the gradients and the parameters after every step
// to testkit.SplitTol (float64: the same sums in another order). It
// checks which layers the planner cuts (node_pass: the cut's width per
// layer, 0 where the chunks run the whole layer): GCN's and GIN's layer
// 1 (64 → 5, W first) are cut; their layer 0 on R-MAT (32 features, 64
// hidden) is not, GCN's aggregating its input first and GIN's product
// being wider than its input, so they keep the old order; GCN's layer 0
// on Cora (1433 → 16) is cut and its layer 1 (16 → 7) is not, the node
// pass moving more than the chunks' few shared rows; GraphSAGE's root
// and neighbour products read one dropout, so no single value cuts its
// layers. The cpu backend cuts by default, in RAM and with a host file;
// sim only when the key asks.
func TestChunkedPremulMatchesFullGraph(t *testing.T) {
	rmat := []string{`data.dataset="rmat-10-8-32-5-1"`, "data.symmetrize=true", "model.hidden=64"}
	cora := []string{`data.dataset="embedded:cora"`}
	rows := []struct {
		model   string
		data    []string
		backend string
		file    bool
		extra   []string
		cut     string // node_pass: per layer, the cut's width
	}{
		{"gcn", rmat, "cpu", true, nil, "0 5"},
		{"gcn", rmat, "cpu", false, []string{`chunked.dedup="none"`}, "0 5"},
		{"gcn", cora, "cpu", true, []string{`chunked.intermediates="recompute"`}, "16 0"},
		{"gin", rmat, "cpu", true, []string{`chunked.dedup="p2p"`}, "0 5"},
		{"sage", rmat, "cpu", false, nil, ""},
		{"gcn", rmat, "sim", false, nil, ""},
		{"gcn", rmat, "sim", false, []string{`chunked.premultiply="bytes"`, `chunked.dedup="none"`, `devices.preset="pcie-only"`, "devices.count=2"}, "0 5"},
		{"gcn", rmat, "cpu", false, []string{`chunked.premultiply="off"`}, ""},
	}
	if testing.Short() {
		rows = slices.Delete(rows, 1, 3)
	}
	for _, c := range rows {
		sets := append(append(append(testkit.ModelSets(c.model), testkit.SplitDropouts(c.model)...), "model.layers=2"), c.data...)
		runAgainstFullGraph(t, c.model, c.backend, c.file, sets, c.extra, func(t *testing.T, r *chunkedRun) {
			t.Logf("rows a pass %d of %d nodes", r.passRows(), r.e.DS.NumNodes)
			if got := strings.Trim(fmt.Sprint(r.preFigure()), "[]"); got != c.cut {
				t.Fatalf("node passes %q, want %q", got, c.cut)
			}
		})
	}
}

// runAgainstFullGraph runs, as a subtest named by the case, chunked
// training (4 chunks, sets then extra, on backend, with a host file of
// its own when file) against full-graph training of sets on backend, in
// float64, and compares two steps to testkit.SplitTol; check sees the
// chunked run's plan first (a run of its own, released).
func runAgainstFullGraph(t *testing.T, model, backend string, file bool, sets, extra []string, check func(*testing.T, *chunkedRun)) {
	var data []string // the case's data and model keys, for its name
	for _, s := range sets {
		if strings.HasPrefix(s, "data.") || strings.HasPrefix(s, "model.input_dropout") {
			data = append(data, s)
		}
	}
	name := fmt.Sprintf("%s/%s/%s/file=%v/%s", model, strings.Join(data, ","), backend, file, strings.Join(extra, ","))
	t.Run(name, func(t *testing.T) {
		sets := append(slices.Clone(sets), `train.dtype="float64"`, `train.backend="`+backend+`"`)
		chunked := append(slices.Clone(sets), `train.mode="chunked"`, "chunked.chunks=4")
		chunked = append(chunked, extra...)
		plan := slices.Clone(chunked) // the run that shows the plan, with a host file of its own
		if file {
			dir := t.TempDir()
			chunked = append(chunked, "chunked.host_file="+filepath.Join(dir, "host.bin"))
			plan = append(plan, "chunked.host_file="+filepath.Join(dir, "plan.bin"))
		}
		r, _ := newTestRun(t, testkit.MustParse(t, testkit.CoraBase, plan...))
		r.Release()
		check(t, r)
		want := testkit.RunSteps(t, 2, testkit.CoraBase, sets...)
		got := testkit.RunSteps(t, 2, testkit.CoraBase, chunked...)
		testkit.CompareSteps(t, got, want, testkit.SplitTol, testkit.SplitTol)
	})
}
