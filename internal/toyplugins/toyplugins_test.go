package toyplugins

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"strata/core/config"
	"strata/core/registry"
	"strata/core/train"
	"strata/internal/conformance"
	_ "strata/plugins/all"
)

// toys returns the IDs this package registers (every module whose name
// starts with "toy-").
func toys(t *testing.T) []registry.ModuleInfo {
	var out []registry.ModuleInfo
	for _, ns := range registry.Namespaces() {
		for _, m := range registry.Namespace(ns) {
			if strings.HasPrefix(m.Name(), "toy-") {
				out = append(out, m)
			}
		}
	}
	// Each file of the package but doc.go registers one toy.
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") && f != "doc.go" {
			want++
		}
	}
	if len(out) != want {
		t.Fatalf("%d toy modules registered, want one per file (%d)", len(out), want)
	}
	return out
}

// TestToysConform runs every toy through its namespace's conformance suite.
func TestToysConform(t *testing.T) {
	for _, info := range toys(t) {
		t.Run(info.ID, func(t *testing.T) { conformance.Run(t, info) })
	}
}

// TestToysListedAndExplained checks that list-plugins and config explain
// show every toy, although neither was edited for them.
func TestToysListedAndExplained(t *testing.T) {
	var list strings.Builder
	config.ListPlugins(&list)
	explain := config.Explain()
	for _, info := range toys(t) {
		if !strings.Contains(list.String(), info.ID) || !strings.Contains(list.String(), info.Doc) {
			t.Errorf("list-plugins lacks %s", info.ID)
		}
		if !strings.Contains(explain, `"`+info.Name()+`"`) {
			t.Errorf("config explain lacks %s", info.ID)
		}
	}
}

// TestToysTrain trains with the toy strategy on the toy backend, with the
// toy sampler's and toy partitioner's names accepted by the config.
func TestToysTrain(t *testing.T) {
	cfg, err := config.Parse("toy.toml", []byte("[data]\ndataset = \"embedded:cora\"\n[train]\nepochs = 20\n[output]\nprogress = \"off\"\n"),
		`train.mode="toy-whole"`, `train.backend="toy-one-thread"`)
	if err != nil {
		t.Fatal(err)
	}
	res, err := train.Run(context.Background(), cfg, train.Options{Host: testHost})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != "toy-whole" || res.TestAcc < 0.5 {
		t.Errorf("mode %q, test accuracy %.3f after 20 epochs", res.Mode, res.TestAcc)
	}
	for _, sets := range [][]string{{`sampler.name="toy-first-k"`}, {`partition.name="toy-stripes"`}, {`cache.name="toy-low-ids"`}} {
		if _, err := config.Parse("toy.toml", []byte("[data]\ndataset = \"embedded:cora\"\n"), sets...); err != nil {
			t.Errorf("%v: %v", sets, err)
		}
	}
}

// TestToyStrategyOwnsItsSection: strategy.toy-repeat's options, figures
// and CSV column come from its one file: set from TOML and --set, shown
// by config explain and list-plugins, checked strictly, and found in the
// result line and output.csv.
func TestToyStrategyOwnsItsSection(t *testing.T) {
	dir := t.TempDir()
	text := "[data]\ndataset = \"embedded:cora\"\n[train]\nmode = \"toy-repeat\"\nepochs = 3\n[toy-repeat]\nsteps = 2\ntag = \"file\"\n[output]\nprogress = \"off\"\n"
	cfg, err := config.Parse(filepath.Join(dir, "toy.toml"), []byte(text), `toy-repeat.tag=set`, "output.csv="+filepath.Join(dir, "out.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := cfg.Strategy.Module.(*Repeat); !ok || r.Steps != 2 || r.Tag != "set" {
		t.Fatalf("decoded strategy %#v, want steps 2 from the file and tag from --set", cfg.Strategy.Module)
	}
	if canon, _ := cfg.Canonical(); !strings.Contains(string(canon), "[toy-repeat]") || !strings.Contains(string(canon), "steps = 2") {
		t.Errorf("the canonical config (config_sha256) lacks the section:\n%s", canon)
	}
	explain := config.Explain()
	if !strings.Contains(explain, "\n[toy-repeat]\n") || !strings.Contains(explain, "steps = 1") || !strings.Contains(explain, "optimizer steps per epoch") {
		t.Errorf("config explain lacks [toy-repeat] with its defaults and docs")
	}
	res, err := train.Run(context.Background(), cfg, train.Options{Host: testHost})
	if err != nil {
		t.Fatal(err)
	}
	line, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(line), `"toy-repeat":{"steps":6,"tag":"set"}`) {
		t.Errorf("result line lacks the strategy's figures: %s", line)
	}
	csv, err := os.ReadFile(filepath.Join(dir, "out.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(string(csv)), "\n")
	// the strategy's column follows the common ones; valid_loss comes last
	last := strings.Split(rows[len(rows)-1], ",")
	if !strings.HasSuffix(rows[0], ",toy_steps,valid_loss") || last[len(last)-2] != "6" {
		t.Errorf("output.csv lacks the toy_steps column: %q ... %q", rows[0], rows[len(rows)-1])
	}
	bad := []struct{ set, where, want string }{
		{"toy-repeat.stepz=2", "--set toy-repeat.stepz=2", `did you mean "toy-repeat.steps"`},
		{"toy-repeat.steps=0", "--set toy-repeat.steps=0", "toy-repeat.steps = 0: must be in [1, 16]"},
		{"train.mode=fullgraph", "toy.toml:6", `the section configures train.mode = "toy-repeat", not "fullgraph"`},
	}
	for _, b := range bad {
		_, err := config.Parse("toy.toml", []byte(text), b.set)
		if err == nil || !strings.Contains(err.Error(), b.want) || !strings.Contains(err.Error(), b.where) {
			t.Errorf("--set %s: error %v, want one at %s saying %q", b.set, err, b.where, b.want)
		}
	}
	// A section at the strategy's defaults is no error under another mode.
	if _, err := config.Parse("toy.toml", []byte("[data]\ndataset = \"embedded:cora\"\n[toy-repeat]\nsteps = 1\n")); err != nil {
		t.Errorf("[toy-repeat] at its defaults under train.mode = \"fullgraph\": %v", err)
	}
}
