package all_test

import (
	"context"
	"testing"

	"strata/core/caching"
	"strata/core/caching/cachetest"
	"strata/core/partition"
	"strata/core/partition/partitionertest"
	"strata/core/placing"
	"strata/core/placing/placementtest"
	"strata/core/registry"
	"strata/core/sampling"
	"strata/core/sampling/samplertest"
	_ "strata/plugins/all"
)

// newModule returns a constructor of fresh, provisioned instances of the
// module, asserted to implement T.
func newModule[T any](t *testing.T, info registry.ModuleInfo) func() T {
	return func() T {
		m := info.New()
		if err := registry.Provision(context.Background(), m); err != nil {
			t.Fatalf("%s: Provision with the defaults: %v", info.ID, err)
		}
		x, ok := m.(T)
		if !ok {
			t.Fatalf("%s (%T) does not implement the namespace's interface", info.ID, m)
		}
		return x
	}
}

// TestConformance runs every registered module of a namespace that has a
// conformance suite through it, configured with the module's defaults.
func TestConformance(t *testing.T) {
	suites := map[string]func(t *testing.T, info registry.ModuleInfo){
		"partitioner": func(t *testing.T, info registry.ModuleInfo) {
			partitionertest.Test(t, newModule[partition.Partitioner](t, info))
		},
		"cache": func(t *testing.T, info registry.ModuleInfo) {
			// A cache module is a static Policy, an online Dynamic, or
			// both; each interface it implements has its sub-suite.
			m := info.New()
			_, static := m.(caching.Policy)
			_, dynamic := m.(caching.Dynamic)
			if !static && !dynamic {
				t.Fatalf("%s (%T) is neither a caching.Policy nor a caching.Dynamic", info.ID, m)
			}
			if static {
				t.Run("Policy", func(t *testing.T) { cachetest.TestPolicy(t, newModule[caching.Policy](t, info)) })
			}
			if dynamic {
				t.Run("Dynamic", func(t *testing.T) { cachetest.TestDynamic(t, newModule[caching.Dynamic](t, info)) })
			}
		},
		"placement": func(t *testing.T, info registry.ModuleInfo) {
			placementtest.Test(t, newModule[placing.Solver](t, info))
		},
		"sampler": func(t *testing.T, info registry.ModuleInfo) {
			samplertest.Test(t, newModule[sampling.Sampler](t, info))
		},
	}
	for ns, run := range suites {
		mods := registry.Namespace(ns)
		if len(mods) == 0 {
			t.Errorf("namespace %s: no modules registered", ns)
		}
		for _, info := range mods {
			t.Run(info.ID, func(t *testing.T) { run(t, info) })
		}
	}
}
