package train

import (
	"fmt"
	"strings"

	"strata/core/config"
)

// checkSupported rejects config settings that full-graph training on one
// device would otherwise ignore: a section a later training mode uses is
// an error here, not a silent no-op.
func checkSupported(cfg *config.Config) error {
	unused := func(key []string, what string) error {
		return cfg.KeyError(fmt.Sprintf("%s: %s; train.mode = %q does not use it, so remove it", joinKey(key), what, cfg.Train.Mode), key...)
	}
	for _, p := range []struct {
		key string
		p   config.Plugin
	}{{"sampler", cfg.Sampler}, {"cache", cfg.Cache}} {
		if p.p.Name != "" {
			return unused([]string{p.key, "name"}, fmt.Sprintf("%s is set", p.p.ID))
		}
	}
	if cfg.Partition.Name != "" && cfg.Train.MicroBatches == 1 {
		return cfg.KeyError(fmt.Sprintf("partition.name: %s is set, but only micro-batching (train.micro_batches > 1) uses a partitioner here; set train.micro_batches or remove [partition]", cfg.Partition.ID), "partition", "name")
	}
	d := cfg.Devices
	switch {
	case d.Preset != "":
		return unused([]string{"devices", "preset"}, "device presets are not available yet")
	case d.Count != 0:
		return unused([]string{"devices", "count"}, "multi-device training is not available yet")
	case d.MemoryBytes != 0:
		return unused([]string{"devices", "memory_bytes"}, "device memory limits are not available yet")
	}
	return nil
}

func joinKey(key []string) string { return strings.Join(key, ".") }
