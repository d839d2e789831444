package engine

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"strata/core/backend/cpu"
	"strata/core/tensor"
)

// TestProgramRecyclesBuffers: on a recycling view (cpu) a program's
// buffers come from the pool; a program bound after another was released
// maps nothing new and computes the same loss, gradients and outputs bit
// for bit (its reused buffers came back zero-filled); and a program
// dropped without Release gives its buffers back when it is collected.
func TestProgramRecyclesBuffers(t *testing.T) {
	const dt = tensor.Float64
	f := randomBlockFixture(5, 20_000, 60_000) // buffers above the pool's minimum
	f.be = f.be.(*cpu.Backend).Recycling()
	be := f.be.(*cpu.Backend)
	defer be.TrimPool()
	g := linkModel(t, "sage", []int64{inDim, width, classes})
	env := f.fullEnv(t, dt)
	labels := make([]int32, f.adj.NumRows)
	idx := make([]int32, f.adj.NumRows)
	for i := range labels {
		labels[i], idx[i] = int32(i%classes), int32(i)
	}
	ps, err := NewParams(g, be, dt, tensor.Host, 7)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Release()
	base := be.Stats().InUse[tensor.Host]
	type result struct {
		loss  float64
		out   []float64
		grads map[string][]float64
	}
	step := func() (*Program, result) {
		t.Helper()
		p, err := Bind(g, env, ps)
		if err != nil {
			t.Fatal(err)
		}
		loss := lossGrads(t, p, be, labels, idx, false)
		out := download(t, &harness{prog: p}, p.Output())
		gr, err := gradsOf(be, ps)
		if err != nil {
			t.Fatal(err)
		}
		return p, result{loss, out, gr}
	}
	p, first := step()
	mapped := be.PoolStats()
	if mapped.Misses == 0 {
		t.Fatalf("the program mapped no pooled buffer: %+v", mapped)
	}
	p.Release()
	if got := be.Stats().InUse[tensor.Host]; got != base {
		t.Fatalf("in use after Release: %d, want %d", got, base)
	}
	p, second := step()
	if s := be.PoolStats(); s.Misses != mapped.Misses || s.Hits == mapped.Hits {
		t.Errorf("second program: %d new mappings, %d hits; want none and some", s.Misses-mapped.Misses, s.Hits-mapped.Hits)
	}
	if first.loss != second.loss || !slices.Equal(first.out, second.out) {
		t.Errorf("a program on recycled buffers differs: loss %v vs %v", first.loss, second.loss)
	}
	for name, v := range first.grads {
		if !slices.Equal(v, second.grads[name]) {
			t.Errorf("gradient %s differs on recycled buffers", name)
		}
	}
	p.Release()

	step() // a program dropped without Release
	deadline := time.Now().Add(time.Minute)
	for be.Stats().InUse[tensor.Host] != base {
		if time.Now().After(deadline) {
			t.Fatalf("a dropped program's buffers were not given back: %d bytes in use, want %d", be.Stats().InUse[tensor.Host], base)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}
