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
