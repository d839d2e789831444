package backendtest

import (
	"strata/core/topology"
	"testing"

	"strata/core/backend/cpu"
	"strata/core/backend/sim"
	"strata/core/tensor"
)

// TestSimulatedDevice runs the suite against the simulated-device backend,
// computing in device 0 of a capacity-limited single-device topology.
func TestSimulatedDevice(t *testing.T) {
	topo, err := topology.Preset("pcie-only", 1, 256<<20)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sim.New(topo, 2)
	if err != nil {
		t.Fatal(err)
	}
	Run(t, cpu.New(cpu.Options{Threads: 2}), got, Options{Tier: sim.DeviceTier(0), Seed: 1})
}

// TestSingleThreadedCPU runs the suite against a second CPU backend with
// one thread, on the host.
func TestSingleThreadedCPU(t *testing.T) {
	Run(t, cpu.New(cpu.Options{Threads: 2}), cpu.New(cpu.Options{Threads: 1}), Options{Tier: tensor.Host, Seed: 2})
}
