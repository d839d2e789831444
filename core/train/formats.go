package train

// Core opens datasets (Run, the experiment runner) with graph.Open, which
// reads the format.* modules registered: link the built-in ones (files,
// .npy arrays, and the generated rmat-... and synth:... graphs).
import (
	_ "strata/core/graph/formats"
	_ "strata/core/graph/numpy"
	_ "strata/core/graph/synth"
)
