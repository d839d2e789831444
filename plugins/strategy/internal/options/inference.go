package options

import (
	"strata/core/config"
)

// Inference is how the block strategies evaluate, a key of their section
// ([minibatch], [micro]): over each chunk's L-hop full neighbourhood
// (blocks) or layer by layer.
type Inference struct {
	Inference string `toml:"inference" enum:",blocks,layerwise" hash:"omitempty" doc:"how evaluation runs the model over every node's full neighbourhood: blocks (\"\", the default) = each chunk of nodes through all layers over its L-hop neighbourhood; layerwise = the same chunks through one layer at a time over one hop, the previous layer's rows of all nodes kept on the host (DGL's and PyG's layer-wise inference): device memory of one hop instead of L, each edge aggregated once per layer, host memory of one layer's rows; its chunks are the strategy's (batch_size nodes, or twice the micro-batches, on a device with a capacity), not fitted by micro_batches = \"auto\"'s estimate of L-hop inference. Node tasks; the same predictions to float rounding"`
}

// Layerwise reports whether inference = "layerwise".
func (i Inference) Layerwise() bool { return i.Inference == "layerwise" }

// InferenceOptions returns the option, for InferenceOf.
func (i Inference) InferenceOptions() Inference { return i }

type inferencer interface{ InferenceOptions() Inference }

// InferenceOf returns the inference option of cfg's strategy (blocks
// when it has none).
func InferenceOf(cfg *config.Config) Inference {
	if h, ok := cfg.Strategy.Module.(inferencer); ok {
		return h.InferenceOptions()
	}
	return Inference{}
}

// InferenceKey is the path of the key in the section of train.mode.
func InferenceKey(cfg *config.Config) []string { return SectionKey(cfg, "inference") }

// CheckInference refuses layer-wise inference where it does not apply.
func CheckInference(cfg *config.Config) error {
	if InferenceOf(cfg).Layerwise() && cfg.Train.Task == config.TaskLink {
		return cfg.KeyError("layer-wise inference evaluates node tasks; link prediction scores pairs from its own embedding pass: remove the key", InferenceKey(cfg)...)
	}
	return nil
}
