// Package all links every built-in plugin into a program: importing it
// (blank) registers the backends, strategies, partitioners, samplers,
// negative samplers, cache policies, placement solvers, layer modules and
// cost models that ship with strata. cmd/strata and the tests that need plugins import it;
// core never does.
package all

import (
	_ "strata/partitioners"
	_ "strata/plugins/backends"
	_ "strata/plugins/cache"
	_ "strata/plugins/layers"
	_ "strata/plugins/mpi"
	_ "strata/plugins/negative"
	_ "strata/plugins/placement"
	_ "strata/plugins/sampler"
	_ "strata/plugins/strategy/chunked"
	_ "strata/plugins/strategy/dist"
	_ "strata/plugins/strategy/fullgraph"
	_ "strata/plugins/strategy/hybrid"
	_ "strata/plugins/strategy/micro"
	_ "strata/plugins/strategy/minibatch"
)
