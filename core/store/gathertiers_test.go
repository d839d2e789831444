package store_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"strata/core/backend"
	"strata/core/backend/sim"
	"strata/core/store"
	"strata/core/tensor"
	"strata/core/topology"
)

// calls counts the kernels and copies a store runs on a backend.
type calls struct {
	backend.Backend
	gather, scatter, fill, copies, tiers int
}

func (c *calls) Gather(x, idx, y *tensor.Tensor) error {
	c.gather++
	return c.Backend.Gather(x, idx, y)
}

func (c *calls) ScatterAdd(x, idx, y *tensor.Tensor) error {
	c.scatter++
	return c.Backend.ScatterAdd(x, idx, y)
}

func (c *calls) Fill(t *tensor.Tensor, v float64) error {
	c.fill++
	return c.Backend.Fill(t, v)
}

func (c *calls) Copy(dst, src *tensor.Tensor) error {
	c.copies++
	return c.Backend.Copy(dst, src)
}

// tiered adds the multi-tier gather of the wrapped backend to calls.
type tiered struct{ *calls }

func (t tiered) GathersFrom(src, dst tensor.Tier) bool {
	return t.Backend.(backend.TierGatherer).GathersFrom(src, dst)
}

func (t tiered) GatherTiers(srcs []*tensor.Tensor, idx, out *tensor.Tensor) error {
	t.tiers++
	return t.Backend.(backend.TierGatherer).GatherTiers(srcs, idx, out)
}

// TestGatherTiers checks the single-kernel multi-tier gather against the
// host gather and the per-tier gather (the backend without
// backend.TierGatherer) for random placements on 1-4 simulated devices,
// with and without zero-copy host reads: bitwise the rows, one
// GatherTiers kernel (plus, without zero-copy, one host gather and copy
// for the host's rows), and on every link exactly the bytes of the rows
// it serves (plus the index bytes the store reports).
func TestGatherTiers(t *testing.T) {
	d := dataset(t)
	n, dim := d.NumNodes, d.FeatDim
	rowBytes := int64(dim) * 4
	rng := rand.New(rand.NewPCG(3, 4))
	for D := 1; D <= 4; D++ {
		for _, zeroCopy := range []bool{false, true} {
			for _, pl := range []store.Placement{store.Interleaved, store.Replicated, store.ReplicatedInterleaved} {
				name := fmt.Sprintf("%d devices, zero-copy %v, %s", D, zeroCopy, pl)
				topo, err := topology.Preset("nvlink-clique-4", 0, 0)
				if D != 4 {
					topo, err = topology.Preset("pcie-only", D, 0)
				}
				if err != nil {
					t.Fatal(err)
				}
				topo.ZeroCopy = zeroCopy
				b, err := sim.New(topo, 2)
				if err != nil {
					t.Fatal(err)
				}
				devs := b.DeviceTiers()
				rank := make([]int32, n)
				for i, v := range rng.Perm(n) {
					rank[i] = int32(v)
				}
				capBytes := int64(1+rng.IntN(n/D)) * rowBytes
				c := &calls{Backend: b}
				one, err := store.New(tiered{c}, d.Features, dim, rank, store.Options{Placement: pl, Devices: devs, Capacity: []int64{capBytes}, Replicate: 0.5})
				if err != nil {
					t.Fatal(name, err)
				}
				ref, err := store.New(&calls{Backend: b}, d.Features, dim, rank, store.Options{Placement: pl, Devices: devs, Capacity: []int64{capBytes}, Replicate: 0.5})
				if err != nil {
					t.Fatal(name, err)
				}
				for _, dst := range append([]tensor.Tier{tensor.Host}, devs...) {
					ids := make([]int32, 1+rng.IntN(400))
					for i := range ids {
						ids[i] = int32(rng.IntN(n))
					}
					want := store.HostGather(d.Features, dim, ids)
					*c = calls{Backend: b}
					before := traffic(b)
					got, st := gatherHost(t, b, one, ids, dst)
					after := traffic(b)
					refGot, refSt := gatherHost(t, b, ref, ids, dst)
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(refGot[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s -> %s: element %d = %x (per-tier %x), want %x", name, dst, i, math.Float32bits(got[i]), math.Float32bits(refGot[i]), math.Float32bits(want[i]))
						}
					}
					if st.Local != refSt.Local || st.Peer != refSt.Peer || st.Host != refSt.Host {
						t.Fatalf("%s -> %s: local/peer/host %d/%d/%d, per-tier %d/%d/%d", name, dst, st.Local, st.Peer, st.Host, refSt.Local, refSt.Peer, refSt.Host)
					}
					checkCalls(t, name, dst, c, st, zeroCopy)
					checkLinks(t, name, topo, dst, st, rowBytes, before, after)
				}
				one.Close()
				ref.Close()
			}
		}
	}
}

