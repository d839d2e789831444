// Package conformance runs registered modules through the conformance
// suite of their namespace: backendtest for backends, strategytest for
// training strategies, partitionertest, samplertest, cachetest,
// negativetest and placementtest for the plugins, formattest for dataset formats; and every module, of any namespace,
// through its registry lifecycle (Lifecycle). plugins/all's test runs
// every module the binary links; a new plugin's own test can run just its
// module.
package conformance

import (
	"context"
	"fmt"
	"testing"

	"strata/core/backend"
	"strata/core/backend/backendtest"
	"strata/core/backend/cpu"
	"strata/core/caching"
	"strata/core/caching/cachetest"
	"strata/core/config"
	"strata/core/graph"
	"strata/core/graph/formattest"
	"strata/core/negative"
	"strata/core/negative/negativetest"
	"strata/core/optim"
	"strata/core/optim/optimtest"
	"strata/core/partition"
	"strata/core/partition/partitionertest"
	"strata/core/placing"
	"strata/core/placing/placementtest"
	"strata/core/registry"
	"strata/core/sampling"
	"strata/core/sampling/samplertest"
	"strata/core/tensor"
	"strata/core/train"
	"strata/core/train/strategytest"
	"strata/internal/testcache"
	"strata/plugins/wasm"
)

// suites maps each registry namespace that has a conformance suite to the
// function that runs one module of it through the suite.
var suites = map[string]func(t *testing.T, info registry.ModuleInfo){
	"partitioner": func(t *testing.T, info registry.ModuleInfo) {
		if newP, ok := constructor[partition.Partitioner](t, info); ok {
			partitionertest.Test(t, newP)
		}
	},
	"sampler": func(t *testing.T, info registry.ModuleInfo) {
		if newS, ok := constructor[sampling.Sampler](t, info); ok {
			samplertest.Test(t, newS)
		}
	},
	"negative": func(t *testing.T, info registry.ModuleInfo) {
		if newS, ok := constructor[negative.Sampler](t, info); ok {
			negativetest.Test(t, newS)
		}
	},
	"cache": func(t *testing.T, info registry.ModuleInfo) {
		// A cache module is a static Policy, an online Dynamic, or both;
		// each interface it implements has its sub-suite.
		m := info.New()
		_, static := m.(caching.Policy)
		_, dynamic := m.(caching.Dynamic)
		if !static && !dynamic {
			t.Fatalf("%s (%T) is neither a caching.Policy nor a caching.Dynamic", info.ID, m)
		}
		if static {
			t.Run("Policy", func(t *testing.T) {
				if newP, ok := constructor[caching.Policy](t, info); ok {
					cachetest.TestPolicy(t, newP)
				}
			})
		}
		if dynamic {
			t.Run("Dynamic", func(t *testing.T) {
				if newD, ok := constructor[caching.Dynamic](t, info); ok {
					cachetest.TestDynamic(t, newD)
				}
			})
		}
	},
	"strategy": func(t *testing.T, info registry.ModuleInfo) {
		// One pool for the suite's runs: each module loads once.
		pool := wasm.NewPool()
		t.Cleanup(func() { pool.Close(context.Background()) })
		strategytest.Test(t, info.ID, wasm.Host{Options: wasm.Options{CacheDir: testcache.MustWasmDir()}, Pool: pool})
	},
	"backend": func(t *testing.T, info registry.ModuleInfo) {
		m, ok := info.New().(train.BackendModule)
		if !ok {
			t.Fatalf("%s (%T) is not a train.BackendModule", info.ID, info.New())
		}
		cfg, err := config.Parse("backend.toml", []byte("[data]\ndataset = \"embedded:cora\"\n"), "train.backend="+info.Name())
		if err != nil {
			t.Fatal(err)
		}
		if err := m.CheckConfig(cfg); err != nil {
			t.Fatalf("CheckConfig of the default config: %v", err)
		}
		got, err := m.NewBackend(context.Background(), cfg, 2)
		if err != nil {
			t.Fatal(err)
		}
		tier := tensor.Host
		if d, ok := got.(backend.Device); ok {
			tier = d.ComputeTier()
		}
		backendtest.Run(t, cpu.New(cpu.Options{Threads: 2}), got, backendtest.Options{Tier: tier, Seed: 3})
	},
	"format": func(t *testing.T, info registry.ModuleInfo) {
		f, ok := info.New().(graph.Format)
		if !ok {
			t.Fatalf("%s (%T) is not a graph.Format", info.ID, info.New())
		}
		formattest.Test(t, f)
	},
	optim.Namespace:         optimtest.TestOptimizer,
	optim.ScheduleNamespace: optimtest.TestSchedule,
	"placement": func(t *testing.T, info registry.ModuleInfo) {
		if newS, ok := constructor[placing.Solver](t, info); ok {
			placementtest.Test(t, newS)
		}
	},
}

