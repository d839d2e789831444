package arch

import (
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// coreRank is the layer of every package under core/ (docs/architecture.md,
// "Layers of core"): a core package imports only strata packages of a
// strictly lower rank. A new core package must be placed here.
var coreRank = map[string]int{
	"core/tensor": 0, "core/ir": 0, "core/topology": 0, "core/registry": 0, "core/metrics": 0, "core/internal/mutanttest": 0, "core/safefile": 0, "core/jsonfloat": 0, "models": 0,
	"core/graph": 1, "core/comm": 1,
	"core/backend": 2, "core/sampling": 2, "core/negative": 2, "core/partition": 2, "core/caching": 2, "core/modhost": 2, "core/backend/backendtest/ref": 2, "core/graph/formats": 2, "core/graph/ogbout": 2, "core/graph/synth": 2, "core/graph/numpy/pickle": 2,
	"core/backend/argcheck": 3, "core/backend/backendtest": 3, "core/graph/numpy": 3, "core/graph/formattest": 3, "core/graph/graphtest": 3,
	"core/backend/cpu": 4, "core/sampling/samplertest": 4, "core/negative/negativetest": 4, "core/partition/partitionertest": 4, "core/caching/cachetest": 4,
	"core/backend/sim": 5,
	"core/engine":      6, "core/store": 6, "core/diskrows": 6,
	"core/placing": 7, "core/config": 7, "core/optim": 7,
	"core/train": 8,
}

// leaves are the packages of a forbidden tree that every package may
// import: helpers that import no strata package themselves (checked), so
// no arrow leads back out of them. internal/floattol derives the tests'
// floating-point bounds, which core's conformance suites use.
var leaves = map[string]bool{"internal/floattol": true}

// forbidden lists, per top-level tree, the trees it must never import
// (leaves excepted).
var forbidden = map[string][]string{
	"core":         {"plugins", "partitioners", "cuda", "experiments", "cmd", "internal"},
	"plugins":      {"experiments", "cmd"},
	"partitioners": {"plugins", "experiments", "cmd"},
	"cuda":         {"plugins", "partitioners", "experiments", "cmd"},
	"models":       {"core", "plugins", "partitioners", "cuda", "experiments", "cmd"},
	"experiments":  {"cmd"},
}

// linkers are the plugin packages exempt from the family rule (see
// pluginImport): plugins/all links every built-in plugin into a program.
var linkers = map[string]bool{"plugins/all": true}

// pluginImport checks an import of a package under plugins/ (from) against
// the family rule: a plugin reaches another plugin only through the core
// contracts, so from plugins/ and partitioners/ it imports only packages
// of its own family's internal kit, plugins/<family>/internal/... (sibling
// packages of one family, such as two strategies, never import each
// other; the kit never imports them). It returns the violation, or "".
func pluginImport(from, to string) string {
	if tree(from) != "plugins" || linkers[from] || (tree(to) != "plugins" && tree(to) != "partitioners") {
		return ""
	}
	family := strings.Join(strings.SplitN(from, "/", 3)[:2], "/")
	if kit := family + "/internal"; to == kit || strings.HasPrefix(to, kit+"/") {
		return ""
	}
	return fmt.Sprintf("%s imports %s: a plugin reaches another plugin only through core's contracts; from plugins/ and partitioners/ it imports only its family's kit, %s/internal/...", from, to, family)
}

type pkg struct {
	ImportPath string
	Imports    []string
}

// listPackages returns every package of the module with its imports
// (test files excluded: tests may import plugins, through plugins/all).
func listPackages(t *testing.T, tags string) []pkg {
	t.Helper()
	args := []string{"list", "-json=ImportPath,Imports"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, "strata/...")...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// tree returns the top-level directory of a module path ("core").
func tree(rel string) string {
	top, _, _ := strings.Cut(rel, "/")
	return top
}

// rankOf returns the rank of a core package: its own, or that of the
// closest ranked parent (core/backend/cpu/internal/x ranks as cpu).
func rankOf(rel string) (int, bool) {
	for p := rel; p != ""; {
		if r, ok := coreRank[p]; ok {
			return r, true
		}
		i := strings.LastIndex(p, "/")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return 0, false
}

// violations checks pkgs against the rules.
func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		from, ok := strings.CutPrefix(p.ImportPath, "strata/")
		if !ok {
			continue
		}
		fromRank, ranked := rankOf(from)
		if tree(from) == "core" && !ranked {
			out = append(out, fmt.Sprintf("%s has no layer: place it in coreRank (internal/arch) and in docs/architecture.md", from))
		}
		for _, imp := range p.Imports {
			to, ok := strings.CutPrefix(imp, "strata/")
			if !ok {
				continue
			}
			if leaves[from] {
				out = append(out, fmt.Sprintf("%s imports %s: a leaf helper imports no strata package", from, to))
			}
			for _, bad := range forbidden[tree(from)] {
				if tree(to) == bad && !leaves[to] {
					out = append(out, fmt.Sprintf("%s imports %s: %s/ must not depend on %s/", from, to, tree(from), bad))
				}
			}
			if v := pluginImport(from, to); v != "" {
				out = append(out, v)
			}
			if tree(from) == "core" && ranked {
				if toRank, ok := rankOf(to); ok && toRank >= fromRank && !strings.HasPrefix(from, to+"/") {
					out = append(out, fmt.Sprintf("%s (layer %d) imports %s (layer %d): a core package imports only lower layers", from, fromRank, to, toRank))
				}
			}
		}
	}
	return out
}

// TestLayering fails when a package breaks the layering drawn in
// docs/architecture.md, in the default build and with the cuda and mpi tags.
func TestLayering(t *testing.T) {
	for _, tags := range []string{"", "cuda", "mpi"} {
		for _, v := range violations(listPackages(t, tags)) {
			t.Errorf("tags %q: %s", tags, v)
		}
	}
}

// TestRulesCatch checks that the rules catch what they are for.
func TestRulesCatch(t *testing.T) {
	cases := []struct {
		name string
		p    pkg
		bad  bool
	}{
		{"core imports a plugin", pkg{"strata/core/train", []string{"strata/plugins/sampler"}}, true},
		{"core imports cuda", pkg{"strata/core/train", []string{"strata/cuda"}}, true},
		{"engine imports train", pkg{"strata/core/engine", []string{"strata/core/train"}}, true},
		{"backend imports config", pkg{"strata/core/backend", []string{"strata/core/config"}}, true},
		{"unplaced core package", pkg{"strata/core/newthing", nil}, true},
		{"plugin imports core", pkg{"strata/plugins/sampler", []string{"strata/core/train", "strata/core/graph"}}, false},
		{"train imports engine", pkg{"strata/core/train", []string{"strata/core/engine", "context"}}, false},
		{"cmd imports anything", pkg{"strata/cmd/strata", []string{"strata/plugins/all", "strata/experiments/runner"}}, false},
		{"core imports a leaf helper", pkg{"strata/core/backend/backendtest", []string{"strata/internal/floattol"}}, false},
		{"core imports another internal package", pkg{"strata/core/train", []string{"strata/internal/conformance"}}, true},
		{"a leaf helper imports strata", pkg{"strata/internal/floattol", []string{"strata/core/tensor"}}, true},
		{"partitioners imports a plugin", pkg{"strata/partitioners", []string{"strata/plugins/sampler"}}, true},
		{"a plugin imports another family", pkg{"strata/plugins/cache", []string{"strata/plugins/sampler"}}, true},
		{"a plugin imports partitioners", pkg{"strata/plugins/strategy/chunked", []string{"strata/partitioners"}}, true},
		{"a strategy imports a sibling strategy", pkg{"strata/plugins/strategy/hybrid", []string{"strata/plugins/strategy/minibatch"}}, true},
		{"a strategy imports its family's kit", pkg{"strata/plugins/strategy/hybrid", []string{"strata/plugins/strategy/internal/steprun", "strata/core/train"}}, false},
		{"the kit imports a strategy", pkg{"strata/plugins/strategy/internal/steprun", []string{"strata/plugins/strategy/micro"}}, true},
		{"the kit imports the kit", pkg{"strata/plugins/strategy/internal/microsplit", []string{"strata/plugins/strategy/internal/memest"}}, false},
		{"a plugin imports another family's kit", pkg{"strata/plugins/cache", []string{"strata/plugins/strategy/internal/steprun"}}, true},
		{"a family imports a kit by a look-alike name", pkg{"strata/plugins/strategy/micro", []string{"strata/plugins/strategy/internalx"}}, true},
		{"plugins/all links every plugin", pkg{"strata/plugins/all", []string{"strata/plugins/strategy/chunked", "strata/plugins/sampler", "strata/partitioners"}}, false},
	}
	for _, c := range cases {
		if got := len(violations([]pkg{c.p})) > 0; got != c.bad {
			t.Errorf("%s: violation %v, want %v", c.name, got, c.bad)
		}
	}
}
