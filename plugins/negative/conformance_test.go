package negative

import (
	"testing"

	"strata/core/negative"
	"strata/core/negative/negativetest"
	"strata/core/registry"
	"strata/internal/conformance"
)

// TestConformance runs every module of this package with its defaults
// (as plugins/all does) and the configurations beyond them through the
// suite.
func TestConformance(t *testing.T) {
	for _, info := range registry.Namespace("negative") {
		t.Run(info.ID, func(t *testing.T) { conformance.Run(t, info) })
	}
	for _, tt := range []struct {
		name string
		s    func() negative.Sampler
	}{
		{"degree power=1", func() negative.Sampler { return &Degree{Power: 1} }},
		{"degree power=0", func() negative.Sampler { return &Degree{Power: 0} }},
		{"corrupt side=src", func() negative.Sampler { return &Corrupt{Side: "src"} }},
		{"corrupt side=both", func() negative.Sampler { return &Corrupt{Side: "both"} }},
	} {
		t.Run(tt.name, func(t *testing.T) { negativetest.Test(t, tt.s) })
	}
}
