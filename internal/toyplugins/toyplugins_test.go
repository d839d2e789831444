package toyplugins

import (
	"context"
	"strings"
	"testing"

	"strata/core/config"
	"strata/core/registry"
	"strata/core/train"
	"strata/internal/conformance"
	_ "strata/plugins/all"
	"strata/plugins/wasm"
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
	if len(out) != 5 {
		t.Fatalf("%d toy modules registered, want one of each of five kinds", len(out))
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
	res, err := train.Run(context.Background(), cfg, train.Options{Host: wasm.Host{}})
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
