package layers_test

import (
	"errors"
	"testing"

	"strata/core/backend/cpu"
	"strata/plugins/layers"
)

// TestDecoderSuite runs every decoder (the registry's decoder.*
// namespace, filled from models/wasm, and every fixture under
// testdata/decoders/) on a small pair graph with a repeated pair and a
// self pair: Reference, its scores against the dense Go reference keyed
// by its name (a decoder without one is reported as skipped); Gradients,
// the parameters' and the input's gradients against central finite
// differences in float64; Backends, sim against cpu; Seeds, the
// parameters' initialisation by seed. With STRATA_MUTANT=1 it runs
// testdata/mutants/decoders/ instead (TestSuiteFailsOnMutants).
func TestDecoderSuite(t *testing.T) {
	for _, m := range modules(t, "decoder", "decoders") {
		t.Run(m.name, func(t *testing.T) {
			g, err := layers.DecoderGraph(t, m.name, m.code)
			if err != nil {
				t.Fatal(err)
			}
			be := cpu.New(cpu.Options{Threads: 2})
			w, got := layers.DecForward(t, be, g)
			mag, refErr := layers.DecReferenceCheck(m.name, got, w, len(g.Ops))
			t.Run("Reference", func(t *testing.T) {
				if errors.Is(refErr, layers.ErrNoReference) {
					t.Skipf("decoder %s: %v", m.name, refErr)
				}
				if refErr != nil {
					t.Fatal(refErr)
				}
			})
			t.Run("Gradients", func(t *testing.T) { layers.CheckDecoderGradients(t, be, g) })
			t.Run("Backends", func(t *testing.T) { layers.DecSimAgrees(t, g, w, got, mag) })
			t.Run("Seeds", func(t *testing.T) { layers.CheckDecoderSeeds(t, be, g) })
		})
	}
}
