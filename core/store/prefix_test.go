package store_test

import (
	"reflect"
	"testing"

	"strata/core/backend/sim"
	"strata/core/sampling"
	"strata/core/store"
	"strata/core/tensor"
	"strata/core/topology"
)

// TestPrefixStore relabels the nodes by a cache ranking (Reorder, the
// tiering paper's Alg. 2) and checks that a Prefix store over the
// relabelled data keeps no lookup map, serves the same rows and topology
// as a store over the original data (up to the relabelling), and moves
// the same bytes over every link.
func TestPrefixStore(t *testing.T) {
	d := dataset(t)
	n, dim := d.NumNodes, d.FeatDim
	rank := fullRank(t, "cache.rpagerank", d)
	g2, f2, newID, err := store.Reorder(d.Graph, d.Features, dim, rank)
	if err != nil {
		t.Fatal(err)
	}
	identity := make([]int32, n)
	for i := range identity {
		identity[i] = int32(i)
	}
	topo, _ := topology.Preset("nvlink-clique-4", 0, 0)
	devs := []tensor.Tier{sim.DeviceTier(0), sim.DeviceTier(1), sim.DeviceTier(2), sim.DeviceTier(3)}
	capBytes := int64(n/8)*int64(dim)*4 + 16000
	// Equal room on every device (interleaved with a map skips full
	// devices; the prefix store does not need to): the topology on the
	// devices only where every device holds the same.
	for _, c := range []struct {
		pl    store.Placement
		ratio float64
	}{{store.Interleaved, 0}, {store.Modulo, 0}, {store.Replicated, 0.25}} {
		pl := c.pl
		mk := func(g2ok bool) (*store.Store, *sim.Backend) {
			b, _ := sim.New(topo, 1)
			opts := store.Options{Placement: pl, Devices: devs, Capacity: []int64{capBytes}, Topology: true, GraphRatio: c.ratio}
			var s *store.Store
			var err error
			if g2ok {
				opts.Graph, opts.Prefix = g2, true
				s, err = store.New(b, f2, dim, identity, opts)
			} else {
				opts.Graph = d.Graph
				s, err = store.New(b, d.Features, dim, rank, opts)
			}
			if err != nil {
				t.Fatalf("%s: %v", pl, err)
			}
			b.ResetTraffic()
			return s, b
		}
		orig, bo := mk(false)
		pre, bp := mk(true)
		if pre.LookupMap() || !orig.LookupMap() {
			t.Errorf("%s: lookup maps %v (prefix) and %v (original)", pl, pre.LookupMap(), orig.LookupMap())
		}
		if !reflect.DeepEqual(pre.Cached(), orig.Cached()) {
			t.Errorf("%s: cached %v vs %v", pl, pre.Cached(), orig.Cached())
		}
		ids := make([]int32, 0, n)
		for v := 0; v < n; v += 3 {
			ids = append(ids, int32(v))
		}
		mapped := make([]int32, len(ids))
		for i, v := range ids {
			mapped[i] = newID[v]
		}
		for _, dst := range devs {
			a := gather(t, orig, bo, ids, dst)
			c := gather(t, pre, bp, mapped, dst)
			if !reflect.DeepEqual(a, c) {
				t.Fatalf("%s: rows to %s differ", pl, dst)
			}
			vo, _ := orig.Topology(dst)
			vp, _ := pre.Topology(dst)
			do, dp := make([]int64, len(ids)), make([]int64, len(ids))
			vo.NumNeighbors(ids, do)
			vp.NumNeighbors(mapped, dp)
			if !reflect.DeepEqual(do, dp) {
				t.Fatalf("%s: degrees differ", pl)
			}
			for i, v := range ids[:50] {
				no, np := make([]int32, do[i]), make([]int32, dp[i])
				vo.Neighbors(v, nil, no)
				vp.Neighbors(mapped[i], nil, np)
				for q := range no {
					if newID[no[q]] != np[q] {
						t.Fatalf("%s: node %d neighbour %d: %d vs relabelled %d", pl, v, q, no[q], np[q])
					}
				}
			}
			so, sp := vo.Take(), vp.Take()
			if so.LocalBytes+sum(so.Bytes) == 0 || len(so.Bytes) != len(sp.Bytes) {
				t.Errorf("%s: topology reads %+v vs %+v", pl, so, sp)
			}
		}
		if !reflect.DeepEqual(traffic(bo), traffic(bp)) {
			t.Errorf("%s: link bytes %v (original) vs %v (prefix)", pl, traffic(bo), traffic(bp))
		}
		orig.Close()
		pre.Close()
	}
	b, _ := sim.New(topo, 1)
	if _, err := store.New(b, d.Features, dim, rank, store.Options{Devices: devs, Capacity: []int64{capBytes}, Prefix: true}); err == nil {
		t.Error("a prefix store accepted a ranking that is not 0, 1, 2, ...")
	}
	var _ sampling.Graph = (*store.TopologyView)(nil)
}

func gather(t *testing.T, s *store.Store, b *sim.Backend, ids []int32, dst tensor.Tier) []float32 {
	t.Helper()
	v, _ := gatherHost(t, b, s, ids, dst)
	return v
}

func sum(m map[store.Link]int64) int64 {
	var t int64
	for _, v := range m {
		t += v
	}
	return t
}
