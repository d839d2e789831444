package main

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"strata/core/graph"
	"strata/core/registry"
)

// TestConfigExplainTopics checks strata config explain KEY|SECTION|MODULE:
// each answer holds what was asked for (as TOML where it is a config
// part: exactly the keys asked for), and an unknown topic exits 2 with a
// suggestion.
func TestConfigExplainTopics(t *testing.T) {
	var formats, caches, models []string
	for _, f := range graph.Formats() {
		formats = append(formats, graph.FormatID(f))
	}
	for _, m := range registry.Namespace("cache") {
		caches = append(caches, `name = "`+m.Name()+`"`)
	}
	models = modelIDs()
	cases := []struct {
		topic string
		want  []string
		toml  map[string][]string // section -> the keys the answer must hold, no more
	}{
		{"train.lr", []string{"float > 0. learning rate", "lr = 0.01"}, map[string][]string{"train": {"lr"}}},
		{"train", []string{"epochs = 200"}, nil},
		{"sampler.uniform", []string{"selected by sampler.name", "fanouts = [10, 25]"}, map[string][]string{"sampler": {"fanouts", "name", "replace"}}},
		{"sampler.fanouts", []string{`with name = "uniform" (sampler.uniform)`, `with name = "khop"`, "# fanouts = [10, 25]"}, map[string][]string{"sampler": nil}},
		{"cache.name", caches, nil},
		{"minibatch.store.placement", []string{"[minibatch.store]", `placement = ""`}, nil},
		{"store.graph_ratio", []string{"store.graph_ratio moved to minibatch.store.graph_ratio", "graph_ratio ="}, nil},
		{"model.gat", []string{"selected by model.name = \"gat\"", "heads = 1\n", "negative_slope = 0.2\n"}, map[string][]string{"model": {"name", "options"}}},
		{"model.options", models, nil},
		{"backend.cpu", []string{`selected by train.backend = "cpu"`}, nil},
		{"data.dataset", append(formats, ".npy", ".npz", ".csv"), map[string][]string{"data": {"dataset"}}},
	}
	for _, tc := range cases {
		t.Run(tc.topic, func(t *testing.T) {
			code, stdout, stderr := cli(t, append([]string{"config", "explain", tc.topic}, wasmArgs()...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("answer lacks %q:\n%s", w, stdout)
				}
			}
			if tc.toml == nil {
				return
			}
			var doc map[string]map[string]any
			if _, err := toml.Decode(stdout, &doc); err != nil {
				t.Fatalf("answer is not TOML: %v\n%s", err, stdout)
			}
			got := map[string][]string{}
			for sec, keys := range doc {
				got[sec] = slices.Sorted(maps.Keys(keys))
			}
			if !maps.EqualFunc(got, tc.toml, slices.Equal) {
				t.Errorf("answer holds %v, want %v:\n%s", got, tc.toml, stdout)
			}
		})
	}
	// A layer module's answer is a config part holding the options it
	// reads at its defaults: with a dataset it validates.
	for _, id := range models {
		out := mustCLI(t, append([]string{"config", "explain", id}, wasmArgs()...)...)
		if !strings.Contains(out, "[model.options]") {
			t.Errorf("%s: no [model.options] table:\n%s", id, out)
		}
		path := write(t, t.TempDir(), "m.toml", cora+out)
		if code, _, stderr := cli(t, append([]string{"validate", "-c", path, "--skip-data"}, wasmArgs()...)...); code != 0 {
			t.Errorf("%s: its explained options do not validate: %s", id, stderr)
		}
	}
	full, short := len(strings.Split(mustCLI(t, "config", "explain"), "\n")), len(strings.Split(mustCLI(t, "config", "explain", "train.lr"), "\n"))
	if short*20 > full {
		t.Errorf("config explain train.lr prints %d lines of the %d of the whole schema", short, full)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"config", "explain", "trian.lr"}, `"trian.lr" is no config key, section or module ID (did you mean "train.lr"?)`},
		{[]string{"config", "explain", "sampler.unifrom"}, `(did you mean "sampler.uniform"?)`},
		{[]string{"config", "explain", "train.lr", "train.epochs"}, `unexpected argument "train.epochs"`},
		{[]string{"config", "describe"}, "usage: strata config explain [KEY|SECTION|MODULE]"},
	} {
		if code, _, stderr := cli(t, tc.args...); code != exitUser || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q lacks %q", tc.args, code, stderr, tc.want)
		}
	}
}

// mustCLI runs a command that must succeed and returns its stdout.
func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := cli(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	return stdout
}

// TestCommandLineMistakes checks the answers to the usual slips on the
// command line and in values: each exits 2 naming the fix. A value alias
// suggests only a name that this build takes (or says how to get it).
func TestCommandLineMistakes(t *testing.T) {
	cfg := "../../configs/gcn-cora.toml"
	validate := func(extra ...string) []string {
		return append(append([]string{"validate", "-c", cfg, "--skip-data"}, wasmArgs()...), extra...)
	}
	gpu := []string{`train.backend = "gpu"`, `did you mean "cuda"?`}
	if registry.Unavailable("backend.cuda") != "" {
		gpu = append(gpu, `-tags cuda`, "make gpu-bundle")
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"set without =", validate("--set", "train.epochs", "50"), []string{`--set train.epochs has no '=': write --set train.epochs=50`}},
		{"set= without =", validate("--set=train.epochs"), []string{`write --set train.epochs=VALUE`}},
		{"positional config", []string{"train", "configs/x.toml"}, []string{`name the file with -c FILE (strata train -c configs/x.toml)`}},
		{"positional experiment", []string{"experiment", "experiments/x.toml"}, []string{`(strata experiment -c experiments/x.toml)`}},
		{"-c and --config", validate("--config", cfg), []string{"-c and --config are the same flag"}},
		{"gpu", validate("--set", "train.backend=gpu"), gpu},
		{"graphsage", validate("--set", "model.name=graphsage"), []string{`did you mean "sage"? "graphsage" is another name for model.sage`}},
		{"neighbor sampler", validate("--set", "sampler.name=neighbor"), []string{`did you mean "uniform"?`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := cli(t, tc.args...)
			if code != exitUser {
				t.Fatalf("exit %d, want %d: %s", code, exitUser, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
		})
	}
	// --config is -c, for every command that takes -c.
	if code, stdout, stderr := cli(t, append([]string{"validate", "--config", cfg, "--skip-data"}, wasmArgs()...)...); code != 0 || !strings.Contains(stdout, "ok") {
		t.Errorf("validate --config: exit %d: %s", code, stderr)
	}
	for _, c := range commands() {
		if c.run == nil {
			continue
		}
		if help := mustCLI(t, c.name, "-h"); strings.Contains(help, "\n  -c string") != strings.Contains(help, "\n  --config string") {
			t.Errorf("%s takes -c but not --config, or the other way round:\n%s", c.name, help)
		}
	}
	// adamw: accepted once an optimizer of that name exists; until then
	// the alias suggests adam and says what differs.
	if code, _, stderr := cli(t, validate("--set", "train.optimizer=adamw")...); code != 0 {
		for _, w := range []string{`did you mean "adam"?`, "train.weight_decay"} {
			if code != exitUser || !strings.Contains(stderr, w) {
				t.Errorf("train.optimizer=adamw: exit %d, stderr %q lacks %q", code, stderr, w)
			}
		}
	}
}
