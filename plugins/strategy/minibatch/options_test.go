package minibatch

import (
	"strings"
	"testing"

	"strata/core/config"
)

// optionsBase is a mini-batch config without [minibatch].
const optionsBase = `[data]
dataset = "embedded:cora"

[model]
name = "sage"
hidden = 16

[train]
mode = "minibatch"
epochs = 2
batch_size = 256

[sampler]
name = "uniform"
fanouts = [5, 5]
`

// TestMovedOptionsKeepTheirHash pins config_sha256 of configs that set
// the options core's config held before [minibatch] owned them: the
// hashes were printed by the code before the move (22a56db), so every
// published run ID stays the same, in either spelling.
func TestMovedOptionsKeepTheirHash(t *testing.T) {
	for _, c := range []struct {
		text string
		sets []string
		want string
	}{
		{optionsBase, nil, "b7440cb34926a8878380be6e0921391457af8959bd6dfc8018e377a09b09d5ae"},
		{optionsBase, []string{"train.overlap=true"}, "9d341305afd3beb3bc72577d95f92f4e4914f7f786854e40fc42ad0d704864f2"},
		{optionsBase, []string{"minibatch.overlap=true"}, "9d341305afd3beb3bc72577d95f92f4e4914f7f786854e40fc42ad0d704864f2"},
		{optionsBase + "\n[minibatch]\noverlap = true\n", nil, "9d341305afd3beb3bc72577d95f92f4e4914f7f786854e40fc42ad0d704864f2"},
		{optionsBase, []string{"store.graph_ratio=auto"}, "b70b476986dd5607141d4956f88ee9399cc241f69ccf168c70aa3b3ba065b408"},
		{optionsBase, []string{"minibatch.store.graph_ratio=auto"}, "b70b476986dd5607141d4956f88ee9399cc241f69ccf168c70aa3b3ba065b408"},
		{optionsBase, []string{"store.feature_ratio=0.5", "train.overlap=true"}, "5fcace25481d0d8d5a39a75e23dfe9371eee44435aa93db9cd422d4d3cbe7df9"},
		{optionsBase, []string{"minibatch.store.feature_ratio=0.5", "minibatch.overlap=true"}, "5fcace25481d0d8d5a39a75e23dfe9371eee44435aa93db9cd422d4d3cbe7df9"},
		{strings.Replace(optionsBase, "batch_size = 256\n", "batch_size = 256\noverlap = true\n", 1) +
			"\n[store]\ngraph_ratio = \"auto\"\nplacement = \"replicated-interleaved\"\nreplicate = 0.25\n", nil,
			"b3f55b9b838f5f349a90a84f1c6bbcdbe440b0824ee7001e77cef76dcbb34f14"},
		{optionsBase + "\n[minibatch]\noverlap = true\n\n[minibatch.store]\ngraph_ratio = \"auto\"\nplacement = \"replicated-interleaved\"\nreplicate = 0.25\n", nil,
			"b3f55b9b838f5f349a90a84f1c6bbcdbe440b0824ee7001e77cef76dcbb34f14"},
	} {
		cfg, err := config.Parse("c.toml", []byte(c.text), c.sets...)
		if err != nil {
			t.Fatalf("%v: %v", c.sets, err)
		}
		if got, _ := cfg.SHA256(); got != c.want {
			canon, _ := cfg.Canonical()
			t.Errorf("%v: config_sha256 %s, want %s; canonical form:\n%s", c.sets, got, c.want, canon)
		}
		// The resolved config writes the new spelling and reads back equal.
		text, err := cfg.TOML()
		if err != nil {
			t.Fatal(err)
		}
		again, err := config.Parse("again.toml", text)
		if err != nil {
			t.Fatalf("%v: the resolved config does not parse: %v\n%s", c.sets, err, text)
		}
		if optionsOf(again) != optionsOf(cfg) || strings.Contains(string(text), "[store]") {
			t.Errorf("%v: round trip %+v, want %+v\n%s", c.sets, optionsOf(again), optionsOf(cfg), text)
		}
	}
}

