package formattest

import (
	"testing"

	"strata/core/graph"
	_ "strata/core/graph/formats"
	_ "strata/core/graph/numpy"
	_ "strata/core/graph/synth"
)

// TestBuiltinFormats runs the suite on the built-in formats, those of
// core/graph/formats, core/graph/numpy and core/graph/synth (what core
// opens without plugins).
func TestBuiltinFormats(t *testing.T) {
	for _, f := range graph.Formats() {
		t.Run(graph.FormatID(f), func(t *testing.T) { Test(t, f) })
	}
}
