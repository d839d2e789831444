package strategytest

import (
	"path/filepath"
	"testing"

	"strata/core/graph"
	"strata/core/graph/formats"
)

// CoraBinary writes embedded Cora as a .strata file in a temporary
// directory and returns its path with the dataset (whose features are the
// file's rows), for tests of the disk feature tier.
func CoraBinary(t *testing.T) (string, *graph.Dataset) {
	t.Helper()
	d, err := graph.Open("embedded:cora")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "cora.strata")
	if err := formats.WriteBinary(p, d); err != nil {
		t.Fatal(err)
	}
	return p, d
}