// TestOptionsSection checks the [minibatch] keys in both spellings: the
// store's values and their errors (naming the key and its line), both
// spellings at once, and the options set under another train.mode.
func TestOptionsSection(t *testing.T) {
	// Under fullgraph, without the batch size that only samplers read.
	fullgraph := strings.Replace(strings.Replace(optionsBase, `mode = "minibatch"`, `mode = "fullgraph"`, 1), "batch_size = 256\n", "", 1)
	for _, c := range []struct {
		name  string
		text  string
		sets  []string
		ratio float64
		err   string
	}{
		{"absent", optionsBase, nil, GraphRatioUnset, ""},
		{"old number", optionsBase + "[store]\ngraph_ratio = 0.25\n", nil, 0.25, ""},
		{"new number", optionsBase + "[minibatch.store]\ngraph_ratio = 1\n", nil, 1, ""},
		{"old auto", optionsBase + "[store]\ngraph_ratio = \"auto\"\n", nil, GraphRatioAuto, ""},
		{"out of range", optionsBase + "[store]\ngraph_ratio = 1.5\n", nil, 0, `c.toml:17: store.graph_ratio = 1.5: must be in [0, 1] or "auto" (`},
		// The internal "unset" sentinel is never offered as a value.
		{"sentinel", optionsBase + "[minibatch.store]\ngraph_ratio = 2\n", nil, 0, " or left out (the samplers read the host graph)"},
		{"feature ratio", optionsBase + "[store]\nfeature_ratio = -1\n", nil, 0, "store.feature_ratio = -1: must be in [0, 1] or left out ("},
		{"word", optionsBase + "[store]\ngraph_ratio = \"aut\"\n", nil, 0, `the only string store.graph_ratio takes is "auto"`},
		{"placement", optionsBase + "[store]\nplacement = \"striped\"\n", nil, 0, "c.toml:17: store.placement = \"striped\""},
		{"replicate", optionsBase + "[store]\nreplicate = 2\n", nil, 0, "store.replicate = 2"},
		{"typo", optionsBase + "[minibatch]\noverlp = true\n", nil, 0, `unknown key "minibatch.overlp" for strategy "minibatch" (did you mean "minibatch.overlap"?)`},
		{"both spellings", strings.Replace(optionsBase, "epochs = 2\n", "epochs = 2\noverlap = false\n", 1) + "[minibatch]\noverlap = true\n", nil, 0,
			"c.toml:11: train.overlap and minibatch.overlap set the same option; keep minibatch.overlap"},
		{"other mode, old key", fullgraph, []string{"train.overlap=true"}, 0,
			`train.overlap: an option of train.mode = "minibatch" (now minibatch.overlap), which train.mode = "fullgraph" does not read`},
		{"other mode, old section", fullgraph + "[store]\ngraph_ratio = 0.5\n", nil, 0, `c.toml:15: store: an option of train.mode = "minibatch"`},
		{"other mode, batch size", fullgraph, []string{"train.batch_size=64"}, 0,
			`train.batch_size: an option of train.mode = "distmini" or "hybrid" or "minibatch" (now distmini.batch_size, hybrid.batch_size, minibatch.batch_size), which train.mode = "fullgraph" does not read`},
		{"other mode, default batch size", fullgraph, []string{"train.batch_size=1024", "train.prefetch=2"}, GraphRatioUnset, ""},
		{"other mode, new section", fullgraph + "[minibatch]\noverlap = true\n", nil, 0, `the section configures train.mode = "minibatch", not "fullgraph"`},
		{"other mode, defaults", fullgraph + "[store]\ngraph_ratio = -2.0\n", []string{"train.overlap=false"}, GraphRatioUnset, ""},
	} {
		cfg, err := config.Parse("c.toml", []byte(c.text), c.sets...)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := optionsOf(cfg).Store.GraphRatio; got != c.ratio {
			t.Errorf("%s: graph ratio %v, want %v", c.name, got, c.ratio)
		}
	}
}

// TestSharedOptions checks the options minibatch shares with other
// strategies (batch_size, prefetch_depth, micro_batches) in both
// spellings: an override wins over the file in either one, and the value
// reaches the strategy.
func TestSharedOptions(t *testing.T) {
	for _, c := range []struct {
		name         string
		text         string
		sets         []string
		batch, depth int
		k            int
	}{
		{"file, old spelling", optionsBase, nil, 256, 2, 1},
		{"new spelling overrides old", optionsBase, []string{"minibatch.batch_size=64", "minibatch.prefetch_depth=3"}, 64, 3, 1},
		{"old spelling overrides new", optionsBase + "[minibatch]\nbatch_size = 64\nmicro_batches = 2\n", []string{"train.batch_size=32", "train.micro_batches=4"}, 32, 2, 4},
		{"old spellings", optionsBase, []string{"train.prefetch=5", "train.micro_batches=auto"}, 256, 5, 0},
	} {
		cfg, err := config.Parse("c.toml", []byte(c.text), c.sets...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		o := optionsOf(cfg)
		if o.BatchSize != c.batch || o.PrefetchDepth != c.depth || o.MicroBatches != c.k {
			t.Errorf("%s: batch %d depth %d K %d, want %d %d %d", c.name, o.BatchSize, o.PrefetchDepth, o.MicroBatches, c.batch, c.depth, c.k)
		}
	}
}
