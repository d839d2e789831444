// Package options holds the options that several strategies share
// (internal kit of plugins/strategy): the seed nodes per sampled batch, the
// depth of the sampling pipeline and the number of micro-batches. A
// strategy embeds the ones it reads in its section. Each lived in core's
// config ([train]) before the strategies owned them; their moved tags keep
// the old spellings readable and config_sha256 unchanged
// (core/config/moved.go).
package options

import "strata/core/sampling"

// Size is the batch size option; a strategy embeds it in its section.
type Size struct {
	BatchSize int `toml:"batch_size" moved:"train.batch_size" range:"[1,1073741824]" doc:"training nodes (seeds) per sampled batch. Was train.batch_size, still read there"`
}

// Depth is the pipeline depth option; a strategy embeds it in its section.
type Depth struct {
	PrefetchDepth int `toml:"prefetch_depth" moved:"train.prefetch" range:"[1,1024]" doc:"batches sampled and extracted ahead of training (the pipeline's queue depth). Was train.prefetch, still read there"`
}

var _ sampling.Batcher = Size{}

// DefaultSize and DefaultDepth are the options' defaults (those core's
// config had).
func DefaultSize() Size   { return Size{BatchSize: 1024} }
func DefaultDepth() Depth { return Depth{PrefetchDepth: 2} }

// Batch implements sampling.Batcher.
func (s Size) Batch() int { return s.BatchSize }
