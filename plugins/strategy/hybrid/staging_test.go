package hybrid

import (
	"context"
	"strata/plugins/strategy/internal/testkit"
	"strings"
	"testing"
)

// TestStagingPool: a buffer handed back is recycled for a request it
// fits (the smallest that fits), a larger request allocates, the pool
// keeps at most keep buffers (the largest), and drop empties it.
func TestStagingPool(t *testing.T) {
	p := stagingPool{keep: 3}
	a, fresh := p.get(100)
	if !fresh || len(a) != 100 || cap(a) < 100 {
		t.Fatalf("first get: len %d cap %d fresh %v, want a fresh buffer of 100", len(a), cap(a), fresh)
	}
	big, _ := p.get(1000)
	p.put(a)
	p.put(big)
	cases := []struct {
		name      string
		n         int
		sameAs    []float32 // the buffer it must recycle, if any
		wantFresh bool
	}{
		{"fits the small one", 90, a, false},
		{"fits only the big one", 500, big, false},
		{"fits none", 2000, nil, true},
	}
	for _, c := range cases {
		b, fresh := p.get(c.n)
		if fresh != c.wantFresh || len(b) != c.n {
			t.Errorf("%s: len %d fresh %v, want len %d fresh %v", c.name, len(b), fresh, c.n, c.wantFresh)
		}
		if c.sameAs != nil && &b[0] != &c.sameAs[0] {
			t.Errorf("%s: a new buffer, want the one handed back", c.name)
		}
	}
	for _, n := range []int{10, 20, 30, 40} {
		p.put(make([]float32, n))
	}
	if len(p.free) != p.keep {
		t.Fatalf("%d free buffers kept, want %d", len(p.free), p.keep)
	}
	for _, f := range p.free {
		if cap(f) == 10 {
			t.Error("the smallest buffer was kept over larger ones")
		}
	}
	p.drop()
	if _, fresh := p.get(1); !fresh || len(p.free) != 0 {
		t.Error("drop kept buffers")
	}
	var nilPool *stagingPool
	if b, fresh := nilPool.get(5); !fresh || len(b) != 5 {
		t.Error("a nil pool did not allocate")
	}
	nilPool.put(a) // no-op
}

// TestHybridStagingRecycled: over an epoch of many steps the loader
// allocates staging memory only while the pipeline fills and for an input
// larger than every free buffer, not every step: with one CPU trainer, and
// with two devices and a CPU trainer (three parts per batch) with and
// without two-stage prefetch.
func TestHybridStagingRecycled(t *testing.T) {
	for _, sets := range [][]string{
		{"hybrid.cpu_share=1"},
		{`train.backend="sim"`, "devices.count=2", "hybrid.cpu_share=0.3"},
		{`train.backend="sim"`, "devices.count=2", "hybrid.cpu_share=0.3", "hybrid.prefetch=false"},
	} {
		t.Run(strings.Join(sets, ","), func(t *testing.T) { stagingRecycled(t, sets) })
	}
}

func stagingRecycled(t *testing.T, sets []string) {
	cfg := testkit.MustParse(t, hybridBase, append([]string{`train.mode="hybrid"`, "train.batch_size=8"}, sets...)...)
	_, st := testkit.NewTestStepper(t, cfg)
	s := st.(*hybridStepper)
	for epoch := range 2 {
		if _, err := st.Epoch(context.Background(), 1, func() error { return nil }); err != nil {
			t.Fatal(err)
		}
		if epoch == 0 && s.stats.freshSteps == 0 {
			t.Fatal("the first epoch allocated no staging memory, with the pool empty")
		}
	}
	if s.stats.steps < 10 {
		t.Fatalf("%d steps, want at least 10 for the test to mean something", s.stats.steps)
	}
	// The second epoch starts with the first's buffers in the pool.
	if s.stats.freshSteps > 3 {
		t.Errorf("%d of %d steps allocated staging memory in the second epoch, want at most 3", s.stats.freshSteps, s.stats.steps)
	}
}
