package config

import (
	"errors"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"strata/core/registry"
	"strata/plugins/sampler"

	// Plugins that do not import this package decode their own sections.
	_ "strata/core/optim"
	_ "strata/partitioners"
	_ "strata/plugins/cache"
	_ "strata/plugins/placement"
)

// testModel stands in for the WASM model modules, which this package does
// not link: with model.* registered, model.name is checked.
type testModel struct{ id string }

func (m *testModel) StrataModule() registry.ModuleInfo {
	id := m.id
	return registry.ModuleInfo{ID: id, New: func() registry.Module { return &testModel{id: id} }, Doc: "test model", Default: id == "strategy.fullgraph"}
}

// testCache exercises the decoder on more field types and a Validate that
// checks more than one key.
type testCache struct {
	Lo      int       `toml:"lo" doc:"lower bound"`
	Hi      int       `toml:"hi"`
	Fanouts []int     `toml:"fanouts" range:"[1,)"`
	Weights []float64 `toml:"weights"`
	Mode    string    `toml:"mode" enum:"a,b"`
	Count   uint16    `toml:"count"`
	Inner   struct {
		Depth int `toml:"depth" range:"[0,3]"`
	} `toml:"inner"`
	notConfig int
}

func (*testCache) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "cache.zz-test", New: func() registry.Module { return &testCache{Hi: 10, Mode: "a"} }}
}

func (c *testCache) Validate() error {
	if c.Lo > c.Hi {
		return errors.New("lo must not exceed hi")
	}
	return nil
}

func init() {
	// Stand-ins for the modules of packages that import this one.
	for _, id := range []string{"model.gcn", "model.gat", "model.sage", "model.gin", "model.sage-lstm", "model.pna",
		"strategy.fullgraph", "strategy.minibatch", "strategy.micro", "strategy.hybrid", "strategy.chunked", "backend.cpu", "backend.sim"} {
		registry.Register(&testModel{id: id})
	}
	registry.Register(new(testCache))
}

const minimal = "[data]\ndataset = \"embedded:cora\"\n"

