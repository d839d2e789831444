package hybrid

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"strata/core/backend"
	"strata/core/backend/cpu"
	"strata/core/topology"
	"strata/plugins/strategy/internal/steprun"
)

// describer is a backend that describes its device as a real GPU's
// backend does (backend.DeviceDescriber).
type describer struct {
	backend.Backend
	spec topology.DeviceSpec
	link float64
	err  error
}

func (d describer) DeviceRoofline() (topology.DeviceSpec, error) { return d.spec, d.err }
func (d describer) HostLinkGBps() (float64, error)               { return d.link, nil }

// TestDescribeDevice checks that the performance model prices a real
// device as it describes itself, and a device that cannot be described
// as a V100 behind PCIe 3.0 x16, saying so in the log.
func TestDescribeDevice(t *testing.T) {
	h100 := topology.DeviceSpec{PeakGFLOPS: 66908, MemGBps: 3352, LaunchUS: 5}
	cases := []struct {
		name   string
		be     backend.Backend
		dev    topology.DeviceSpec
		pcie   float64
		logHas string
	}{
		{"described", describer{Backend: cpu.New(cpu.Options{}), spec: h100, link: 53.7}, h100, 53.7, ""},
		{"not describable", describer{Backend: cpu.New(cpu.Options{}), err: errors.New("compute capability 5.2: float32 lanes per multiprocessor not known")}, topology.V100, topology.PCIeGBps, "pricing the device as a V100"},
		{"no description", cpu.New(cpu.Options{}), topology.V100, topology.PCIeGBps, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var log bytes.Buffer
			p := &hyscalePerf{dev: topology.V100}
			p.describeDevice(steprun.Env{Be: c.be, Log: &log})
			if p.dev != c.dev || p.pcie != c.pcie {
				t.Errorf("device %+v behind %g GB/s, want %+v behind %g", p.dev, p.pcie, c.dev, c.pcie)
			}
			if got := log.String(); (c.logHas == "") != (got == "") || !strings.Contains(got, c.logHas) {
				t.Errorf("log %q, want %q", got, c.logHas)
			}
		})
	}
}
