package steprun_test

import (
	"slices"
	"testing"

	"strata/core/graph"
	"strata/plugins/strategy/internal/testkit"
)

// TestAdjacenciesForModel: the run keeps one copy of the graph for a
// model that reads only adj (GraphSAGE, GIN: AdjSelf nil), and adj with
// its self loops, as graph.AddSelfLoops makes them, for one that reads
// adj_self (GCN, GAT).
func TestAdjacenciesForModel(t *testing.T) {
	for _, tc := range []struct {
		model string
		self  bool
	}{{"sage", false}, {"gin", false}, {"gcn", true}, {"gat", true}} {
		t.Run(tc.model, func(t *testing.T) {
			e := testkit.TestEnv(t, testkit.ModelSets(tc.model)...)
			if got := e.Adjs.AdjSelf != nil; got != tc.self {
				t.Fatalf("adj_self built: %v, want %v", got, tc.self)
			}
			if !tc.self {
				return
			}
			want := graph.AddSelfLoops(e.Adjs.Adj)
			got := e.Adjs.AdjSelf
			if !slices.Equal(got.Indptr, want.Indptr) || !slices.Equal(got.Idx32, want.Idx32) || !slices.Equal(got.Idx64, want.Idx64) {
				t.Fatal("adj_self is not adj with its self loops")
			}
		})
	}
}
