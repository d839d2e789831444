package minibatch

import (
	"os"
	"testing"

	"strata/core/modhost"
	"strata/plugins/strategy/internal/testkit"
	"strata/plugins/wasm"

	// The plugins the tests train with (test files only: the package itself imports
	// none of them).
	_ "strata/partitioners"
	_ "strata/plugins/backends"
	_ "strata/plugins/cache"
	_ "strata/plugins/layers"
	_ "strata/plugins/negative"
	_ "strata/plugins/placement"
	_ "strata/plugins/sampler"
	_ "strata/plugins/strategy/chunked"
	_ "strata/plugins/strategy/dist"
	_ "strata/plugins/strategy/fullgraph"
	_ "strata/plugins/strategy/hybrid"
	_ "strata/plugins/strategy/micro"
)

func TestMain(m *testing.M) {
	os.Exit(testkit.Main(m, func(dir string) modhost.Host { return wasm.Host{Options: wasm.Options{CacheDir: dir}} }))
}
