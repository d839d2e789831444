package sim

import (
	"reflect"
	"testing"

	"strata/core/backend"
	"strata/core/tensor"
	"strata/core/topology"
)

// TestGatherTiers checks the multi-tier gather on one device with
// zero-copy: the rows of the combined tensor, one kernel priced for the
// bytes it moves in the device's memory, exactly the host rows' bytes on
// the host link; a CPU gather priced at HostGatherGBps as host time; and
// without zero-copy, no in-place host read.
func TestGatherTiers(t *testing.T) {
	for _, zeroCopy := range []bool{false, true} {
		topo, err := topology.Preset("pcie-only", 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		topo.ZeroCopy, topo.HostGatherGBps = zeroCopy, 8
		b, err := New(topo, 1)
		if err != nil {
			t.Fatal(err)
		}
		cost := &fixedCost{}
		b.SetKernelCost(cost)
		v := b.ForPurpose(backend.PurposeFeatures)
		dev := DeviceTier(0)
		tensorOf := func(tier tensor.Tier, dt tensor.DType, shape []int, data any) *tensor.Tensor {
			x, err := b.Alloc(dt, shape, tier)
			if err == nil {
				err = b.Upload(x, data)
			}
			if err != nil {
				t.Fatal(err)
			}
			return x
		}
		host := tensorOf(tensor.Host, tensor.Float32, []int{3, 2}, []float32{0, 1, 2, 3, 4, 5})
		local := tensorOf(dev, tensor.Float32, []int{2, 2}, []float32{10, 11, 12, 13})
		idx := tensorOf(dev, tensor.Int32, []int{4}, []int32{4, 0, 2, 3})
		out := tensorOf(dev, tensor.Float32, []int{4, 2}, make([]float32, 8))
		if got := b.GathersFrom(tensor.Host, dev); got != zeroCopy {
			t.Fatalf("zero-copy %v: GathersFrom(host, device0) = %v", zeroCopy, got)
		}
		b.ResetTraffic()
		err = v.(backend.TierGatherer).GatherTiers([]*tensor.Tensor{host, local}, idx, out)
		if !zeroCopy {
			if err == nil {
				t.Fatal("a host source read in place without zero-copy")
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		rows := make([]float32, 8)
		if err := b.Peek(out, rows); err != nil {
			t.Fatal(err)
		}
		if want := []float32{12, 13, 0, 1, 4, 5, 10, 11}; !reflect.DeepEqual(rows, want) {
			t.Errorf("rows %v, want %v", rows, want)
		}
		// Two host rows of 8 bytes cross the link; the kernel reads two
		// local rows and writes four, with four indices.
		if got := b.Traffic(); len(got) != 1 || got[0].Link != "host->device0" || got[0].Bytes != 16 {
			t.Errorf("traffic %+v, want 16 bytes host->device0", got)
		}
		wantCall := []float64{costGeneric, topology.V100.PeakGFLOPS, topology.V100.MemGBps, topology.V100.LaunchUS, 4, 0, 16 + 32 + 16}
		if len(cost.calls) != 1 || !reflect.DeepEqual(cost.calls[0], wantCall) {
			t.Errorf("cost model saw %v, want one call %v", cost.calls, wantCall)
		}
		// A CPU gather: the bytes it writes at 8 GB/s, host time.
		hidx := tensorOf(tensor.Host, tensor.Int32, []int{2}, []int32{2, 0})
		hout := tensorOf(tensor.Host, tensor.Float32, []int{2, 2}, make([]float32, 4))
		b.ResetTraffic()
		if err := v.Gather(host, hidx, hout); err != nil {
			t.Fatal(err)
		}
		if got, want := b.Predicted().KernelS[tensor.Host][backend.PurposeFeatures], 16/8e9; got != want {
			t.Errorf("CPU gather of 16 bytes: %v s, want %v", got, want)
		}
	}
}
