package all_test

import (
	"testing"

	"strata/internal/conformance"
	_ "strata/plugins/all"
)

// TestConformance runs every registered module of every namespace that
// has a conformance suite through it, configured with the module's
// defaults (ModuleInfo.New, then the registry lifecycle), and every
// module through its lifecycle. There is no list of plugins here: a new
// module is checked as soon as plugins/all links it.
func TestConformance(t *testing.T) { conformance.RunAll(t) }
