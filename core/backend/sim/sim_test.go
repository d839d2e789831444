package sim

import (
	"context"
	"errors"
	"slices"
	"strata/core/topology"
	"strings"
	"testing"

	"strata/core/backend"
	"strata/core/graph"
	"strata/core/tensor"
)

func TestPresets(t *testing.T) {
	cases := []struct {
		name       string
		devices    int
		wantN      int
		neighbours map[int][]int
		err        string
	}{
		{"pcie-only", 0, 1, map[int][]int{0: nil}, ""},
		{"pcie-only", 3, 3, map[int][]int{2: nil}, ""},
		{"nvlink-clique-4", 0, 4, map[int][]int{0: {1, 2, 3}, 3: {0, 1, 2}}, ""},
		{"nvlink-ring-4", 4, 4, map[int][]int{0: {1, 3}, 2: {1, 3}}, ""},
		// XGNN Fig. 7: GPU 0 cannot reach GPUs 4, 5 and 7 directly.
		{"dgx1-v100-8", 0, 8, map[int][]int{0: {1, 2, 3, 6}, 4: {2, 5, 6, 7}, 7: {1, 4, 5, 6}}, ""},
		// Its first GPUs (XGNN Figs. 11, 12): a quad, a pair, one.
		{"dgx1-v100-8", 4, 4, map[int][]int{0: {1, 2, 3}, 3: {0, 1, 2}}, ""},
		{"dgx1-v100-8", 2, 2, map[int][]int{0: {1}, 1: {0}}, ""},
		{"dgx1-v100-8", 1, 1, map[int][]int{0: nil}, ""},
		{"dgx1-v100-8", 9, 0, nil, `preset "dgx1-v100-8" has 8 devices, but 9 were asked for`},
		{"nvlink-clique-4", 2, 0, nil, `preset "nvlink-clique-4" has 4 devices, but 2 were asked for`},
		{"nvswitch", 0, 0, nil, `unknown device preset "nvswitch" (known: pcie-only, nvlink-clique-4, nvlink-ring-4, dgx1-v100-8)`},
	}
	for _, c := range cases {
		topo, err := topology.Preset(c.name, c.devices, 1<<30)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%s/%d: error %v, want %q", c.name, c.devices, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := topo.Validate(); err != nil {
			t.Fatal(err)
		}
		if topo.Devices != c.wantN {
			t.Errorf("%s: %d devices, want %d", c.name, topo.Devices, c.wantN)
		}
		for d, want := range c.neighbours {
			if got := topo.Neighbours(d); !slices.Equal(got, want) {
				t.Errorf("%s: device %d neighbours %v, want %v", c.name, d, got, want)
			}
		}
		if c.name == "dgx1-v100-8" && c.devices > 1 {
			// The sub-machine keeps the links and PCIe switches among its
			// GPUs: 0-3 doubled, 0-1 single, GPUs 0 and 1 behind one switch.
			if topo.PeerGBps[0][1] != topology.NVLinkGBps || len(topo.Switch) != c.devices || topo.Switch[0] != topo.Switch[1] ||
				c.devices == 4 && topo.PeerGBps[0][3] != 2*topology.NVLinkGBps {
				t.Errorf("%s/%d: links %v, switches %v", c.name, c.devices, topo.PeerGBps, topo.Switch)
			}
		}
		for i := range topo.Devices { // links are symmetric
			for j := range topo.Devices {
				if topo.PeerGBps[i][j] != topo.PeerGBps[j][i] {
					t.Errorf("%s: bandwidth %d->%d differs from %d->%d", c.name, i, j, j, i)
				}
			}
		}
	}
	// Every DGX-1 GPU has six NVLinks.
	topo, _ := topology.Preset("dgx1-v100-8", 0, 0)
	for i := range 8 {
		links := 0.0
		for _, bw := range topo.PeerGBps[i] {
			links += bw / topology.NVLinkGBps
		}
		if links != 6 {
			t.Errorf("dgx1 GPU %d has %v NVLinks, want 6", i, links)
		}
	}
}