func TestMinimalIsDefault(t *testing.T) {
	c, err := Parse("m.toml", []byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Path = "m.toml"
	want.Data.Dataset = "embedded:cora"
	if !sameConfig(c, want) {
		t.Fatalf("minimal config = %+v\nwant %+v", c, want)
	}
	if c.Model.InputDropoutRate() != 0.5 {
		t.Fatalf("input dropout rate %v", c.Model.InputDropoutRate())
	}
	if c.Sampler.Module != nil || c.Cache.String() != "none" {
		t.Fatalf("absent plugin sections: %+v %+v", c.Sampler, c.Cache)
	}
}

// TestMalformed checks that every error names the file and line (or the
// override) and the key.
func TestMalformed(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		overrides []string
		want      []string // each must occur in the message
	}{
		{"unknown key", minimal + "[train]\nepoch = 5\n", nil,
			[]string{`x.toml:4: unknown key "train.epoch" (did you mean "train.epochs"?)`}},
		{"unknown key in wrong section", minimal + "[model]\nepochs = 5\n", nil,
			[]string{`x.toml:4: unknown key "model.epochs" (did you mean "train.epochs"?)`}},
		{"unknown top-level key", "epochs = 5\n" + minimal, nil,
			[]string{`x.toml:1: unknown key "epochs" (did you mean "train.epochs"?)`}},
		{"unknown section", minimal + "[trian]\nepochs = 5\n", nil,
			[]string{`x.toml:3: unknown key "trian" (did you mean "train"?)`}},
		{"unknown key without suggestion", minimal + "[train]\nzzzz = 1\n", nil,
			[]string{`x.toml:4: unknown key "train.zzzz"; the keys of [train] are "mode", "epochs"`}},
		{"wrong type string for integer", minimal + "[train]\n\nepochs = \"200\"\n", nil,
			[]string{`x.toml:5: train.epochs: expected integer, got string "200"`}},
		{"float for integer", minimal + "[train]\nepochs = 2.5\n", nil,
			[]string{`x.toml:4: train.epochs: expected integer, got float 2.5`}},
		{"integer for boolean", "[data]\ndataset = \"a\"\nsymmetrize = 1\n", nil,
			[]string{`x.toml:3: data.symmetrize: expected boolean, got integer 1`}},
		{"table for string", "[data]\ndataset = { path = \"a\" }\n", nil,
			[]string{`x.toml:2: data.dataset: expected string, got table`}},
		{"array for float", minimal + "[train]\nlr = [0.1]\n", nil,
			[]string{`x.toml:4: train.lr: expected float, got array [0.1]`}},
		{"section is not a table", "train = 5\n" + minimal, nil,
			[]string{`x.toml:1: train: expected table, got integer 5`}},
		{"bad enum", minimal + "[train]\noptimizer = \"adamx\"\n", nil,
			[]string{`x.toml:4: train.optimizer = "adamx": allowed values are "adam", "adamw", "sgd" (did you mean "adam"?)`}},
		{"bad enum backend", minimal + "[train]\nbackend = \"gpu\"\n", nil,
			[]string{`x.toml:4: train.backend = "gpu": allowed values are "cpu", "sim"`}},
		{"bad enum data", "[data]\ndataset = \"a\"\nfeature_norm = \"l2\"\n", nil,
			[]string{`x.toml:3: data.feature_norm = "l2": allowed values are "auto", "none", "row"`}},
		{"bad enum jk", minimal + "[model]\njk = \"sum\"\n", nil,
			[]string{`x.toml:4: model.jk = "sum": allowed values are "", "cat", "max", "lstm"`}},
		{"integer for residual", minimal + "[model]\nresidual = 1\n", nil,
			[]string{`x.toml:4: model.residual: expected boolean, got integer 1`}},
		{"missing required key", "[data]\nsymmetrize = false\n", nil,
			[]string{`x.toml:1: data.dataset: required key is missing: add dataset = "embedded:cora" under [data]`}},
		{"missing data section", "[train]\nepochs = 3\n", nil,
			[]string{`x.toml: data.dataset: required key is missing`}},
		{"empty required string", "[data]\ndataset = \"\"\n", nil,
			[]string{`x.toml:2: data.dataset must not be empty`}},
		{"out of range integer", minimal + "[train]\nepochs = 0\n", nil,
			[]string{`x.toml:4: train.epochs = 0: must be in [1, 10000000]`}},
		{"out of range open bound", minimal + "[train]\nlr = 0\n", nil,
			[]string{`x.toml:4: train.lr = 0: must be > 0`}},
		{"out of range interval", minimal + "[model]\ndropout = 1.0\n", nil,
			[]string{`x.toml:4: model.dropout = 1.0: must be in [0, 1)`}},
		{"special value", minimal + "[model]\ninput_dropout = -0.5\n", nil,
			[]string{`x.toml:4: model.input_dropout = -0.5: must be in [0, 1) or -1 (same as model.dropout)`}},
		{"negative memory", minimal + "[devices]\nmemory_bytes = -1\n", nil,
			[]string{`x.toml:4: devices.memory_bytes = -1: must be in [0, 1125899906842624]`}},
		{"model option of a bad type", minimal + "[model.options]\nheads = 8\nact = [1, 2]\n", nil,
			[]string{`x.toml:5: model.options.act: expected integer, float, boolean or string, got array [1, 2]`}},
		{"model option table", minimal + "[model]\noptions = { a = { b = 1 } }\n", nil,
			[]string{`x.toml:4: model.options.a: expected integer, float, boolean or string, got table`}},
		{"unknown model", minimal + "[model]\nname = \"gcnn\"\n", nil,
			[]string{`x.toml:4: model.name = "gcnn": unknown model (did you mean "gcn"?); available: "gat", "gcn", "gin", "pna", "sage", "sage-lstm"`}},
		{"module not wasm", minimal + "[model]\nmodule = \"layer.so\"\n", nil,
			[]string{`x.toml:4: model.module = "layer.so": expected a path to a .wasm file`}},
		{"unknown plugin", minimal + "[sampler]\nname = \"fulll\"\n", nil,
			[]string{`x.toml:4: sampler.name = "fulll": unknown sampler plugin (did you mean "full"?); available: "full"`}},
		{"plugin of another namespace", minimal + "[sampler]\nname = \"cache.degree\"\n", nil,
			[]string{`x.toml:4: sampler.name = "cache.degree": not a sampler plugin`}},
		{"plugin name type", minimal + "[cache]\nname = 3\n", nil,
			[]string{`x.toml:4: cache.name: expected string, got integer 3`}},
		{"plugin options without name", minimal + "[partition]\nbalance = \"edges\"\n", nil,
			[]string{`x.toml:3: partition.name: required key is missing`, `available: ` + quoteList(pluginNames("partitioner"))}},
		{"unknown plugin option", minimal + "[sampler]\nname = \"full\"\nfanout = [10, 25]\n", nil,
			[]string{`x.toml:5: unknown key "sampler.fanout" for sampler "full"; its options are "layers"`}},
		{"misspelt plugin option", minimal + "[sampler]\nname = \"full\"\nlayer = 3\n", nil,
			[]string{`x.toml:5: unknown key "sampler.layer" for sampler "full" (did you mean "sampler.layers"?)`}},
		{"option of a plugin without options", minimal + "[cache]\nname = \"none\"\ncapacity = 0.5\n", nil,
			[]string{`x.toml:5: unknown key "cache.capacity" for cache "none"; cache "none" has no options`}},
		{"plugin option out of range", minimal + "[cache]\nname = \"degree\"\ncapacity = 1.5\n", nil,
			[]string{`x.toml:5: cache.capacity = 1.5: must be in [0, 1]`}},
		{"plugin option bad enum", minimal + "[partition]\nname = \"range\"\nbalance = \"vertices\"\n", nil,
			[]string{`x.toml:5: partition.balance = "vertices": allowed values are "nodes", "edges"`}},
		{"plugin validate", minimal + "[cache]\nname = \"zz-test\"\nlo = 20\n", nil,
			[]string{`x.toml:3: cache (cache.zz-test): lo must not exceed hi`}},
		{"plugin array element", minimal + "[cache]\nname = \"zz-test\"\nfanouts = [\n  10,\n  0,\n]\n", nil,
			[]string{`x.toml:5: cache.fanouts[1] = 0: must be >= 1`}},
		{"plugin unsigned", minimal + "[cache]\nname = \"zz-test\"\ncount = -2\n", nil,
			[]string{`x.toml:5: cache.count = -2: must be a non-negative integer that fits in uint16`}},
		{"plugin nested table", minimal + "[cache]\nname = \"zz-test\"\ninner.depth = 4\n", nil,
			[]string{`x.toml:5: cache.inner.depth = 4: must be in [0, 3]`}},
		{"plugin inline table key", minimal + "[cache]\nname = \"zz-test\"\ninner = { depth = 1, width = 2 }\n", nil,
			[]string{`x.toml:5: unknown key "cache.inner.width" for cache "zz-test"; its options are "depth"`}},
		{"dotted key line", "\n\ntrain.epochz = 3\n" + minimal, nil,
			[]string{`x.toml:3: unknown key "train.epochz" (did you mean "train.epochs"?)`}},
		{"syntax error", minimal + "[train]\nepochs = \n", nil,
			[]string{`x.toml:4:`, `TOML syntax error`, `train.epochs`}},
		{"syntax error duplicate key", minimal + "[train]\nepochs = 1\nepochs = 2\n", nil,
			[]string{`x.toml:5:`, `TOML syntax error`, `epochs`}},
		{"syntax error unterminated table", "[data\n", nil,
			[]string{`x.toml:`, `TOML syntax error: expected '.' or ']' to end table name`}},
		{"syntax error bad value", minimal + "[model]\nhidden = 1_\n", nil,
			[]string{`x.toml:4:`, `TOML syntax error`, `model.hidden`}},
		{"override unknown key", minimal, []string{"train.epochz=5"},
			[]string{`--set train.epochz=5: unknown key "train.epochz" (did you mean "train.epochs"?)`}},
		{"override wrong type", minimal, []string{"train.epochs=many"},
			[]string{`--set train.epochs=many: train.epochs: expected integer, got string "many"`}},
		{"override without value", minimal, []string{"train.epochs"},
			[]string{`--set train.epochs: expected key=value`}},
		{"override bad key", minimal, []string{"train..epochs=1"},
			[]string{`--set train..epochs=1: malformed key`}},
		{"override through a value", minimal + "[train]\nepochs = 3\n", []string{"train.epochs.x=1"},
			[]string{`--set train.epochs.x=1: cannot set "train.epochs.x": "train.epochs" is not a table`}},
		{"override creates a table", minimal, []string{"model.hidden.x=3"},
			[]string{`--set model.hidden.x=3: model.hidden: expected integer, got table`}},
		{"override out of range", minimal, []string{"model.dropout=2"},
			[]string{`--set model.dropout=2: model.dropout = 2: must be in [0, 1)`}},
		{"word key zero", zzK + "zz_k = 0\n", nil,
			[]string{`x.toml:5: train.zz_k = 0: must be in [1, 1048576]`}},
		{"word key other string", zzK + "zz_k = \"Auto\"\n", nil,
			[]string{`x.toml:5: train.zz_k = "Auto": the only string train.zz_k takes is "auto"`, `otherwise give an integer in [1, 1048576] (did you mean "auto"?)`}},
		{"word key word", zzK + "zz_k = \"four\"\n", nil,
			[]string{`x.toml:5: train.zz_k = "four": the only string train.zz_k takes is "auto"`}},
		{"word key float", zzK + "zz_k = 2.5\n", nil,
			[]string{`x.toml:5: train.zz_k: expected integer or "auto", got float 2.5`}},
		{"word key, new spelling", zzK + "[zz-a]\nk = 0\n", nil,
			[]string{`x.toml:6: zz-a.k = 0: must be in [1, 1048576]`}},
		{"word key override", zzK, []string{"train.zz_k=autoo"},
			[]string{`--set train.zz_k=autoo: train.zz_k = "autoo": the only string`, `(did you mean "auto"?)`}},
		{"word on a string key", minimal + "[train]\nepochs = \"auto\"\n", nil,
			[]string{`x.toml:4: train.epochs: expected integer, got string "auto"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("configs/x.toml", []byte(tt.src), tt.overrides...)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error\n  %s\nlacks\n  %s", msg, w)
				}
			}
			for _, line := range strings.Split(msg, "\n") {
				if !strings.HasPrefix(line, "configs/x.toml") && !strings.HasPrefix(line, "--set ") {
					t.Errorf("error line %q does not start with its location", line)
				}
			}
			if len(Errors(err)) == 0 {
				t.Errorf("Errors(err) found no *Error in %T", err)
			}
		})
	}
}

// TestAllErrorsAtOnce checks that one pass reports every problem, one per
// line, in line order.
func TestAllErrorsAtOnce(t *testing.T) {
	src := `[data]
dataset = "embedded:cora"
[train]
epoch = 5
optimizer = "lion"
lr = -1
[model]
dropout = 1.5
hiden = 3
[sampler]
name = "fulll"
[cache]
name = "degree"
capacity = 2
`
	_, err := Parse("x.toml", []byte(src), "train.seed=x")
	errs := Errors(err)
	wantLines := []int{4, 5, 6, 8, 9, 11, 14, 0}
	if len(errs) != len(wantLines) {
		t.Fatalf("%d errors, want %d:\n%v", len(errs), len(wantLines), err)
	}
	for i, e := range errs {
		if e.Line != wantLines[i] {
			t.Errorf("error %d at line %d, want %d: %v", i, e.Line, wantLines[i], e)
		}
	}
	if errs[7].Override != "--set train.seed=x" || errs[7].Key != "train.seed" {
		t.Errorf("override error %+v", errs[7])
	}
	if got := strings.Count(err.Error(), "\n"); got != len(wantLines)-1 {
		t.Errorf("%d newlines in the joined message", got)
	}
}

func TestOverrides(t *testing.T) {
	c, err := Parse("x.toml", []byte(minimal+"[train]\nepochs = 7\n"),
		"train.epochs=5", "train.lr=0.1", "data.dataset=1e5", "train.optimizer=sgd",
		"model.options.heads=8", "sampler.name=full", "sampler.layers=3", `data.feature_norm="row"`,
		"train.seed=-3")
	if err != nil {
		t.Fatal(err)
	}
	if c.Train.Epochs != 5 || c.Train.LR != 0.1 || c.Train.Optimizer != "sgd" || c.Train.Seed != -3 {
		t.Fatalf("train %+v", c.Train)
	}
	if c.Data.Dataset != "1e5" || c.Data.FeatureNorm != "row" {
		t.Fatalf("string overrides: %+v", c.Data)
	}
	if c.Model.Options["heads"] != int64(8) {
		t.Fatalf("model options %v", c.Model.Options)
	}
	s, ok := c.Sampler.Module.(*sampler.Full)
	if !ok || s.Hops != 3 || c.Sampler.ID != "sampler.full" || c.Sampler.Options["layers"] != int64(3) {
		t.Fatalf("sampler %+v", c.Sampler)
	}
}

func TestPlugins(t *testing.T) {
	src := minimal + `
[sampler]
name = "sampler.full"   # the full ID works too
layers = 3

[cache]
name = "zz-test"
lo = 1
fanouts = [5, 10]
weights = [1, 0.5]
mode = "b"
count = 7
inner = { depth = 2 }

[partition]
name = "range"
`
	c, err := Parse("p.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if c.Sampler.Name != "full" || c.Sampler.Module.(*sampler.Full).Hops != 3 {
		t.Fatalf("sampler %+v", c.Sampler)
	}
	tc := c.Cache.Module.(*testCache)
	if tc.Lo != 1 || tc.Hi != 10 || !slices.Equal(tc.Fanouts, []int{5, 10}) || !slices.Equal(tc.Weights, []float64{1, 0.5}) ||
		tc.Mode != "b" || tc.Count != 7 || tc.Inner.Depth != 2 {
		t.Fatalf("cache module %+v", tc)
	}
	if c.Partition.ID != "partitioner.range" || c.Partition.Name != "range" {
		t.Fatalf("partition %+v", c.Partition)
	}
	// The canonical form holds every option with its default, and parses
	// back to the same config.
	b, err := c.TOML()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"[partition]", `balance = "nodes"`, `name = "range"`, "hi = 10", "depth = 2"} {
		if !strings.Contains(string(b), w) {
			t.Errorf("TOML() lacks %q:\n%s", w, b)
		}
	}
	c2, err := Parse("p.toml", b)
	if err != nil {
		t.Fatalf("re-parse: %v\n%s", err, b)
	}
	// Options are the keys as written; the re-encoded form spells out
	// every default.
	if c2.Partition.Options["balance"] != "nodes" || c.Partition.Options["balance"] != nil {
		t.Fatalf("options: %v %v", c.Partition.Options, c2.Partition.Options)
	}
	for _, p := range []*Plugin{&c.Sampler, &c.Cache, &c.Partition, &c2.Sampler, &c2.Cache, &c2.Partition} {
		p.Options = nil
	}
	if !sameConfig(c, c2) {
		t.Fatalf("round trip differs:\n%+v\n%+v", c, c2)
	}
	// An empty section or empty name means no plugin.
	c, err = Parse("p.toml", []byte(minimal+"[sampler]\n[cache]\nname = \"\"\n"))
	if err != nil || c.Sampler.ID != "" || c.Cache.Module != nil {
		t.Fatalf("empty sections: %v %+v %+v", err, c.Sampler, c.Cache)
	}
}

// zzK is a config whose strategy, zz-a, reads the word-tagged key k,
// moved from train.zz_k.
const zzK = minimal + "[train]\nmode = \"zz-a\"\n"

// TestWordKey checks an integer key that also takes a word (zz-a.k =
// "auto", read at its old place train.zz_k too): it parses from the file
// and from --set, round-trips through TOML, hashes apart from integers,
// and explain documents it.
func TestWordKey(t *testing.T) {
	cases := []struct {
		name      string
		src       string
		overrides []string
		want      int
	}{
		{"default", zzK, nil, 1},
		{"integer", zzK + "zz_k = 4\n", nil, 4},
		{"auto", zzK + "zz_k = \"auto\"\n", nil, 0},
		{"new key", zzK + "[zz-a]\nk = \"auto\"\n", nil, 0},
		{"override bare", zzK, []string{"train.zz_k=auto"}, 0},
		{"override quoted", zzK, []string{`train.zz_k="auto"`}, 0},
		{"override integer over auto", zzK + "zz_k = \"auto\"\n", []string{"train.zz_k=3"}, 3},
	}
	hashes := map[string]string{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse("m.toml", []byte(c.src), c.overrides...)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Strategy.Module.(*movedA).K; got != c.want {
				t.Fatalf("k = %d, want %d", got, c.want)
			}
			text, err := cfg.TOML()
			if err != nil {
				t.Fatal(err)
			}
			if c.want == 0 && !strings.Contains(string(text), `k = "auto"`) {
				t.Errorf("TOML does not write auto:\n%s", text)
			}
			back, err := Parse("m.toml", text)
			if err != nil {
				t.Fatalf("re-parse: %v", err)
			}
			if !sameConfig(cfg, back) {
				t.Errorf("round trip changed the config")
			}
			h, err := cfg.SHA256()
			if err != nil {
				t.Fatal(err)
			}
			k := strconv.Itoa(c.want)
			if prev, ok := hashes[k]; ok && prev != h {
				t.Errorf("k %s hashes as %s and %s", k, prev, h)
			}
			hashes[k] = h
		})
	}
	if len(hashes) != 4 { // 1, 4, auto, 3
		t.Errorf("hashes %v: want one per distinct value", hashes)
	}
	if ex := Explain(); !strings.Contains(ex, `integer in [1, 1048576] or "auto" (chosen when training)`) {
		t.Errorf("explain does not document \"auto\"")
	}
}

// parseHash parses src with the overrides and returns its config_sha256,
// which must be 64 hex digits.
func parseHash(t *testing.T, src string, overrides ...string) string {
	t.Helper()
	c, err := Parse("h.toml", []byte(src), overrides...)
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.SHA256()
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 64 {
		t.Fatalf("hash %q", h)
	}
	return h
}

func TestSHA256(t *testing.T) {
	hash := func(src string, overrides ...string) string { return parseHash(t, src, overrides...) }
	base := hash(minimal)
	same := []string{
		"# a comment\n" + minimal + "[train]\nepochs = 200   # the default, spelt out\n",
		"[train]\nlr = 0.01\n[data]\ndataset = 'embedded:cora'\nsymmetrize = true\n",
		minimal + "[output]\njson = false\nprogress = \"off\"\ncsv = \"e.csv\"\ncheckpoint = \"r.ckpt\"\nmodel = \"m.model\"\n",
		minimal + "[train]\ncheckpoint_every = 5\n", // how often a run checkpoints does not change its result
		"data.dataset = \"embedded:cora\"\nmodel.options = {}\n",
	}
	for _, s := range same {
		if h := hash(s); h != base {
			t.Errorf("hash of\n%s\ndiffers from the minimal config's", s)
		}
	}
	if hash(minimal, "data.split=") != base {
		t.Error("an empty data.split changed the hash (old results would lose their run IDs)")
	}
	if hash(minimal, "output.json=false") != base {
		t.Error("an output override changed the hash")
	}
	different := [][]string{
		{"train.epochs=199"}, {"train.lr=0.02"}, {"data.dataset=embedded:cora2"},
		{"model.options.heads=8"}, {"cache.name=none"}, {"cache.name=degree"},
		{"cache.name=degree", "cache.capacity=0.2"}, {"train.seed=1"},
		{"data.split=random-20-30-seed0"},
	}
	seen := map[string]bool{base: true}
	for _, o := range different {
		h := hash(minimal, o...)
		if seen[h] {
			t.Errorf("override %v does not change the hash", o)
		}
		seen[h] = true
	}
}

// TestExplain checks that explain covers the schema and that its
// uncommented part is a config of defaults.
func TestExplain(t *testing.T) {
	text := Explain()
	// Plugin docs wrap over comment lines: join them for the doc checks.
	joined := regexp.MustCompile(`\n#\s+#\s*`).ReplaceAllString(text, " ")
	for _, sec := range fieldsOf(configType) {
		if !strings.Contains(text, "\n["+sec.key+"]\n") {
			t.Errorf("explain lacks section [%s]", sec.key)
		}
		if sec.typ == pluginType {
			for _, m := range registry.Namespace(sec.ns) {
				if !strings.Contains(text, "name = \""+m.Name()+"\"") || !strings.Contains(joined, m.Doc) {
					t.Errorf("explain lacks plugin %s", m.ID)
				}
				for _, opt := range PluginOptions(m.New()) {
					key, _, _ := strings.Cut(opt, " = ")
					if !strings.Contains(text, "#     "+key+" = ") {
						t.Errorf("explain lacks option %s of %s", key, m.ID)
					}
				}
			}
			continue
		}
		for _, f := range fieldsOf(sec.typ) {
			if !strings.Contains(text, f.key+" = ") && !strings.Contains(text, "# ["+sec.key+"."+f.key+"]") && !strings.Contains(text, "\n["+sec.key+"."+f.key+"]\n") {
				t.Errorf("explain lacks %s.%s", sec.key, f.key)
			}
			if f.doc != "" && !strings.Contains(strings.Join(strings.Fields(strings.ReplaceAll(text, "#", "")), " "), f.doc) {
				t.Errorf("explain lacks the doc of %s.%s", sec.key, f.key)
			}
		}
	}
	for _, w := range []string{`one of "adam", "adamw", "sgd"`, "integer in [1, 64]", "float in [0, 1)", `"minibatch"`, "required", "registered: gat, gcn, gin, pna, sage"} {
		if !strings.Contains(text, w) {
			t.Errorf("explain lacks %q", w)
		}
	}
	c, err := Parse("explain.toml", []byte(text))
	if err != nil {
		t.Fatalf("explain output does not parse: %v", err)
	}
	want := Default()
	want.Path, want.Data.Dataset = "explain.toml", "embedded:cora"
	if !sameConfig(c, want) {
		t.Fatalf("explain's values are not the defaults:\n%+v\n%+v", c, want)
	}
}

func TestDefaultConfigRecipe(t *testing.T) {
	c, err := Load("../../configs/gcn-cora.toml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Data.Dataset != "embedded:cora" || c.Model.Name != "gcn" || c.Model.Layers != 2 || c.Model.Hidden != 16 ||
		c.Train.Epochs != 200 || c.Train.LR != 0.01 || c.Train.WeightDecay != 5e-4 || c.Model.Dropout != 0.5 {
		t.Fatalf("gcn-cora is not Kipf's recipe: %+v %+v %+v", c.Data, c.Model, c.Train)
	}
	g, err := Load("../../configs/gat-cora.toml")
	if err != nil {
		t.Fatal(err)
	}
	if g.Model.Options["heads"] != int64(8) || g.Model.Options["out_heads"] != int64(1) || g.Model.Options["attn_dropout"] != 0.6 ||
		g.Model.Hidden != 8 || g.Train.LR != 0.005 || g.Model.Dropout != 0.6 {
		t.Fatalf("gat-cora: %+v %+v", g.Model, g.Train)
	}
}

func TestResolvePath(t *testing.T) {
	c := &Config{Path: filepath.Join("work", "main", "configs", "x.toml")}
	tests := []struct{ in, want string }{
		{"../../shared/data/citeseer", filepath.Join("work", "shared", "data", "citeseer")},
		{"data/g.strata", filepath.Join("work", "main", "configs", "data", "g.strata")},
		{"embedded:cora", "embedded:cora"},
		{"rmat-10-4-8-2-0", "rmat-10-4-8-2-0"},
		{"/abs/path", "/abs/path"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := c.ResolvePath(tt.in); got != tt.want {
			t.Errorf("ResolvePath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := (&Config{}).ResolvePath("a/b"); got != "a/b" {
		t.Errorf("no config path: %q", got)
	}
	c.Model.Module = "m.wasm"
	if got := c.ModulePath(); got != filepath.Join("work", "main", "configs", "m.wasm") {
		t.Errorf("ModulePath %q", got)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.toml"))
	if err == nil || !strings.Contains(err.Error(), "nope.toml: cannot read config: no such file or directory") {
		t.Fatalf("error %v", err)
	}
}

func TestScanKeyLines(t *testing.T) {
	src := `# comment = not a key
top = 1
[a]
b = "x = y"   # '=' inside strings and comments
"quoted key".x = 2
c.d.e = 3
'lit.eral' = 4
f = """
multi
line = 5
"""
g = [
  1, # comment
  { h = 1 },
  [2, 3],
]
i = { j = 1, k = { l = 2 } }
m = '''
]'''
n = 2024-01-02T03:04:05Z

[[arr]]
o = 1
[p . "q r"]   # spaced header
s = true
`
	got := scanKeyLines(src)
	want := map[string]int{
		"top": 2, "a": 3, "a.b": 4, `a."quoted key"`: 5, `a."quoted key".x`: 5, "a.c": 6, "a.c.d": 6, "a.c.d.e": 6,
		`a."lit.eral"`: 7, "a.f": 8, "a.g": 12, "a.g.h": 14, "a.i": 17, "a.i.j": 17, "a.i.k": 17, "a.i.k.l": 17,
		"a.m": 18, "a.n": 20, "arr": 22, "arr.o": 23, "p": 24, `p."q r"`: 24, `p."q r".s`: 25,
	}
	for k, line := range want {
		if got[k] != line {
			t.Errorf("%s: line %d, want %d", k, got[k], line)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected key %s (line %d)", k, got[k])
		}
	}
}

func TestInterval(t *testing.T) {
	tests := []struct {
		tag  string
		in   []float64
		out  []float64
		desc string
	}{
		{"[1,)", []float64{1, 1e9}, []float64{0.99, -1}, ">= 1"},
		{"(0,)", []float64{1e-9, 5}, []float64{0, -1}, "> 0"},
		{"[0,1)", []float64{0, 0.5}, []float64{1, -0.1}, "in [0, 1)"},
		{"[0,1]", []float64{0, 1}, []float64{1.01}, "in [0, 1]"},
		{"(,5]", []float64{-100, 5}, []float64{5.5}, "<= 5"},
	}
	for _, tt := range tests {
		iv, err := parseInterval(tt.tag)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range tt.in {
			if !iv.contains(x) {
				t.Errorf("%s should contain %v", tt.tag, x)
			}
		}
		for _, x := range tt.out {
			if iv.contains(x) {
				t.Errorf("%s should not contain %v", tt.tag, x)
			}
		}
		if iv.String() != tt.desc {
			t.Errorf("%s: %q, want %q", tt.tag, iv.String(), tt.desc)
		}
	}
	for _, bad := range []string{"", "[1]", "1,2", "[a,)", "[0,b]"} {
		if _, err := parseInterval(bad); err == nil {
			t.Errorf("parseInterval(%q) succeeded", bad)
		}
	}
}

// TestSchemaTags checks the tags of every config and plugin struct parse
// (fieldsOf panics on a bad tag) and that defaults satisfy them.
func TestSchemaTags(t *testing.T) {
	for _, sec := range fieldsOf(configType) {
		if sec.doc == "" {
			t.Errorf("section %s has no doc", sec.key)
		}
		if sec.typ == pluginType {
			for _, m := range registry.Namespace(sec.ns) {
				fieldsOf(reflect.TypeOf(m.New()).Elem())
			}
			continue
		}
		for _, f := range fieldsOf(sec.typ) {
			if f.doc == "" {
				t.Errorf("%s.%s has no doc", sec.key, f.key)
			}
		}
	}
}

// sameConfig compares two configs by their full TOML encoding (every key,
// plugin options included), ignoring where their keys were set and the
// plugins' run-time state.
func sameConfig(a, b *Config) bool {
	x, errX := a.TOML()
	y, errY := b.TOML()
	return errX == nil && errY == nil && string(x) == string(y) && a.Path == b.Path &&
		a.Sampler.ID == b.Sampler.ID && a.Cache.ID == b.Cache.ID && a.Partition.ID == b.Partition.ID
}

func TestResolvePaths(t *testing.T) {
	text := "[data]\ndataset = \"data/cora\"\n[model]\nmodule = \"layers/x.wasm\"\n"
	cases := []struct {
		sets            []string
		dataset, module string
	}{
		{nil, "conf/data/cora", "conf/layers/x.wasm"},
		{[]string{`data.dataset="here/cora"`}, "here/cora", "conf/layers/x.wasm"},
		{[]string{`model.module="mine.wasm"`}, "conf/data/cora", "mine.wasm"},
		{[]string{`data.dataset="embedded:cora"`}, "embedded:cora", "conf/layers/x.wasm"},
		{[]string{`data.dataset="/abs/cora"`}, "/abs/cora", "conf/layers/x.wasm"},
	}
	for _, c := range cases {
		cfg, err := Parse("conf/x.toml", []byte(text), c.sets...)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.DatasetSpec(); got != c.dataset {
			t.Errorf("%v: DatasetSpec = %q, want %q", c.sets, got, c.dataset)
		}
		if got := cfg.ModulePath(); got != c.module {
			t.Errorf("%v: ModulePath = %q, want %q", c.sets, got, c.module)
		}
	}
}

func TestDataSplit(t *testing.T) {
	for _, tc := range []struct {
		dataset, split string
		spec, err      string
	}{
		{"embedded:cora", "random-20-30-seed0", "embedded:cora@random-20-30-seed0", ""},
		{"/d/ogb", "public", "/d/ogb@public", ""},
		{"/d/ogb", "", "/d/ogb", ""},
		{"/d/ogb@time", "public", "", "already names a split"},
		{"/d/ogb", "random-20-30", "", "random-<train>-<valid>-seed<k>"},
		{"/d/ogb", "a/b", "", "want a split name"},
	} {
		c, err := Parse("s.toml", []byte("[data]\ndataset = \""+tc.dataset+"\"\n"), "data.split="+tc.split)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "--set data.split=") {
				t.Errorf("%s @ %s: error %v, want %q naming the override", tc.dataset, tc.split, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s @ %s: %v", tc.dataset, tc.split, err)
			continue
		}
		if got := c.DatasetSpec(); got != tc.spec {
			t.Errorf("DatasetSpec() = %q, want %q", got, tc.spec)
		}
	}
}

// TestFeatureDTypeDefaultHash: data.feature_dtype = "float32" is the
// default spelled out, the same config_sha256 as leaving it out; float16 is
// another config.
func TestFeatureDTypeDefaultHash(t *testing.T) {
	hash := func(sets ...string) string { return parseHash(t, "[data]\ndataset = \"a\"\n", sets...) }
	if hash() != hash(`data.feature_dtype="float32"`) {
		t.Error("feature_dtype = float32 changed the config hash")
	}
	if hash() == hash(`data.feature_dtype="float16"`) {
		t.Error("feature_dtype = float16 kept the float32 config's hash")
	}
}

// TestTaskDefaultHash: train.task = "node" is the default spelled out,
// the same config_sha256 as leaving it out (every published run keeps its
// id); regression is another config.
func TestTaskDefaultHash(t *testing.T) {
	hash := func(sets ...string) string { return parseHash(t, "[data]\ndataset = \"a\"\n", sets...) }
	if hash() != hash(`train.task="node"`) {
		t.Error(`train.task = "node" changed the config hash`)
	}
	if hash() == hash(`train.task="regression"`) {
		t.Error(`train.task = "regression" kept the default config's hash`)
	}
}
