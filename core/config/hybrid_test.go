package config

import "testing"

// TestHybridHash: a [hybrid] section left at its default does not enter
// config_sha256 (configs written before it keep their hash); any other
// value does.
func TestHybridHash(t *testing.T) {
	const base = "[data]\ndataset = \"embedded:cora\"\n"
	hash := func(text string, sets ...string) string { return parseHash(t, text, sets...) }
	plain := hash(base)
	if h := hash(base+"[hybrid]\ncpu_trainers = 1\ncpu_share = 0.25\n", "hybrid.drm=off"); h != plain {
		t.Errorf("[hybrid] at its defaults hashes as %s, without it %s", h, plain)
	}
	for _, set := range []string{"hybrid.cpu_share=0.5", "hybrid.drm=predicted", "hybrid.prefetch=false", "hybrid.cpu_gbps=1"} {
		if hash(base, set) == plain {
			t.Errorf("%s does not change the hash", set)
		}
	}
}
