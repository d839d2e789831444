// Package strategytests holds the tests that train several strategies
// through their configs (train.Run, train.StrategyFor) and compare them:
// splits against full-graph training, data-parallel, feature caches,
// predictions. It has only test files and links every plugin
// (plugins/all); a strategy's own tests live in its package.
package strategytests

import (
	"os"
	"testing"

	"strata/core/modhost"
	"strata/plugins/strategy/internal/testkit"
	"strata/plugins/wasm"

	// The plugins the tests train with.
	_ "strata/plugins/all"
)

func TestMain(m *testing.M) {
	os.Exit(testkit.Main(m, func(dir string) modhost.Host { return wasm.Host{Options: wasm.Options{CacheDir: dir}} }))
}
