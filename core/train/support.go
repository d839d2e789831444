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
		if cfg.Train.Mode == "minibatch" {
			continue // the sampler builds the batches, the cache feeds them
		}
		if p.p.Name != "" {
			return unused([]string{p.key, "name"}, fmt.Sprintf("%s is set", p.p.ID))
		}
	}
	if cfg.Placement.Name != "" && (cfg.Train.Mode != "minibatch" || cfg.Cache.Name == "") {
		return cfg.KeyError(fmt.Sprintf("placement.name: %s places cached feature partitions, which only minibatch training with a [cache] uses; add them or remove [placement]", cfg.Placement.ID), "placement", "name")
	}
	if cfg.Partition.Name != "" && cfg.Train.MicroBatches == 1 {
		return cfg.KeyError(fmt.Sprintf("partition.name: %s is set, but only micro-batching (train.micro_batches > 1) uses a partitioner here; set train.micro_batches or remove [partition]", cfg.Partition.ID), "partition", "name")
	}
	if cfg.Train.Overlap && cfg.Train.Mode != "minibatch" {
		return cfg.KeyError(fmt.Sprintf("train.overlap pipelines the transfers of sampled mini-batches, which train.mode = %q does not have; set train.mode = \"minibatch\" or remove it", cfg.Train.Mode), "train", "overlap")
	}
	d := cfg.Devices
	if cfg.Train.Backend != "sim" {
		for _, k := range []struct {
			key string
			set bool
		}{{"preset", d.Preset != ""}, {"count", d.Count != 0}, {"memory_bytes", d.MemoryBytes != 0}, {"host_gbps", len(d.HostGBps) > 0}, {"peer_gbps", len(d.PeerGBps) > 0},
			{"cost_model", d.CostModel != ""}, {"peak_gflops", d.PeakGFLOPS != 0}, {"mem_gbps", d.MemGBps != 0}, {"launch_us", d.LaunchUS != -1}} {
			if k.set {
				return cfg.KeyError(fmt.Sprintf("devices.%s describes simulated devices, which train.backend = %q does not use; set train.backend = \"sim\" or remove it", k.key, cfg.Train.Backend), "devices", k.key)
			}
		}
		return nil
	}
	if (d.Count > 1 || d.Preset != "" && d.Preset != "pcie-only" || len(d.HostGBps) > 1) && cfg.Train.Mode != "minibatch" {
		return cfg.KeyError(fmt.Sprintf("devices: train.mode = %q trains on one device; several devices train data-parallel in minibatch mode (or use preset \"pcie-only\" with count 0 or 1)", cfg.Train.Mode), "devices")
	}
	return nil
}

func joinKey(key []string) string { return strings.Join(key, ".") }