func newSim(t *testing.T, preset string, capacity int64) *Backend {
	t.Helper()
	topo, err := topology.Preset(preset, 0, capacity)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(topo, 1)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func traffic(b *Backend) map[string]int64 {
	out := map[string]int64{}
	for _, l := range b.Traffic() {
		out[l.Link] = l.Bytes
	}
	return out
}

func TestTrafficCounting(t *testing.T) {
	b := newSim(t, "dgx1-v100-8", 0)
	var _ backend.Backend = b
	d0, d1, d4 := DeviceTier(0), DeviceTier(1), DeviceTier(4)
	x, err := b.Alloc(tensor.Float32, []int{10, 4}, d0) // 160 bytes
	if err != nil {
		t.Fatal(err)
	}
	if err := b.ForPurpose(backend.PurposeFeatures).Upload(x, make([]float32, 40)); err != nil {
		t.Fatal(err)
	}
	b = b.view(backend.PurposeActivations) // a view: same memory and counters
	y, _ := b.Alloc(tensor.Float32, []int{10, 4}, d1)
	z, _ := b.Alloc(tensor.Float32, []int{10, 4}, d4)
	h, _ := b.Alloc(tensor.Float32, []int{10, 4}, tensor.Host)
	for _, step := range []struct{ dst, src *tensor.Tensor }{{y, x}, {z, x}, {h, y}, {x, x}} {
		if err := b.Copy(step.dst, step.src); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Download(z, make([]float32, 40)); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{
		"host->device0":    160, // upload
		"device0->device1": 160, // NVLink
		"device0->host":    160, // device0 -> device4 has no link: via the host
		"host->device4":    160, //
		"device1->host":    160, // copy to a host tensor
		"device4->host":    160, // download
	}
	if got := traffic(b); !mapsEqual(got, want) {
		t.Errorf("traffic %v, want %v", got, want)
	}
	if err := b.ForPurpose("").Copy(x, z); err != nil { // no purpose: counted as other
		t.Fatal(err)
	}
	want["device4->host"] += 160
	want["host->device0"] += 160
	if got := b.TrafficByPurpose(); got[backend.PurposeFeatures] != 160 || got[backend.PurposeActivations] != 4*160 || got[backend.PurposeOther] != 160 {
		t.Errorf("traffic by purpose %v, want features 160 and activations 640", got)
	}
	for _, l := range b.Traffic() {
		if l.Seconds <= 0 || l.GBps <= 0 {
			t.Errorf("link %s: %v GB/s, %v s", l.Link, l.GBps, l.Seconds)
		}
	}
	b.ResetTraffic()
	if len(b.Traffic()) != 0 {
		t.Error("ResetTraffic left counters")
	}
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestCapacity(t *testing.T) {
	b := newSim(t, "pcie-only", 1000)
	d0 := DeviceTier(0)
	a, err := b.Alloc(tensor.Float32, []int{200}, d0) // 800 bytes
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Alloc(tensor.Float32, []int{100}, d0) // 400 more: over
	var oom *backend.OutOfMemoryError
	if !errors.As(err, &oom) || oom.Tier != d0 || oom.InUse != 800 || oom.Capacity != 1000 {
		t.Fatalf("error %v, want an OutOfMemoryError on device0", err)
	}
	if !strings.Contains(err.Error(), "device0 out of memory") || !strings.Contains(err.Error(), "micro-batches") {
		t.Errorf("message %q does not say what ran out and what to do", err)
	}
	// The host is not limited, and freeing makes room.
	if _, err := b.Alloc(tensor.Float32, []int{1 << 20}, tensor.Host); err != nil {
		t.Fatal(err)
	}
	b.Release(a)
	if _, err := b.Alloc(tensor.Float32, []int{250}, d0); err != nil {
		t.Fatalf("after Release: %v", err)
	}
	if st := b.Stats(); st.Peak[d0] != 1000 || st.InUse[d0] != 1000 {
		t.Errorf("device0 stats in use %d peak %d, want 1000 and 1000", st.InUse[d0], st.Peak[d0])
	}
}

func TestOperandsShareATier(t *testing.T) {
	b := newSim(t, "pcie-only", 0)
	x, _ := b.Alloc(tensor.Float32, []int{4}, tensor.Host)
	y, _ := b.Alloc(tensor.Float32, []int{4}, DeviceTier(0))
	err := b.Axpby(1, x, 0, y)
	if err == nil || !strings.Contains(err.Error(), "must share a tier") {
		t.Fatalf("error %v, want a tier mismatch", err)
	}
	if _, err := b.Alloc(tensor.Float32, []int{4}, DeviceTier(3)); err == nil {
		t.Fatal("allocating on a device the topology lacks succeeded")
	}
}

// TestConcurrentViews drives two purpose views from two goroutines, as
// the mini-batch pipeline does, and checks that no byte is mislabelled
// and memory accounting stays exact.
func TestConcurrentViews(t *testing.T) {
	b := newSim(t, "pcie-only", 0)
	const rounds = 200
	run := func(purpose string, rows int) error {
		v := b.ForPurpose(purpose)
		for range rounds {
			x, err := v.Alloc(tensor.Float32, []int{rows, 4}, DeviceTier(0))
			if err != nil {
				return err
			}
			if err := v.Upload(x, make([]float32, rows*4)); err != nil {
				return err
			}
			v.Release(x)
		}
		return nil
	}
	errs := make(chan error, 2)
	go func() { errs <- run(backend.PurposeFeatures, 3) }()
	go func() { errs <- run(backend.PurposeTopology, 5) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	got := b.TrafficByPurpose()
	if got[backend.PurposeFeatures] != rounds*3*16 || got[backend.PurposeTopology] != rounds*5*16 {
		t.Errorf("by purpose %v, want features %d and topology %d", got, rounds*3*16, rounds*5*16)
	}
	if use := b.Stats().InUse[DeviceTier(0)]; use != 0 {
		t.Errorf("%d bytes still in use after releasing everything", use)
	}
}

// TestKernelScratchCountsInItsTier checks that the temporaries an inner
// backend allocates during a kernel (the LSTM's, in inference) count in
// the tier of the operands and that a device without room for them fails
// with an out-of-memory error naming that device.
func TestKernelScratchCountsInItsTier(t *testing.T) {
	const h = 2
	g := graph.NewCSR(3, []int64{0, 2, 3, 4}, []int64{0, 1, 2, 0})
	setup := func(capacity int64) (*Backend, func() error) {
		b := newSim(t, "pcie-only", capacity)
		dev := DeviceTier(0)
		a, err := b.UploadGraph(g, dev)
		if err != nil {
			t.Fatal(err)
		}
		var ts []*tensor.Tensor
		for _, shape := range [][]int{{3, 4 * h}, {h, 4 * h}, {4 * h}, {3, h}} {
			x, err := b.Alloc(tensor.Float32, shape, dev)
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, x)
		}
		return b, func() error {
			return b.LSTMAggregate(context.Background(), a, ts[0], ts[1], ts[2], ts[3], nil, nil, nil)
		}
	}
	b, run := setup(0)
	before := b.Stats()
	if err := run(); err != nil {
		t.Fatal(err)
	}
	after := b.Stats()
	dev := DeviceTier(0)
	if after.InUse[dev] <= before.InUse[dev] || after.Peak[dev] <= after.InUse[dev] || after.Peak[tensor.Host] != 0 {
		t.Errorf("device0 in use %d→%d, peak %d; host peak %d: the scratch did not count on device0",
			before.InUse[dev], after.InUse[dev], after.Peak[dev], after.Peak[tensor.Host])
	}
	// With room for the operands, the graph and its step order but not
	// the scratch, the kernel runs out of memory on device0.
	_, run = setup(after.InUse[dev])
	err := run()
	var oom *backend.OutOfMemoryError
	if !errors.As(err, &oom) || oom.Tier != dev || !strings.Contains(err.Error(), "sim: device0 out of memory") {
		t.Fatalf("error %v, want an OutOfMemoryError on device0", err)
	}
}