// instance returns a fresh instance of the module with its defaults,
// provisioned and validated through life as a run's would be, asserted
// to implement T.
func instance[T any](info registry.ModuleInfo, life *registry.Lifecycle) (T, error) {
	var zero T
	m := info.New()
	if err := life.Provision(context.Background(), m); err != nil {
		return zero, fmt.Errorf("Provision with the defaults: %w", err)
	}
	x, ok := m.(T)
	if !ok {
		return zero, fmt.Errorf("%T does not implement %T's interface", m, &zero)
	}
	return x, nil
}

// constructor checks that the module can be instantiated as a T and
// returns the constructor a suite takes. The instances are cleaned up
// when t ends.
func constructor[T any](t *testing.T, info registry.ModuleInfo) (func() T, bool) {
	life := new(registry.Lifecycle)
	t.Cleanup(func() {
		if err := life.Cleanup(); err != nil {
			t.Errorf("Cleanup: %v", err)
		}
	})
	if _, err := instance[T](info, life); err != nil {
		t.Errorf("%s: %v", info.ID, err)
		return nil, false
	}
	return func() T {
		x, err := instance[T](info, life)
		if err != nil {
			panic(fmt.Sprintf("%s: %v", info.ID, err)) // it worked a moment ago
		}
		return x
	}, true
}

// Lifecycle checks a module's registry lifecycle with its defaults, as a
// run drives it (registry.Lifecycle): Provision (then Validate) succeeds
// and holds the module; a second Provision of it is a no-op; Cleanup
// succeeds and releases it, and a second Cleanup is a no-op.
func Lifecycle(t *testing.T, info registry.ModuleInfo) {
	ctx := context.Background()
	m := info.New()
	var life registry.Lifecycle
	for i := range 2 {
		if err := life.Provision(ctx, m); err != nil {
			t.Fatalf("%s: Provision #%d with the defaults: %v", info.ID, i+1, err)
		}
		if n := life.Live(); n != 1 {
			t.Fatalf("%s: after Provision #%d the lifecycle holds %d modules, want 1 (a module is provisioned once; is it a comparable pointer?)", info.ID, i+1, n)
		}
	}
	for i := range 2 {
		if err := life.Cleanup(); err != nil {
			t.Errorf("%s: Cleanup #%d: %v", info.ID, i+1, err)
		}
		if n := life.Live(); n != 0 {
			t.Errorf("%s: after Cleanup #%d the lifecycle holds %d modules, want 0", info.ID, i+1, n)
		}
	}
}

// Has reports whether namespace ns has a conformance suite.
func Has(ns string) bool {
	_, ok := suites[ns]
	return ok
}

// Run runs one registered module through Lifecycle and its namespace's
// suite.
func Run(t *testing.T, info registry.ModuleInfo) {
	run, ok := suites[info.Namespace()]
	if !ok {
		t.Fatalf("%s: namespace %q has no conformance suite", info.ID, info.Namespace())
	}
	t.Run("Lifecycle", func(t *testing.T) { Lifecycle(t, info) })
	run(t, info)
}

// RunAll runs every registered module of every namespace that has a
// suite, one subtest per module, and fails when such a namespace has no
// module; the modules of the other namespaces are checked by Lifecycle
// alone.
func RunAll(t *testing.T) {
	covered := 0
	for _, ns := range registry.Namespaces() {
		if !Has(ns) {
			for _, info := range registry.Namespace(ns) {
				t.Run(info.ID, func(t *testing.T) { Lifecycle(t, info) })
			}
			continue
		}
		covered++
		mods := registry.Namespace(ns)
		if len(mods) == 0 {
			t.Errorf("namespace %s has a suite but no registered modules", ns)
		}
		for _, info := range mods {
			t.Run(info.ID, func(t *testing.T) { Run(t, info) })
		}
	}
	if covered != len(suites) {
		t.Errorf("%d of the %d suites' namespaces are registry namespaces", covered, len(suites))
	}
}
