package sim

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"reflect"
	"slices"
	"testing"

	"strata/core/backend"
	"strata/core/backend/sim/internal/wrapgen"
	"strata/core/graph"
	"strata/core/tensor"
	"strata/core/topology"

	"strata/internal/floattol"
)

// TestEveryKernelIsTimed fails when backend.Backend (or the inner
// backend's extensions) gains a kernel that the cost table does not price:
// every method is either exempt (it moves or manages memory, or describes
// the backend) or has a non-nil entry in prices.
func TestEveryKernelIsTimed(t *testing.T) {
	table := reflect.ValueOf(prices)
	for _, typ := range []reflect.Type{reflect.TypeFor[backend.Backend](), reflect.TypeFor[extensions]()} {
		for i := range typ.NumMethod() {
			name := typ.Method(i).Name
			if slices.Contains(wrapgen.Sim.Exempt, name) {
				continue
			}
			if f := table.FieldByName(name); !f.IsValid() || f.IsNil() {
				t.Errorf("%s.%s is not timed by the simulated backend: run go generate and price it in cost.go (prices)", typ, name)
			}
		}
	}
}

// TestGeneratedIsCurrent fails when wrap_gen.go differs from what the
// generator writes now (run go generate in core/backend/sim).
func TestGeneratedIsCurrent(t *testing.T) {
	want, err := wrapgen.Generate(wrapgen.Sim)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(wrapgen.Sim.Out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: run go generate in core/backend/sim", wrapgen.Sim.Out)
	}
}

// fixedCost predicts op+1 seconds for every kernel and records the inputs.
type fixedCost struct{ calls [][]float64 }

func (c *fixedCost) Predict(op int32, in []float64) ([4]float64, error) {
	c.calls = append(c.calls, append([]float64{float64(op)}, in...))
	return [4]float64{float64(op) + 1}, nil
}

type failingCost struct{}

func (failingCost) Predict(int32, []float64) ([4]float64, error) {
	return [4]float64{}, errors.New("trapped")
}

func TestKernelTiming(t *testing.T) {
	b := newSim(t, "pcie-only", 0)
	cost := &fixedCost{}
	b.SetKernelCost(cost)
	dev := DeviceTier(0)
	alloc := func(tier tensor.Tier, r, c int) *tensor.Tensor {
		x, err := b.Alloc(tensor.Float32, []int{r, c}, tier)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	v := b.ForPurpose(backend.PurposeFeatures)
	a, x, c := alloc(dev, 4, 3), alloc(dev, 3, 5), alloc(dev, 4, 5)
	if err := v.GEMM(false, false, 1, a, x, 0, c); err != nil {
		t.Fatal(err)
	}
	want := []float64{costGEMM, topology.V100.PeakGFLOPS, topology.V100.MemGBps, topology.V100.LaunchUS, 4, 4, 3, 5}
	if len(cost.calls) != 1 || !reflect.DeepEqual(cost.calls[0], want) {
		t.Fatalf("cost model saw %v, want %v", cost.calls, want)
	}
	g, err := v.UploadGraph(graph.NewCSR(4, []int64{0, 1, 2, 3, 3}, []int64{1, 2, 3}), dev)
	if err != nil {
		t.Fatal(err)
	}
	y := alloc(dev, 4, 5)
	if err := b.SpMM(context.Background(), g, false, nil, c, 0, y); err != nil { // purpose other
		t.Fatal(err)
	}
	// A host kernel is not a device's time.
	h1, h2, h3 := alloc(tensor.Host, 4, 3), alloc(tensor.Host, 3, 5), alloc(tensor.Host, 4, 5)
	if err := b.GEMM(false, false, 1, h1, h2, 0, h3); err != nil {
		t.Fatal(err)
	}
	if err := v.Upload(a, make([]float32, 12)); err != nil {
		t.Fatal(err)
	}
	p := b.Predicted()
	wantKernels := map[tensor.Tier]map[string]float64{dev: {backend.PurposeFeatures: costGEMM + 1, backend.PurposeOther: costSpMM + 1}}
	if !reflect.DeepEqual(p.KernelS, wantKernels) {
		t.Errorf("kernel seconds %v, want %v", p.KernelS, wantKernels)
	}
	moved := b.TrafficByPurpose()[backend.PurposeFeatures]
	// The transfers' times (one division each) summed, against the bytes'
	// sum divided once: γ_{2n+2} of the time for n ≤ 8 transfers.
	if want := float64(moved) / (topology.PCIeGBps * 1e9); len(p.TransferS) != 1 || math.Abs(p.TransferS[backend.PurposeFeatures]-want) > floattol.Gamma(18, floattol.UFloat64)*want || moved <= 48 {
		t.Errorf("transfer seconds %v for %d feature bytes at %v GB/s", p.TransferS, moved, topology.PCIeGBps)
	}
	b.ResetTraffic()
	if p := b.Predicted(); len(p.TransferS)+len(p.KernelS) != 0 {
		t.Errorf("ResetTraffic left predictions %+v", p)
	}
	b.SetKernelCost(failingCost{})
	if err := b.GEMM(false, false, 1, a, x, 0, c); err == nil {
		t.Error("a failing cost model did not fail the kernel")
	}
}
