package formattest

import (
	"testing"

	"strata/core/graph"
)

// TestBuiltinFormats runs the suite on the formats of core/graph (what
// core opens without plugins).
func TestBuiltinFormats(t *testing.T) {
	for _, f := range graph.Formats() {
		t.Run(graph.FormatID(f), func(t *testing.T) { Test(t, f) })
	}
}
