package config

import (
	"strings"
	"testing"
)

// TestStoreSection checks the [store] keys: graph_ratio takes a number in
// [0, 1] or "auto", bad values are errors naming the key, the section
// round-trips through TOML, and a config without it keeps its hash.
func TestStoreSection(t *testing.T) {
	for _, c := range []struct {
		text  string
		ratio float64
		err   string
	}{
		{minimal, GraphRatioUnset, ""},
		{minimal + "[store]\ngraph_ratio = 0.25\n", 0.25, ""},
		{minimal + "[store]\ngraph_ratio = 1\n", 1, ""},
		{minimal + "[store]\ngraph_ratio = \"auto\"\n", GraphRatioAuto, ""},
		{minimal + "[store]\ngraph_ratio = 1.5\n", 0, `store.graph_ratio = 1.5: must be in [0, 1] or "auto" (`},
		// The internal "unset" sentinel is never offered as a value.
		{minimal + "[store]\ngraph_ratio = 2\n", 0, " or left out (the samplers read the host graph)"},
		{minimal + "[store]\nfeature_ratio = -1\n", 0, "store.feature_ratio = -1: must be in [0, 1] or left out ("},
		{minimal + "[store]\ngraph_ratio = \"aut\"\n", 0, `store.graph_ratio = "aut": the only string store.graph_ratio takes is "auto"`},
		{minimal + "[store]\nfeature_ratio = -0.5\n", 0, "store.feature_ratio = -0.5"},
		{minimal + "[store]\nplacement = \"striped\"\n", 0, "store.placement"},
		{minimal + "[store]\nreplicate = 2\n", 0, "store.replicate = 2"},
	} {
		cfg, err := Parse("c.toml", []byte(c.text))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.text, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", c.text, err)
		}
		if cfg.Store.GraphRatio != c.ratio {
			t.Errorf("%q: graph ratio %v, want %v", c.text, cfg.Store.GraphRatio, c.ratio)
		}
		text, err := cfg.TOML()
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse("c.toml", text)
		if err != nil || again.Store != cfg.Store {
			t.Errorf("%q: round trip %+v, %v", c.text, again.Store, err)
		}
	}
	plain, _ := Parse("c.toml", []byte(minimal))
	canon, _ := plain.Canonical()
	if strings.Contains(string(canon), "store") {
		t.Errorf("a config without [store] hashes it:\n%s", canon)
	}
}
