package steprun_test

import (
	"os"
	"testing"

	"strata/core/modhost"
	"strata/plugins/strategy/internal/testkit"
	"strata/plugins/wasm"

	// The plugins the tests build environments with.
	_ "strata/plugins/backends"
	_ "strata/plugins/layers"
	_ "strata/plugins/sampler"
	_ "strata/plugins/strategy/fullgraph"
	_ "strata/plugins/strategy/minibatch"
)

func TestMain(m *testing.M) {
	os.Exit(testkit.Main(m, func(dir string) modhost.Host { return wasm.Host{Options: wasm.Options{CacheDir: dir}} }))
}
