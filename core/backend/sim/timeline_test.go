package sim

import (
	"math"
	"testing"

	"strata/core/backend"
	"strata/core/tensor"
	"strata/core/topology"

	"strata/internal/floattol"
)

// TestParallelLinks checks predicted transfer times against timelines
// worked out by hand: a transfer takes bytes / bandwidth on its link,
// transfers on different links overlap, transfers on one link (or behind
// one PCIe switch) take turns, and a copy routed through the host crosses
// its two links one after the other.
func TestParallelLinks(t *testing.T) {
	const GB = int64(1e9)
	pull := func(i int) [3]any { return [3]any{tensor.Host, DeviceTier(i), GB} }
	push := func(i int) [3]any { return [3]any{DeviceTier(i), tensor.Host, GB} }
	peer := func(i, j int) [3]any { return [3]any{DeviceTier(i), DeviceTier(j), GB} }
	pcie := float64(GB) / (topology.PCIeGBps * 1e9)       // 1 GB over PCIe: 62.5 ms
	nvl2 := float64(GB) / (2 * topology.NVLinkGBps * 1e9) // over a double NVLink: 20 ms
	cases := []struct {
		name      string
		preset    string
		devices   int
		transfers [][3]any
		want      float64
	}{
		{"one pull", "pcie-only", 2, [][3]any{pull(0)}, pcie},
		{"two devices, own links", "pcie-only", 2, [][3]any{pull(0), pull(1)}, pcie},
		{"two pulls, one link", "pcie-only", 2, [][3]any{pull(0), pull(0)}, 2 * pcie},
		{"pull and push: two directions", "pcie-only", 1, [][3]any{pull(0), push(0)}, pcie},
		{"two devices behind one switch", "dgx1-v100-8", 0, [][3]any{pull(0), pull(1)}, 2 * pcie},
		{"two devices on two switches", "dgx1-v100-8", 0, [][3]any{pull(0), pull(2)}, pcie},
		{"switch up and down", "dgx1-v100-8", 0, [][3]any{pull(0), push(1)}, pcie},
		{"NVLink next to PCIe", "nvlink-clique-4", 0, [][3]any{pull(0), peer(1, 0), peer(2, 0)}, pcie},
		{"two NVLink copies on one link", "nvlink-clique-4", 0, [][3]any{peer(1, 0), peer(1, 0)}, 2 * nvl2},
		// No link between 0 and 1: 0->host, then host->1.
		{"routed copy", "pcie-only", 2, [][3]any{peer(0, 1)}, 2 * pcie},
		// The routed copy's second hop waits for the pull on host->1.
		{"routed copy behind a pull", "pcie-only", 2, [][3]any{pull(1), peer(0, 1)}, 2 * pcie},
		{"routed copy before a pull", "pcie-only", 2, [][3]any{peer(0, 1), pull(1)}, 3 * pcie},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topo, err := topology.Preset(c.preset, c.devices, 0)
			if err != nil {
				t.Fatal(err)
			}
			b, err := New(topo, 1)
			if err != nil {
				t.Fatal(err)
			}
			v := b.view(backend.PurposeFeatures)
			for _, tr := range c.transfers {
				v.count(tr[0].(tensor.Tier), tr[1].(tensor.Tier), tr[2].(int64))
			}
			got := b.Predicted().TransferS[backend.PurposeFeatures]
			// At most three transfers, each bytes/bandwidth (one
			// rounding), chained by additions: γ_6 of the time, for the
			// prediction and the expectation's own product.
			if math.Abs(got-c.want) > floattol.Gamma(6, floattol.UFloat64)*c.want {
				t.Errorf("predicted %v s, want %v s", got, c.want)
			}
		})
	}
}

// TestBarrier checks that reading the prediction ends a window: work
// after it starts when all earlier work has ended, and purposes keep
// their own timelines.
func TestBarrier(t *testing.T) {
	const n = int64(16e6) // 1 ms over PCIe
	topo, err := topology.Preset("pcie-only", 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(topo, 1)
	if err != nil {
		t.Fatal(err)
	}
	f, o := b.view(backend.PurposeFeatures), b.view(backend.PurposeOther)
	f.count(tensor.Host, DeviceTier(0), n)
	o.count(tensor.Host, DeviceTier(0), n) // another purpose: its own timeline
	p := b.Predicted()
	if p.TransferS[backend.PurposeFeatures] != 1e-3 || p.TransferS[backend.PurposeOther] != 1e-3 {
		t.Fatalf("first window %v, want 1 ms each", p.TransferS)
	}
	f.count(tensor.Host, DeviceTier(1), n) // would overlap the first pull without the barrier
	// 1 ms (16e6/16e9, correctly rounded as 1e-3) twice: exactly 2 ms.
	if got := b.Predicted().TransferS[backend.PurposeFeatures]; got != 2e-3 {
		t.Errorf("after the barrier %v s, want 2 ms", got)
	}
	if got := b.Predicted().TransferS[backend.PurposeFeatures]; got != 2e-3 {
		t.Errorf("reading twice: %v s, want 2 ms", got)
	}
}

// TestBytesUnchangedByTimelines checks that the schedule does not touch
// byte counts: the bytes of a mixed sequence equal a hand count per link.
func TestBytesUnchangedByTimelines(t *testing.T) {
	b := newSim(t, "dgx1-v100-8", 0)
	v := b.view(backend.PurposeFeatures)
	v.count(tensor.Host, DeviceTier(0), 100)
	v.count(tensor.Host, DeviceTier(1), 200)
	v.count(DeviceTier(0), DeviceTier(4), 300) // no link: via the host
	v.count(DeviceTier(6), DeviceTier(0), 400)
	b.Predicted()
	v.count(tensor.Host, DeviceTier(0), 50)
	want := map[string]int64{"host->device0": 150, "host->device1": 200, "device0->host": 300, "host->device4": 300, "device6->device0": 400}
	if got := traffic(b); !mapsEqual(got, want) {
		t.Errorf("traffic %v, want %v", got, want)
	}
	if got := b.TrafficByPurpose()[backend.PurposeFeatures]; got != 1050 {
		t.Errorf("features moved %d bytes, want 1050", got)
	}
}
