package backends

import (
	"context"
	"fmt"

	"strata/core/backend"
	"strata/core/backend/cpu"
	"strata/core/backend/sim"
	"strata/core/config"
	"strata/core/registry"
	"strata/core/topology"
	"strata/core/train"
)

// Sim is backend.sim: simulated devices described by [devices], whose
// capacity is enforced, whose link bytes are counted and whose times are
// predicted by cost models.
type Sim struct{}

var _ train.BackendModule = (*Sim)(nil)

// StrataModule implements registry.Module.
func (*Sim) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "backend.sim", New: func() registry.Module { return new(Sim) },
		Doc: "simulated devices ([devices]): capacity enforced, every link byte counted, times predicted by cost models"}
}

// CheckConfig implements train.BackendModule: the topology must be
// valid, and STRATA_CPU_ISA (the devices compute on cpu backends).
func (*Sim) CheckConfig(cfg *config.Config) error {
	if err := cpu.CheckEnv(); err != nil {
		return err
	}
	_, err := machineTopology(cfg)
	return err
}

// NewBackend implements train.BackendModule.
func (*Sim) NewBackend(_ context.Context, cfg *config.Config, threads int) (backend.Backend, error) {
	if err := cpu.CheckEnv(); err != nil {
		return nil, err
	}
	topo, err := machineTopology(cfg)
	if err != nil {
		return nil, err
	}
	topo.Compute = deviceSpec(cfg)
	topo.ZeroCopy, topo.HostGatherGBps = cfg.Devices.ZeroCopy, cfg.Devices.HostGatherGBps
	return sim.New(topo, threads)
}

// deviceSpec is the roofline of the simulated devices: a V100 unless
// [devices] says otherwise.
func deviceSpec(cfg *config.Config) topology.DeviceSpec {
	d, spec := cfg.Devices, topology.V100
	if d.PeakGFLOPS > 0 {
		spec.PeakGFLOPS = d.PeakGFLOPS
	}
	if d.MemGBps > 0 {
		spec.MemGBps = d.MemGBps
	}
	if d.LaunchUS >= 0 {
		spec.LaunchUS = d.LaunchUS
	}
	return spec
}

func init() { registry.Register(new(Sim)) }

// machineTopology returns the simulated machine of [devices]: a preset, or the
// custom bandwidths of host_gbps and peer_gbps.
func machineTopology(cfg *config.Config) (topology.Topology, error) {
	d := cfg.Devices
	if len(d.HostGBps) == 0 && len(d.PeerGBps) == 0 {
		if len(d.PCIeSwitch) > 0 || d.SwitchGBps != 0 {
			return topology.Topology{}, cfg.KeyError("devices.pcie_switch and switch_gbps describe a custom topology (with host_gbps); a preset has its own switches", "devices", "pcie_switch")
		}
		preset := d.Preset
		if preset == "" {
			preset = "pcie-only"
		}
		topo, err := topology.Preset(preset, d.Count, d.MemoryBytes)
		if err != nil {
			return topo, cfg.KeyError("devices.preset: "+err.Error(), "devices", "preset")
		}
		return topo, nil
	}
	n := len(d.HostGBps)
	switch {
	case n == 0:
		return topology.Topology{}, cfg.KeyError("devices.peer_gbps is set without devices.host_gbps; give every device's host bandwidth", "devices", "peer_gbps")
	case d.Preset != "" || d.Count != 0:
		return topology.Topology{}, cfg.KeyError("devices.host_gbps describes a custom topology; remove devices.preset and devices.count", "devices", "host_gbps")
	case len(d.PeerGBps) != 0 && len(d.PeerGBps) != n:
		return topology.Topology{}, cfg.KeyError(fmt.Sprintf("devices.peer_gbps has %d rows for the %d devices of host_gbps; give one row per device", len(d.PeerGBps), n), "devices", "peer_gbps")
	}
	peer := make([][]float64, n)
	for i := range peer {
		peer[i] = make([]float64, n)
		if len(d.PeerGBps) == 0 {
			continue
		}
		if len(d.PeerGBps[i]) != n {
			return topology.Topology{}, cfg.KeyError(fmt.Sprintf("devices.peer_gbps[%d] has %d entries, want %d (one per device; 0 = no link)", i, len(d.PeerGBps[i]), n), "devices", "peer_gbps")
		}
		copy(peer[i], d.PeerGBps[i])
	}
	for i := range n {
		if peer[i][i] != 0 {
			return topology.Topology{}, cfg.KeyError(fmt.Sprintf("devices.peer_gbps[%d][%d] = %v: a device has no link to itself; use 0", i, i, peer[i][i]), "devices", "peer_gbps")
		}
		for j := range n {
			if peer[i][j] != peer[j][i] {
				return topology.Topology{}, cfg.KeyError(fmt.Sprintf("devices.peer_gbps[%d][%d] = %v but peer_gbps[%d][%d] = %v: NVLink links are bidirectional, make the matrix symmetric", i, j, peer[i][j], j, i, peer[j][i]), "devices", "peer_gbps")
			}
		}
	}
	topo := topology.Topology{Name: "custom", Devices: n, Capacity: d.MemoryBytes, HostGBps: append([]float64(nil), d.HostGBps...), PeerGBps: peer}
	if len(d.PCIeSwitch) > 0 {
		if len(d.PCIeSwitch) != n {
			return topo, cfg.KeyError(fmt.Sprintf("devices.pcie_switch has %d entries for the %d devices of host_gbps; give one per device (-1 = no switch)", len(d.PCIeSwitch), n), "devices", "pcie_switch")
		}
		topo.Switch, topo.SwitchGBps = append([]int(nil), d.PCIeSwitch...), d.SwitchGBps
		if topo.SwitchGBps == 0 {
			topo.SwitchGBps = topology.PCIeGBps
		}
	}
	if err := topo.Validate(); err != nil {
		return topo, cfg.KeyError("devices: "+err.Error(), "devices")
	}
	return topo, nil
}
