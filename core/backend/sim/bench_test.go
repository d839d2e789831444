package sim

import (
	"testing"

	"strata/core/backend"
	"strata/core/backend/cpu"
	"strata/core/tensor"
	"strata/core/topology"
)

// BenchmarkCallOverhead times a tiny kernel (Axpby of 4 elements) on the
// CPU backend itself and through the simulated backend, without and with a
// cost model: the difference is what the wrapper (tier check, unwrapping,
// pricing) adds per call.
func BenchmarkCallOverhead(b *testing.B) {
	run := func(b *testing.B, be backend.Backend, tier tensor.Tier) {
		x, err := be.Alloc(tensor.Float32, []int{4}, tier)
		if err != nil {
			b.Fatal(err)
		}
		y, _ := be.Alloc(tensor.Float32, []int{4}, tier)
		b.ReportAllocs()
		for b.Loop() {
			if err := be.Axpby(1, x, 1, y); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("cpu", func(b *testing.B) { run(b, cpu.New(cpu.Options{Threads: 1}), tensor.Host) })
	sb := func(b *testing.B) *Backend {
		topo, err := topology.Preset("pcie-only", 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		s, err := New(topo, 1)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	b.Run("sim", func(b *testing.B) { run(b, sb(b), DeviceTier(0)) })
	b.Run("sim+cost", func(b *testing.B) {
		s := sb(b)
		s.SetKernelCost(constCost{})
		run(b, s.ForPurpose(backend.PurposeActivations), DeviceTier(0))
	})
}

type constCost struct{}

func (constCost) Predict(int32, []float64) ([4]float64, error) { return [4]float64{1e-6}, nil }

// noop is a CPU backend whose Axpby does nothing, to time the wrapper alone.
type noop struct{ *cpu.Backend }

func (noop) Axpby(float64, *tensor.Tensor, float64, *tensor.Tensor) error { return nil }

// BenchmarkWrapper times what the simulated backend adds to a call (tier
// check, unwrapping, pricing without a cost model) over an inner backend
// whose kernel does nothing.
func BenchmarkWrapper(b *testing.B) {
	topo, err := topology.Preset("pcie-only", 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	s, err := newMachine(topo, func(capacity int64) backend.Backend {
		return noop{cpu.New(cpu.Options{Threads: 1, Capacity: capacity})}
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		be   backend.Backend
	}{{"inner", s.inner[DeviceTier(0)]}, {"sim", s}} {
		b.Run(c.name, func(b *testing.B) {
			tier := DeviceTier(0)
			if c.name == "inner" {
				tier = tensor.Host
			}
			x, _ := c.be.Alloc(tensor.Float32, []int{4}, tier)
			y, _ := c.be.Alloc(tensor.Float32, []int{4}, tier)
			b.ReportAllocs()
			for b.Loop() {
				if err := c.be.Axpby(1, x, 1, y); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
