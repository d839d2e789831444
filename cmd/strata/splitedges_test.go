package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/graph/numpy"
)

// TestSplitEdges writes Cora's random-85-5-10-seed0 split: every part as
// an (E, 2) .npy file that reads back with the counts printed, and the
// mistakes (no -o, shares that leave edges out, writing a shipped split
// over itself) exit 2 naming the fix.
func TestSplitEdges(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s0")
	base := []string{"split-edges", "--set", "data.dataset=embedded:cora", "--set", "data.edge_split=random-85-5-10-seed0"}
	code, stdout, stderr := cli(t, append(base, "-o", dir, "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res splitEdgesResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v: %q", err, stdout)
	}
	if len(res.Files) != len(graph.EdgeSplitParts) || res.Valid == 0 || res.ValidNeg != res.Valid || res.TestNeg != res.Test || res.Train <= res.Test {
		t.Fatalf("result %+v", res)
	}
	sh, err := numpy.ReadEdgeSplit(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{res.Train, res.Valid, res.Test, res.ValidNeg, res.TestNeg} {
		if got := sh.Pairs[i].Len(); got != want {
			t.Errorf("%s: %d pairs, printed %d", graph.EdgeSplitParts[i], got, want)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no output", base, "-o DIR is required"},
		{"shares below 100", []string{"split-edges", "--set", "data.dataset=embedded:cora", "--set", "data.edge_split=random-50-10-10", "-o", dir + "2"}, "sum to 100"},
		{"over its own input", []string{"split-edges", "--set", "data.dataset=embedded:cora", "--set", "data.edge_split=" + dir, "-o", dir}, "same file as the input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, _, stderr := cli(t, tc.args...); code != exitUser || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d saying %q", code, stderr, exitUser, tc.want)
			}
		})
	}
	if _, err := os.Stat(dir + "2"); err == nil {
		t.Error("a refused split wrote its directory")
	}
}
