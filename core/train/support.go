package train

import (
	"fmt"
	"strconv"
	"strings"

	"strata/core/config"
	"strata/core/registry"
)

// checkSupported rejects config settings that the chosen strategy and
// backend would otherwise ignore: a section they do not read is an error
// here, not a silent no-op.
func checkSupported(cfg *config.Config) error {
	strat, err := StrategyFor(cfg)
	if err != nil {
		return err
	}
	be, err := BackendFor(cfg)
	if err != nil {
		return err
	}
	uses := strat.Uses()
	unused := func(key []string, what string) error {
		return cfg.KeyError(fmt.Sprintf("%s: %s; train.mode = %q does not use it, so remove it", joinKey(key), what, cfg.Train.Mode), key...)
	}
	if cfg.Sampler.Name != "" && !uses.Sampler {
		return unused([]string{"sampler", "name"}, fmt.Sprintf("%s is set", cfg.Sampler.ID))
	}
	if cfg.Cache.Name != "" && !uses.Cache {
		return unused([]string{"cache", "name"}, fmt.Sprintf("%s is set", cfg.Cache.ID))
	}
	if cfg.Placement.Name != "" && (!uses.Cache || cfg.Cache.Name == "") {
		return cfg.KeyError(fmt.Sprintf("placement.name: %s places cached feature partitions, which only strategies that read features through a [cache] use (train.mode = %s); add them or remove [placement]", cfg.Placement.ID, modesUsing(func(u Uses) bool { return u.Cache })), "placement", "name")
	}
	if cfg.Train.CheckpointEvery > 0 && cfg.Output.Checkpoint == "" {
		return cfg.KeyError("train.checkpoint_every: checkpoints go to output.checkpoint, which is not set; set output.checkpoint = \"run.ckpt\" or remove train.checkpoint_every", "train", "checkpoint_every")
	}
	if cfg.Train.DType == "float64" && !uses.Float64 {
		return cfg.KeyError(fmt.Sprintf("train.dtype = \"float64\": train.mode = %q trains in float32 only; use train.dtype = \"float32\" or train.mode = %s", cfg.Train.Mode, modesUsing(func(u Uses) bool { return u.Float64 })), "train", "dtype")
	}
	if cfg.Train.CheckpointEvery > 0 && !uses.Checkpoints {
		return cfg.KeyError(fmt.Sprintf("train.checkpoint_every: train.mode = %q cannot resume from a checkpoint; remove train.checkpoint_every or use train.mode = %s", cfg.Train.Mode, modesUsing(func(u Uses) bool { return u.Checkpoints })), "train", "checkpoint_every")
	}
	if cfg.Train.Task == config.TaskLink && !uses.Link {
		return cfg.KeyError(fmt.Sprintf("train.task = \"link\": train.mode = %q cannot train link prediction yet; use train.mode = %s", cfg.Train.Mode, modesUsing(func(u Uses) bool { return u.Link })), "train", "task")
	}
	if err := checkFeatureDType(cfg, uses); err != nil {
		return err
	}
	if err := checkMetrics(cfg); err != nil {
		return err
	}
	if err := be.CheckConfig(cfg); err != nil {
		return err
	}
	if c, ok := strat.(ConfigChecker); ok {
		if err := c.CheckConfig(cfg); err != nil {
			return err
		}
	}
	if cfg.Partition.Name != "" && !uses.RankPartition && !uses.Partition {
		return cfg.KeyError(fmt.Sprintf("partition.name: %s is set, but train.mode = %q, as configured, splits no work with a partitioner; remove [partition] (or see the options of train.mode in strata config explain)", cfg.Partition.ID, cfg.Train.Mode), "partition", "name")
	}
	d := cfg.Devices
	if (d.Count > 1 || d.Preset != "" && d.Preset != "pcie-only" || len(d.HostGBps) > 1) && !uses.Devices {
		return cfg.KeyError(fmt.Sprintf("devices: train.mode = %q trains on one device; several devices train data-parallel with train.mode = %s (or use preset \"pcie-only\" with count 0 or 1)", cfg.Train.Mode, modesUsing(func(u Uses) bool { return u.Devices })), "devices")
	}
	return nil
}

// RejectDevices is the CheckConfig of a backend without simulated
// devices: every [devices] key is an error naming the fix.
func RejectDevices(cfg *config.Config) error {
	d := cfg.Devices
	for _, k := range []struct {
		key string
		set bool
	}{{"preset", d.Preset != ""}, {"count", d.Count != 0}, {"memory_bytes", d.MemoryBytes != 0}, {"host_gbps", len(d.HostGBps) > 0}, {"peer_gbps", len(d.PeerGBps) > 0}, {"pcie_switch", len(d.PCIeSwitch) > 0}, {"switch_gbps", d.SwitchGBps != 0},
		{"zero_copy", d.ZeroCopy}, {"host_gather_gbps", d.HostGatherGBps != 0},
		{"cost_model", d.CostModel != ""}, {"peak_gflops", d.PeakGFLOPS != 0}, {"mem_gbps", d.MemGBps != 0}, {"launch_us", d.LaunchUS != -1}} {
		if k.set {
			return cfg.KeyError(fmt.Sprintf("devices.%s describes simulated devices, which train.backend = %q does not use; set train.backend = \"sim\" or remove it", k.key, cfg.Train.Backend), "devices", k.key)
		}
	}
	return nil
}

func joinKey(key []string) string { return strings.Join(key, ".") }

// modesUsing lists, quoted and joined by "or", the registered strategies
// whose Uses satisfy f: the train.mode values a message can suggest.
func modesUsing(f func(Uses) bool) string {
	var names []string
	for _, m := range registry.Namespace("strategy") {
		if s, ok := m.New().(Strategy); ok && f(s.Uses()) {
			names = append(names, strconv.Quote(m.Name()))
		}
	}
	if len(names) == 0 {
		return "(none registered)"
	}
	return strings.Join(names, " or ")
}

// checkFeatureDType rejects 16-bit feature storage where it cannot be
// read: a strategy that does not declare Uses.HalfFeatures, float64 math.
func checkFeatureDType(cfg *config.Config, uses Uses) error {
	fd := cfg.Data.FeatureStorage()
	if fd == "float32" {
		return nil
	}
	if !uses.HalfFeatures {
		return cfg.KeyError(fmt.Sprintf("data.feature_dtype = %q: train.mode = %q cannot read 16-bit feature rows yet; use train.mode = %s, or data.feature_dtype = \"float32\"", fd, cfg.Train.Mode, modesUsing(func(u Uses) bool { return u.HalfFeatures })), "data", "feature_dtype")
	}
	if cfg.Train.DType != "float32" {
		return cfg.KeyError(fmt.Sprintf("data.feature_dtype = %q stores features for float32 math, but train.dtype = %q; use train.dtype = \"float32\" or data.feature_dtype = \"float32\"", fd, cfg.Train.DType), "data", "feature_dtype")
	}
	return nil
}
