package wasm

import (
	"context"
	"math"
	"testing"

	"strata/internal/floattol"
)

// machine is [peak GFLOP/s, GB/s, overhead µs, bytes per element].
var machine = []float64{1000, 100, 5, 4}

func predict(t *testing.T, c *CostModel, op int32, args ...float64) [4]float64 {
	t.Helper()
	out, err := c.Predict(op, append(append([]float64(nil), machine...), args...))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range out {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			t.Fatalf("op %d %v: out[%d] = %g", op, args, i, v)
		}
	}
	return out
}

func rooflineModel(t *testing.T) *CostModel {
	m := loadGuest(t, "models/costmodels/roofline")
	if !m.IsCostModel() || m.IsLayer() {
		t.Fatalf("roles: cost %v layer %v", m.IsCostModel(), m.IsLayer())
	}
	c, err := m.CostModel(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestRoofline(t *testing.T) {
	c := rooflineModel(t)
	const overhead = 5e-6
	// The module divides by the peak (its GFLOPS or GB/s times 1e9, and µs
	// by 1e6) and adds the overhead: at most 4 roundings, and 2 for the
	// expected sum here.
	near := func(got, want float64) bool {
		return math.Abs(got-want) <= floattol.Gamma(6, floattol.UFloat64)*math.Abs(want)
	}

	// Generic op: compute bound, memory bound, and the overhead floor.
	if out := predict(t, c, 0, 1e9, 0); !near(out[0], 1e-3+overhead) || out[1] != 1e9 {
		t.Errorf("1 GFLOP: %v", out)
	}
	if out := predict(t, c, 0, 0, 1e9); !near(out[0], 1e-2+overhead) || out[2] != 1e9 {
		t.Errorf("1 GB: %v", out)
	}
	if out := predict(t, c, 0, 0, 0); !near(out[0], overhead) {
		t.Errorf("empty op: %v", out)
	}

	// Monotone (non-decreasing) in flops at fixed bytes, strictly once compute bound.
	prev := -1.0
	for _, f := range []float64{0, 1e3, 1e6, 1e8, 1e9, 1e10, 1e12} {
		out := predict(t, c, 0, f, 1e7)
		if out[0] < prev {
			t.Errorf("time fell from %g to %g at %g flops", prev, out[0], f)
		}
		prev = out[0]
	}
	// And monotone in GEMM size.
	prev = -1
	for _, n := range []float64{1, 16, 256, 1024, 4096} {
		out := predict(t, c, 1, n, n, n)
		if out[0] <= prev || out[1] != 2*n*n*n {
			t.Errorf("gemm %g: %v (prev %g)", n, out, prev)
		}
		prev = out[0]
	}
	// SpMM (Cora-sized GCN aggregation) is memory bound: intensity < ridge (10 flop/B).
	if out := predict(t, c, 2, 2708, 13264, 16, 1); out[3] >= 10 || out[0] <= overhead {
		t.Errorf("spmm: %v", out)
	}
	for op := int32(3); op <= 5; op++ {
		predict(t, c, op, 1000, 8, 8)
	}

	if _, err := c.Predict(99, machine); err == nil {
		t.Error("op 99: no error")
	} else {
		mustContain(t, err, `cost model "roofline": unknown op 99`)
	}
	_, err := c.Predict(0, []float64{0, 100, 5, 4, 1, 1})
	mustContain(t, err, "invalid inputs")
	_, err = c.Predict(0, make([]float64, 17))
	mustContain(t, err, "17 inputs, at most 16")
	// Still usable after errors.
	predict(t, c, 0, 1, 1)
}

func TestLayerIsNotCostModel(t *testing.T) {
	_, err := loadGuest(t, "models/layers/gcn").CostModel(context.Background())
	mustContain(t, err, `cost model "gcn" is not a cost model`)
	_, err = loadGuest(t, "models/costmodels/roofline").LayerSpec(context.Background(), Config{})
	mustContain(t, err, `model "roofline" is not a layer module`)
}

// costMod is a hand-made cost model: its I/O block is at 1024 with version
// 1; strata_cost copies In[4] to Out[0], trapping when In[4] > 100 and
// looping forever when loop is set.
func costMod(ioAddr int32, loop bool) []byte {
	m := layerMod().abiVersion(1)
	m.bytesAt(1024, []byte{1, 0, 0, 0})
	m.fn("strata_cost_io", nil, ts(tI32), nil, i32c(ioAddr))
	body := cat(
		i32c(0), f64Load(1024+8+4*8), f64c(100), opF64Gt, opIf, opUnreachable, opEnd,
		i32c(0), i32c(0), f64Load(1024+8+4*8), f64Store(1024+costOutOff),
		i32c(0),
	)
	if loop {
		body = cat(opLoopForever, i32c(0))
	}
	m.fn("strata_cost", ts(tI32), ts(tI32), nil, body)
	return m.bytes()
}

func TestCostModelTrapRecovery(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t, Options{})
	m, err := rt.Load(ctx, "copy", costMod(1024, false))
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.CostModel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	in := []float64{0, 0, 0, 0, 42}
	if out, err := c.Predict(3, in); err != nil || out[0] != 42 {
		t.Fatalf("predict: %v %v", out, err)
	}
	in[4] = 1000
	_, err = c.Predict(3, in)
	mustContain(t, err, `cost model "copy": strata_cost(op 3) trapped: wasm error: unreachable`)
	in[4] = 7
	if out, err := c.Predict(3, in); err != nil || out[0] != 7 {
		t.Fatalf("predict after trap: %v %v", out, err)
	}
}

func TestCostModelValidation(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t, Options{Deadline: 200 * timeMs})
	cases := []struct {
		name string
		wasm []byte
		want string
	}{
		{"loop", costMod(1024, true), `cost model "loop": strata_cost(op 0) in its validation run exceeded the 200ms deadline`},
		{"badaddr", costMod(65530, false), `strata_cost_io returned 0xfffa, but the 168-byte I/O block does not fit in guest memory (65536 bytes)`},
		{"badversion", costMod(2048, false), `I/O block version 0, host supports 1`},
	}
	for _, c := range cases {
		m, err := rt.Load(ctx, c.name, c.wasm)
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.CostModel(ctx)
		mustContain(t, err, c.want)
	}
}
