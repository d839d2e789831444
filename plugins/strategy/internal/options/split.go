package options

import (
	"fmt"

	"strata/core/config"
	"strata/core/partition"
)

// Split is the option of the micro-batching strategies, the number of
// micro-batches K; a strategy embeds it in its section ([fullgraph],
// [micro], [minibatch]).
type Split struct {
	MicroBatches int `toml:"micro_batches" moved:"train.micro_batches" range:"[1,1048576]" word:"auto:0:the smallest K whose estimated peak memory fits devices.memory_bytes or the GPU's free memory" doc:"split each step into this many micro-batches (Betty), each over its share of the step's output nodes (the training nodes, or a sampled batch's) and of their blocks; their gradients accumulate into one optimizer step; above 1 it needs [partition] (1 under train.mode = \"micro\": one micro-batch of all the step's output nodes). \"auto\" (train.backend = \"sim\" with devices.memory_bytes, or \"cuda\": its free memory) picks K with Betty's memory estimate (costmodel.betty-memory), see docs/betty.md. Was train.micro_batches, still read there"`
}

// Auto is Split.MicroBatches when the config says micro_batches = "auto".
const Auto = 0

var _ partition.PartCounter = Split{}

// DefaultSplit is the option of a strategy that does not split.
func DefaultSplit() Split { return Split{MicroBatches: 1} }

// AutoK reports whether micro_batches = "auto": K is picked from the
// memory estimate while training.
func (o Split) AutoK() bool { return o.MicroBatches == Auto }

// Micro reports whether steps are split: a fixed K > 1, or "auto".
func (o Split) Micro() bool { return o.MicroBatches > 1 || o.AutoK() }

// PartCount implements partition.PartCounter.
func (o Split) PartCount() int { return o.MicroBatches }

// SplitOptions returns the option; a strategy that embeds it has it.
func (o Split) SplitOptions() Split { return o }

// Text is K as a config spells it: a number, or "auto" quoted.
func (o Split) Text() string {
	if o.AutoK() {
		return `"auto"`
	}
	return fmt.Sprint(o.MicroBatches)
}

// splitter is a strategy whose section holds Split.
type splitter interface{ SplitOptions() Split }

// SplitOf returns the micro-batching option of the strategy train.mode
// names, decoded from its section (as configured, also when it hands the
// run to another strategy), or the default when it has none.
func SplitOf(cfg *config.Config) Split {
	if h, ok := cfg.Strategy.Module.(splitter); ok {
		return h.SplitOptions()
	}
	return DefaultSplit()
}

// SplitKey is the path of micro_batches in the section of train.mode, for
// errors (located at the line that set it, in either spelling).
func SplitKey(cfg *config.Config) []string { return SectionKey(cfg, "micro_batches") }

// SectionKey is the path of key in the section of train.mode's strategy.
func SectionKey(cfg *config.Config, key string) []string {
	section := cfg.Strategy.Name
	if section == "" {
		section = cfg.Train.Mode
	}
	return []string{section, key}
}

// SplitKeyName is SplitKey joined with dots, for messages.
func SplitKeyName(cfg *config.Config) string {
	k := SplitKey(cfg)
	return k[0] + "." + k[1]
}

// SplitFigures are what micro-batching adds to a run's result, under the
// name of the strategy that splits (train.FigureDeclarer).
type SplitFigures struct {
	MicroBatches int  `json:"micro_batches" doc:"micro-batches per step (with sampled batches and \"auto\", the largest K of the last epoch)"`
	Auto         bool `json:"micro_batches_auto,omitempty" doc:"micro_batches = \"auto\" chose K from Betty's memory estimate"`
	// Redundancy is Betty's measure: the micro-batches' input rows summed
	// over a step, over the input rows of the whole batch.
	Redundancy float64 `json:"redundancy,omitempty" doc:"input rows the micro-batches load in a step, over those of the whole batch (Betty's redundancy; 1 = none loaded twice)"`
}

// CheckPartitionUsed refuses a [partition] that nothing reads: under a
// strategy that splits only into micro-batches, with micro_batches = 1.
func CheckPartitionUsed(cfg *config.Config) error {
	if cfg.Partition.Name == "" || SplitOf(cfg).Micro() {
		return nil
	}
	return cfg.KeyError(fmt.Sprintf("partition.name: %s is set, but only micro-batching (%s > 1) uses a partitioner here; set %s or remove [partition]",
		cfg.Partition.ID, SplitKeyName(cfg), SplitKeyName(cfg)), "partition", "name")
}

// Splits returns the figures; a strategy's own figures that embed them
// have it, so a reader finds them under any strategy's name.
func (f *SplitFigures) Splits() *SplitFigures { return f }