// gatherHost gathers ids to dst and downloads the rows (uncounted).
func gatherHost(t *testing.T, b *sim.Backend, s *store.Store, ids []int32, dst tensor.Tier) ([]float32, store.GatherStats) {
	t.Helper()
	out, st, err := s.Gather(context.Background(), ids, dst)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release(out)
	v := make([]float32, out.Numel())
	if err := b.Peek(out, v); err != nil {
		t.Fatal(err)
	}
	return v, st
}

// checkCalls checks the kernels of one gather: with rows from more than
// one tier (or from the host read in place), one GatherTiers and no fill
// or scatter; a gather and a copy for each tier the kernel cannot read
// in place (the devices' rows for the host, the host's without
// zero-copy).
func checkCalls(t *testing.T, name string, dst tensor.Tier, c *calls, st store.GatherStats, zeroCopy bool) {
	t.Helper()
	staged := 0
	for tier := range st.Tier {
		if tier != dst && (dst == tensor.Host || tier == tensor.Host && !zeroCopy) {
			staged++
		}
	}
	wantTiers := 1
	if len(st.Tier) == 1 && (st.Local > 0 || staged == 1) {
		wantTiers = 0 // one group is one kernel already
	}
	if c.tiers != wantTiers || c.fill != 0 || c.scatter != 0 || c.copies != staged {
		t.Fatalf("%s -> %s (%v): %d GatherTiers, %d fills, %d scatters, %d copies; want %d, 0, 0, %d", name, dst, st.Tier, c.tiers, c.fill, c.scatter, c.copies, wantTiers, staged)
	}
}

// checkLinks checks that every link moved exactly the rows it served
// (routed through the host between devices without a peer link) plus the
// reported index bytes.
func checkLinks(t *testing.T, name string, topo topology.Topology, dst tensor.Tier, st store.GatherStats, rowBytes int64, before, after map[string]int64) {
	t.Helper()
	want := map[string]int64{}
	for tier, k := range st.Tier {
		if tier == dst {
			continue
		}
		bytes := int64(k) * rowBytes
		if got := st.FeatureBytes[store.Link{From: tier, To: dst}]; got != bytes {
			t.Fatalf("%s -> %s: %d feature bytes from %s, want %d rows × %d", name, dst, got, tier, k, rowBytes)
		}
		if tier != tensor.Host && dst != tensor.Host && topo.PeerGBps[devIndex(tier)][devIndex(dst)] == 0 {
			want[string(tier)+"->host"] += bytes
			want["host->"+string(dst)] += bytes
		} else {
			want[string(tier)+"->"+string(dst)] += bytes
		}
	}
	for l, v := range st.IndexBytes {
		want[l.String()] += v
	}
	for l := range after {
		if after[l]-before[l] != want[l] {
			t.Fatalf("%s -> %s: link %s moved %d bytes, want %d (all: %v)", name, dst, l, after[l]-before[l], want[l], want)
		}
	}
}
