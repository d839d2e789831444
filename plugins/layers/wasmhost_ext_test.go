package layers_test

import (
	"strata/internal/testcache"
	"strata/plugins/wasm"
)

// testHost is the module host of the package's tests, over the
// compiled-module cache every test binary shares.
var testHost = wasm.Host{Options: wasm.Options{CacheDir: testcache.MustWasmDir()}}
