package sampler

import (
	"context"
	"testing"

	"strata/core/sampling"
	"strata/core/sampling/samplertest"
)

// pinnedBlocks are the checksums (samplertest.Checksum) of the blocks every
// configuration of samplerKinds, and sampling.Full, drew on the R-MAT
// scale-12 graph from 700 seeds with rng 9 and 10, computed with the
// samplers as they were before they moved onto the base
// (sampling.SampleLayers). A change that alters a draw or the relabelling
// fails here.
var pinnedBlocks = map[string][2]string{
	"full":                  {"0c856b743d9520e4", "0c856b743d9520e4"},
	"full one layer":        {"2fc0d17ced933a45", "2fc0d17ced933a45"},
	"uniform":               {"ff9f7546bedba51e", "2d1387f5c1f6203a"},
	"uniform replace":       {"14f6424514fbd773", "7aefc5892228fed4"},
	"uniform all+3 layers":  {"a292e66375824e40", "907b110b2e115802"},
	"khop":                  {"14a1c558d68f5743", "053f650d54f4e2c1"},
	"khop one layer":        {"e9391d42f86365a5", "a3699249a73abf1c"},
	"randomwalk":            {"763fc41a8d2723ad", "207b1c5319789a75"},
	"randomwalk no weights": {"70c341bcc996bc33", "7c089b227ea52b67"},
	"sampling.Full 3 hops":  {"206012a4371eade6", "206012a4371eade6"},
}

// TestPinnedBlocks holds every sampler to the blocks it drew before the
// sampler base.
func TestPinnedBlocks(t *testing.T) {
	g := rmatGraph(t, 12)
	seeds := spreadSeeds(700, g.NumRows)
	kinds := append(samplerKinds(), kind{name: "sampling.Full 3 hops", s: sampling.Full{Hops: 3}})
	if len(kinds) != len(pinnedBlocks) {
		t.Fatalf("%d sampler configurations, %d pinned", len(kinds), len(pinnedBlocks))
	}
	for _, k := range kinds {
		want, ok := pinnedBlocks[k.name]
		if !ok {
			t.Errorf("%s: no pinned checksum", k.name)
			continue
		}
		for i, rng := range []uint64{9, 10} {
			blocks, err := k.s.Sample(context.Background(), g, seeds, rng)
			if err != nil {
				t.Fatalf("%s: %v", k.name, err)
			}
			if got := samplertest.Checksum(blocks); got != want[i] {
				t.Errorf("%s, rng %d: blocks %s, pinned %s", k.name, rng, got, want[i])
			}
		}
	}
}
