package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	_ "strata/plugins/all" // every built-in plugin
	"strings"
	"testing"

	"strata/core/config"
	"strata/core/train"
	"strata/internal/testcache"
	"strata/plugins/wasm"
)

// base is an inline base config: GCN on the embedded Cora, 2 epochs.
const base = `
[base.data]
dataset = "embedded:cora"
symmetrize = true

[base.model]
name = "gcn"
hidden = 8

[base.train]
epochs = 2
`

// exp builds an experiment text: head (top-level keys and arrays of
// tables) followed by the inline base.
func exp(head string) string { return strings.TrimLeft(head, "\n") + base }

func mustParse(t *testing.T, text string) *Experiment {
	t.Helper()
	e, err := Parse("exp.toml", []byte(text))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return e
}

// check is the CLI's pre-run validation: train.Check without the data.
func check(ctx context.Context, cfg *config.Config) error {
	return train.Check(ctx, cfg, wasm.Host{Options: wasm.Options{CacheDir: testcache.MustWasmDir()}}, true)
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string // substrings of the error
	}{
		{"unknown top-level key", exp(`
metrics = ["test_acc"]
sedes = [0, 1]
`), []string{"exp.toml:2:", `unknown key "sedes"`, `did you mean "seeds"`}},
		{"unknown axis key", exp(`
metrics = ["test_acc"]

[[axis]]
key = "model.hidden"
values = [8, 16]
zipp = "a"
`), []string{"exp.toml:6:", `unknown key "zipp" in [[axis]]`}},
		{"zip length mismatch", exp(`
metrics = ["test_acc"]

[[axis]]
key = "model.hidden"
values = [8, 16]
zip = "g"

[[axis]]
key = "train.lr"
values = [0.1, 0.01, 0.001]
zip = "g"
`), []string{"exp.toml:8:", `zip group "g"`, `axis "train.lr" has 3 values`, `axis "model.hidden" (line 3) has 2`}},
		{"unknown metric", exp(`
metrics = ["test_ac"]
`), []string{"exp.toml:1:", `unknown metric "test_ac"`, `did you mean "test_acc"`, `"epoch_time_median_s"`, `"peak_rss_bytes"`}},
		{"non-numeric metric", exp(`
metrics = ["dataset"]
`), []string{`unknown metric "dataset"`, "valid metrics"}},
		{"metrics missing", exp(`
seeds = [0]
`), []string{"metrics is required"}},
		{"unknown axis section", exp(`
metrics = ["test_acc"]

[[axis]]
key = "modle.hidden"
values = [8]
`), []string{"exp.toml:4:", `unknown config section "modle"`, `did you mean "model"`}},
		{"malformed axis key", exp(`
metrics = ["test_acc"]

[[axis]]
key = "hidden"
values = [8]
`), []string{"exp.toml:4:", `axis key "hidden"`, "section.key"}},
		{"empty values", exp(`
metrics = ["test_acc"]

[[axis]]
key = "model.hidden"
values = []
`), []string{"exp.toml:5:", "values must not be empty"}},
		{"duplicate value", exp(`
metrics = ["test_acc"]

[[axis]]
key = "model.hidden"
values = [8, 8]
`), []string{"exp.toml:5:", "value 8 is listed twice"}},
		{"seeds and train.seed axis", exp(`
metrics = ["test_acc"]
seeds = [0, 1]

[[axis]]
key = "train.seed"
values = [3]
`), []string{"seeds already sets train.seed"}},
		{"bad seeds", exp(`
metrics = ["test_acc"]
seeds = ["a"]
`), []string{"exp.toml:2:", `seeds[0]: expected integer, got string "a"`}},
		{"derived kind and baseline", exp(`
metrics = ["test_acc"]

[[axis]]
key = "model.name"
values = ["gcn", "sage"]

[[derived]]
name = "d"
metric = "test_acc"
kind = "quotient"
baseline = { "model.hidden" = 8 }
`), []string{`kind = "quotient"`, `"ratio", "speedup", "reduction", "difference"`, `baseline key "model.hidden" is not an axis`}},
		{"derived metric not collected", exp(`
metrics = ["test_acc"]

[[axis]]
key = "model.name"
values = ["gcn", "sage"]

[[derived]]
name = "d"
metric = "epoch_time_median_s"
kind = "ratio"
baseline = { "model.name" = "gat" }
`), []string{`metric "epoch_time_median_s" is not collected`, `baseline model.name = "gat" is not one of the axis values`}},
		{"no base", `metrics = ["test_acc"]`, []string{"base is required"}},
		{"missing base file", `base = "nope.toml"` + "\n" + `metrics = ["test_acc"]`, []string{"exp.toml:1:", `base = "nope.toml": cannot read`}},
		{"bad name", exp(`
name = "a b"
metrics = ["test_acc"]
`), []string{"exp.toml:1:", "letters, digits"}},
		{"syntax error", "metrics = [\n", []string{"exp.toml:", "TOML syntax error"}},
		{"type error in the second axis", exp(`
metrics = ["test_acc"]

[[axis]]
key = "model.hidden"
values = [8, 16]

[[axis]]
key = "model.name"
values = ["gcn"]
zip = 3
`), []string{"exp.toml:10:", "axis.zip: expected string, got integer 3"}},
		{"required key of the second derived column", exp(`
metrics = ["test_acc"]

[[axis]]
key = "model.name"
values = ["gcn", "sage"]

[[derived]]
name = "a"
metric = "test_acc"
kind = "ratio"
baseline = { "model.name" = "gcn" }

[[derived]]
name = "b"
metric = "test_acc"
baseline = { "model.name" = "gcn" }
`), []string{"exp.toml:13:", `derived.kind: required key is missing: add kind = "ratio" under [[derived]]`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("exp.toml", []byte(tc.text))
			if err == nil {
				t.Fatalf("Parse succeeded, want an error containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
			if len(config.Errors(err)) == 0 {
				t.Errorf("error %T holds no *config.Error", err)
			}
		})
	}
}

// TestParseReportsAll: every problem of a file is reported at once, in
// line order.
func TestParseReportsAll(t *testing.T) {
	_, err := Parse("exp.toml", []byte(exp(`
metricz = ["test_acc"]

[[axis]]
key = "modle.hidden"
values = [8]
`)))
	if err == nil {
		t.Fatal("no error")
	}
	ces := config.Errors(err)
	var lines []int
	for _, ce := range ces {
		lines = append(lines, ce.Line)
	}
	if len(ces) < 3 || !slices.IsSorted(lines) {
		t.Fatalf("want >= 3 errors sorted by line (unknown key, metrics missing, axis section), got %v:\n%v", lines, err)
	}
}

// TestParseOneErrorPerKey: a key the decoder finds wrong is not checked
// again, so each mistake is one error.
func TestParseOneErrorPerKey(t *testing.T) {
	_, err := Parse("exp.toml", []byte(exp(`
name = 3
kind = 3
metrics = ["test_acc"]
[[axis]]
key = 3
values = [1]
`)))
	var got []string
	for _, ce := range config.Errors(err) {
		got = append(got, ce.Error())
	}
	want := []string{
		"exp.toml:1: name: expected string, got integer 3",
		"exp.toml:2: kind: expected string, got integer 3",
		"exp.toml:5: axis.key: expected string, got integer 3",
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestPlanValidation: generated configs are checked before any run and
// every bad run is reported, naming its axis values.
func TestPlanValidation(t *testing.T) {
	tests := []struct {
		name string
		head string
		want []string
	}{
		{"bad value type", `
metrics = ["test_acc"]

[[axis]]
key = "model.hidden"
values = [8, "wide"]
`, []string{"exp.toml:5:", "model.hidden", `"wide"`, "[run model.hidden=wide]"}},
		{"enum value", `
metrics = ["test_acc"]

[[axis]]
key = "train.optimizer"
values = ["adam", "adamx", "lion"]
`, []string{"exp.toml:5:", "train.optimizer", "[run train.optimizer=adamx]", "[run train.optimizer=lion]"}},
		{"unknown key in a section", `
metrics = ["test_acc"]

[[axis]]
key = "model.hiden"
values = [8, 16]
`, []string{"exp.toml:4:", "hiden", "[every run]"}},
		{"unknown plugin", `
metrics = ["test_acc"]

[[axis]]
key = "model.name"
values = ["gcn", "gnc"]
`, []string{"gnc", "[run model.name=gnc]"}},
		{"partition needs micro-batches", `
metrics = ["test_acc"]

[[axis]]
key = "partition.name"
values = ["range"]
`, []string{"[run partition.name=range]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := mustParse(t, exp(tc.head))
			_, err := NewPlan(context.Background(), e, "test", check)
			if err == nil {
				t.Fatalf("NewPlan succeeded, want an error containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func TestBaseFile(t *testing.T) {
	dir := t.TempDir()
	cfg := "[data]\ndataset = \"embedded:cora\"\n[model]\nname = \"gcn\"\n[train]\nepochs = 2\n"
	if err := os.WriteFile(filepath.Join(dir, "base.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "e.toml")
	text := "base = \"base.toml\"\nmetrics = [\"test_acc\"]\n[[axis]]\nkey = \"model.hidden\"\nvalues = [4, 8]\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if e.Name != "e" || e.BasePath != filepath.Join(dir, "base.toml") {
		t.Errorf("Name %q BasePath %q", e.Name, e.BasePath)
	}
	p, err := NewPlan(context.Background(), e, "test", check)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Runs) != 2 || p.Runs[1].Config.Model.Hidden != 8 || p.Runs[1].Config.Train.Epochs != 2 {
		t.Errorf("runs %d, hidden %d, epochs %d", len(p.Runs), p.Runs[1].Config.Model.Hidden, p.Runs[1].Config.Train.Epochs)
	}
	if DefaultOutDir(e) != filepath.Join(dir, "results", "e") {
		t.Errorf("DefaultOutDir = %q", DefaultOutDir(e))
	}
	// A base config error names the base file.
	if err := os.WriteFile(filepath.Join(dir, "base.toml"), []byte(cfg+"epochz = 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = NewPlan(context.Background(), e, "test", check)
	if err == nil || !strings.Contains(err.Error(), "base.toml:7") {
		t.Errorf("error %v, want one at base.toml:7", err)
	}
}

func TestRunErrorUnwraps(t *testing.T) {
	e := mustParse(t, exp(`
metrics = ["test_acc"]
[[axis]]
key = "model.hidden"
values = ["x"]
`))
	_, err := NewPlan(context.Background(), e, "test", nil)
	var re *runError
	if !errors.As(err, &re) || len(config.Errors(err)) != 1 {
		t.Fatalf("error %v (%T): want a runError wrapping one *config.Error", err, err)
	}
}
