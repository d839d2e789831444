package train

// Core opens datasets (Run, the experiment runner) with graph.Open, which
// reads the format.* modules registered: link the built-in ones.
import (
	_ "strata/core/graph/formats"
	_ "strata/core/graph/numpy"
)
