package store_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"strata/core/backend/sim"
	"strata/core/graph"
	"strata/core/sampling"
	"strata/core/store"
	"strata/core/tensor"
	"strata/core/topology"
	"strata/plugins/placement"
	"strata/plugins/sampler"
)

// TestSamplersThroughStore checks that every sampler reading the graph
// through the store returns exactly the blocks it returns reading the host
// graph, for every placement, graph ratio and reader, with the same seed,
// and that the reads the view counts land on the simulated links.
func TestSamplersThroughStore(t *testing.T) {
	d := dataset(t)
	n, dim := d.NumNodes, d.FeatDim
	rank := fullRank(t, "cache.degree", d)
	samplers := []sampling.Sampler{
		&sampler.Full{Hops: 2},
		&sampler.Uniform{Fanouts: []int{3, 5}},
		&sampler.Uniform{Fanouts: []int{4, 2}, Replace: true},
		&sampler.KHop{Fanouts: []int{3, 5}},
		&sampler.RandomWalk{NumLayers: 2, Walks: 4, WalkLength: 3, TopK: 3, Weights: true},
	}
	seeds := []int32{0, 5, 17, 99, 256, 300, 511}
	want := make([][]sampling.Block, len(samplers))
	for i, sp := range samplers {
		b, err := sp.Sample(context.Background(), d.Graph, seeds, 42)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = b
	}
	topo, err := topology.Preset("dgx1-v100-8", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := (&placement.XGNN{LocalGBps: placement.DefaultLocalGBps, MaxSteps: placement.DefaultMaxSteps}).Place(context.Background(), topo, nil)
	if err != nil {
		t.Fatal(err)
	}
	devs := make([]tensor.Tier, topo.Devices)
	for i := range devs {
		devs[i] = sim.DeviceTier(i)
	}
	capBytes := 4*(int64(n)*int64(dim)+2*int64(n)+d.Graph.NNZ()) + 1024 // room for every row and the whole topology
	type ratio struct {
		r    float64
		auto bool
	}
	for _, pl := range store.Placements() {
		for _, ra := range []ratio{{0, false}, {0.3, false}, {1, false}, {0, true}} {
			b, err := sim.New(topo, 1)
			if err != nil {
				t.Fatal(err)
			}
			opts := store.Options{Placement: pl, Devices: devs, Capacity: []int64{capBytes}, Topology: true, Graph: d.Graph, GraphRatio: ra.r, GraphAuto: ra.auto}
			if pl == store.Planned {
				opts.Plan = plan.StorePlan()
			}
			s, err := store.New(b, d.Features, dim, rank, opts)
			if err != nil {
				t.Fatalf("%s ratio %v: %v", pl, ra, err)
			}
			k, _ := s.HotTopology()
			if wantK := map[bool]int{false: int(ra.r * float64(n)), true: n}[ra.auto]; k != wantK {
				t.Errorf("%s ratio %v: %d hot topology rows, want %d", pl, ra, k, wantK)
			}
			b.ResetTraffic()
			for _, reader := range []tensor.Tier{tensor.Host, devs[0], devs[5]} {
				v, err := s.Topology(reader)
				if err != nil {
					t.Fatal(err)
				}
				for i, sp := range samplers {
					gs, _ := sampling.AsGraphSampler(sp)
					got, err := gs.SampleGraph(context.Background(), v, seeds, 42)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got, want[i]) {
						t.Fatalf("%s ratio %v reader %s: %T through the store differs from the host graph", pl, ra, reader, sp)
					}
				}
				st := v.Take()
				if reader == tensor.Host && len(st.Bytes) != 0 {
					t.Errorf("the host read %v over links", st.Bytes)
				}
				if ra.r == 1 && pl == store.Replicated && len(st.Bytes) != 0 {
					t.Errorf("a replicated full topology read %v over links", st.Bytes)
				}
				if ra.r == 0 && !ra.auto && reader != tensor.Host && (st.LocalBytes != 0 || len(st.Bytes) != 1) {
					t.Errorf("%s: with graph ratio 0 every read should come from the host: %+v", pl, st)
				}
				before := traffic(b)
				if err := s.CountTopology(st); err != nil {
					t.Fatal(err)
				}
				// The simulated links: a device pair without a direct link
				// goes through the host.
				want := map[string]int64{}
				for l, n := range st.Bytes {
					if l.From == tensor.Host || topo.PeerGBps[devIndex(l.From)][devIndex(l.To)] > 0 {
						want[l.String()] += n
					} else {
						want[string(l.From)+"->host"] += n
						want["host->"+string(l.To)] += n
					}
				}
				after := traffic(b)
				for k, a := range after {
					if a-before[k] != want[k] {
						t.Errorf("%s ratio %v reader %s: link %s counted %d bytes, the view %d", pl, ra, reader, k, a-before[k], want[k])
					}
				}
			}
			s.Close()
		}
	}
}

// TestTopologyBytesByHand counts the sectors of a few reads on a small
// graph by hand: 6 nodes, the hottest 3 (nodes 0, 1, 2) on two devices
// modulo 2 (device0: nodes 0 and 2, device1: node 1), reader device0.
func TestTopologyBytesByHand(t *testing.T) {
	// Row lengths 3, 10, 1, 9, 0, 2.
	indptr := []int64{0, 3, 13, 14, 23, 23, 25}
	cols := make([]int64, 25)
	for e := range cols {
		cols[e] = int64(e*7) % 6
	}
	g := graph.NewCSR(6, indptr, cols)
	topo := topology.Topology{Name: "two", Devices: 2, HostGBps: []float64{16, 16}, PeerGBps: [][]float64{{0, 25}, {25, 0}}}
	b, err := sim.New(topo, 1)
	if err != nil {
		t.Fatal(err)
	}
	devs := []tensor.Tier{sim.DeviceTier(0), sim.DeviceTier(1)}
	s, err := store.New(b, make([]float32, 6), 1, []int32{0, 1, 2, 3, 4, 5}, store.Options{Devices: devs, Capacity: []int64{1 << 10}, Topology: true, Graph: g, GraphRatio: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v, err := s.Topology(devs[0])
	if err != nil {
		t.Fatal(err)
	}
	deg := make([]int64, 3)
	v.NumNeighbors([]int32{0, 1, 3}, deg) // node 0 local, 1 from device1, 3 from the host (bytes 24..39: 2 sectors)
	if !reflect.DeepEqual(deg, []int64{3, 10, 9}) {
		t.Fatalf("degrees %v", deg)
	}
	out := make([]int32, 9)
	v.Neighbors(3, nil, out) // host edges 14..22: bytes 56..91, 2 sectors
	check := func(node int32, pos []int64, got []int32) {
		t.Helper()
		for q, p := range pos {
			if want := int32(cols[indptr[node]+p]); got[q] != want {
				t.Fatalf("node %d position %d: %d, want %d", node, p, got[q], want)
			}
		}
	}
	check(3, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8}, out)
	v.Neighbors(1, []int64{0, 2, 9}, out[:3]) // one sector each from device1
	check(1, []int64{0, 2, 9}, out[:3])
	// Batched: node 1 positions 0, 1 share sector 0 of device1, 9 is in
	// sector 1; node 3 (host, start 14) positions 0 and 8 are bytes 56 and
	// 88: sectors 1 and 2.
	pos := []int64{0, 1, 9, 0, 8}
	v.NeighborsBatch([]int32{1, 3}, []int64{0, 3, 5}, pos, out[:5])
	check(1, pos[:3], out[:3])
	check(3, pos[3:], out[3:5])
	st := v.Take()
	want := map[store.Link]int64{
		{From: tensor.Host, To: devs[0]}: 32 * (2 + 2 + 2),
		{From: devs[1], To: devs[0]}:     32 * (1 + 3 + 2),
	}
	if !reflect.DeepEqual(st.Bytes, want) || st.LocalBytes != 32 {
		t.Errorf("reads %v, local %d; want %v, local 32", st.Bytes, st.LocalBytes, want)
	}
	b.ResetTraffic()
	if err := s.CountTopology(st); err != nil {
		t.Fatal(err)
	}
	if got := traffic(b); got["host->device0"] != 192 || got["device1->device0"] != 192 || len(got) != 2 {
		t.Errorf("sim links %v, want 192 bytes on host->device0 and device1->device0", got)
	}
	if got := b.TrafficByPurpose()["topology"]; got != 384 {
		t.Errorf("topology purpose %d bytes, want 384", got)
	}
	if k, bytes := s.HotTopology(); k != 3 || !reflect.DeepEqual(bytes, []int64{8*2 + 4*(3+1), 8 + 4*10}) {
		t.Errorf("hot topology %d rows, %v bytes", k, bytes)
	}
}

// TestTopologyErrors checks the store's refusals.
func TestTopologyErrors(t *testing.T) {
	d := dataset(t)
	topo, _ := topology.Preset("pcie-only", 2, 0)
	b, _ := sim.New(topo, 1)
	devs := []tensor.Tier{sim.DeviceTier(0), sim.DeviceTier(1)}
	rank := fullRank(t, "cache.degree", d)
	for _, tc := range []struct {
		opts store.Options
		want string
	}{
		{store.Options{Devices: devs, Capacity: []int64{1 << 20}, Topology: true, Graph: d.Graph, GraphRatio: 1.5}, "graph ratio 1.5: must be in [0, 1]"},
		{store.Options{Devices: devs, Capacity: []int64{1 << 20}, Topology: true, GraphRatio: 0.5}, "needs the graph"},
		{store.Options{Devices: devs, Capacity: []int64{100}, Topology: true, Graph: d.Graph, GraphRatio: 1}, "more than its 100-byte budget"},
		{store.Options{Placement: store.Planned, Devices: devs[:1], Capacity: []int64{1 << 20}, Plan: &store.Plan{Stores: [][]int{{0}, {1}}, Reads: [][]int{{0, 1}, {0, 1}}}}, "a plan for 2 and 2 devices, but the store has 1"},
		{store.Options{Placement: store.Planned, Devices: devs, Capacity: []int64{1 << 20}, Plan: &store.Plan{Stores: [][]int{{0}, {1}}, Reads: [][]int{{0, 1}, {0, 1}}, Replicate: 2}}, "replicated share 2"},
		{store.Options{Placement: store.ReplicatedInterleaved, Devices: devs, Capacity: []int64{1 << 20}, Replicate: -1}, "replicated share -1"},
		{store.Options{Devices: devs, Capacity: []int64{1 << 20}, LimitFeatures: true, FeatureRatio: 3}, "feature ratio 3"},
	} {
		_, err := store.New(b, d.Features, d.FeatDim, rank, tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
	s, err := store.New(b, d.Features, d.FeatDim, rank, store.Options{Devices: devs, Capacity: []int64{1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Topology(devs[0]); err == nil {
		t.Error("a store without topology served a view")
	}
}

// devIndex is the index of a sim device tier.
func devIndex(t tensor.Tier) int {
	var i int
	fmt.Sscanf(string(t), "device%d", &i)
	return i
}

// TestGraphAuto checks "auto" (XGNN §6.8): topology first when all the
// ranked rows' topology fits the devices, else the features first and the
// topology the hottest rows that fit what is left.
func TestGraphAuto(t *testing.T) {
	d := dataset(t)
	topo, _ := topology.Preset("pcie-only", 2, 0)
	devs := []tensor.Tier{sim.DeviceTier(0), sim.DeviceTier(1)}
	rank := fullRank(t, "cache.degree", d)[:100]
	rowBytes := int64(d.FeatDim) * 4
	deg := func(v int32) int64 { return d.Graph.Indptr[v+1] - d.Graph.Indptr[v] }
	var all [2]int64
	for r, v := range rank {
		all[r%2] += 8 + 4*deg(v)
	}
	for _, c := range []struct {
		name     string
		capBytes int64
		featRows int // rows cached per device
	}{
		{"topology fits", max(all[0], all[1]) + 10*rowBytes, 10},
		{"features first", 50*rowBytes + 600, 50},
	} {
		b, _ := sim.New(topo, 1)
		s, err := store.New(b, d.Features, d.FeatDim, rank, store.Options{Devices: devs, Capacity: []int64{c.capBytes}, Topology: true, Graph: d.Graph, GraphAuto: true})
		if err != nil {
			t.Fatal(err)
		}
		// The independent count: features first leaves capBytes - 50 rows;
		// the hottest rows' topology goes r mod 2 until one does not fit.
		wantK := len(rank)
		if c.name == "features first" {
			var used [2]int64
			for r, v := range rank {
				if used[r%2]+8+4*deg(v) > 600 {
					wantK = r
					break
				}
				used[r%2] += 8 + 4*deg(v)
			}
		}
		if k, _ := s.HotTopology(); k != wantK {
			t.Errorf("%s: %d hot topology rows, want %d", c.name, k, wantK)
		}
		want := []int{c.featRows, c.featRows}
		if c.name == "topology fits" { // what the topology leaves, per device
			want = []int{int((c.capBytes - all[0]) / rowBytes), int((c.capBytes - all[1]) / rowBytes)}
		}
		if got := s.Cached(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: cached feature rows %v, want %v", c.name, got, want)
		}
		s.Close()
	}
}

// TestTopologyPlacementApart places the topology apart from the features
// (Options.TopologyPlacement) on the graph of TestTopologyBytesByHand (row
// bytes 20, 48, 12, 44, 8, 16: 148 in all), 4-float feature rows (16
// bytes) and 200 bytes a device, hand-counted: DGL+C replicates both
// (148 topology bytes on each device, room for 3 feature rows); XGNN's
// graph store partitions the topology modulo 2 (nodes 0, 2, 4 = 40 bytes
// on device0; 1, 3, 5 = 108 on device1) and the replicated feature cache
// takes the freed memory: min(160, 92) / 16 = 5 rows on each. Sampling
// through the store still gives the host graph's blocks.
func TestTopologyPlacementApart(t *testing.T) {
	g := handGraph()
	topo := topology.Topology{Name: "two", Devices: 2, HostGBps: []float64{16, 16}, PeerGBps: [][]float64{{0, 25}, {25, 0}}}
	devs := []tensor.Tier{sim.DeviceTier(0), sim.DeviceTier(1)}
	rank := []int32{0, 1, 2, 3, 4, 5}
	want, err := (&sampler.Uniform{Fanouts: []int{2, 3}}).Sample(context.Background(), g, []int32{0, 3, 5}, 7)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name         string
		topo         store.Placement
		topoB, featB []int64
	}{
		{"DGL+C: both replicated", "", []int64{148, 148}, []int64{48, 48}},
		{"+MSG: topology modulo 2", store.Interleaved, []int64{40, 108}, []int64{80, 80}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := sim.New(topo, 1)
			if err != nil {
				t.Fatal(err)
			}
			s, err := store.New(b, make([]float32, 6*4), 4, rank, store.Options{Placement: store.Replicated, TopologyPlacement: c.topo,
				Devices: devs, Capacity: []int64{200}, Topology: true, Graph: g, GraphRatio: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			topoB, featB := s.DeviceBytes()
			if !reflect.DeepEqual(topoB, c.topoB) || !reflect.DeepEqual(featB, c.featB) {
				t.Errorf("topology bytes %v, feature bytes %v; want %v, %v", topoB, featB, c.topoB, c.featB)
			}
			v, err := s.Topology(devs[0])
			if err != nil {
				t.Fatal(err)
			}
			gs, _ := sampling.AsGraphSampler(&sampler.Uniform{Fanouts: []int{2, 3}})
			got, err := gs.SampleGraph(context.Background(), v, []int32{0, 3, 5}, 7)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("sampling through the store: %v, blocks differ from the host graph's: %v", err, !reflect.DeepEqual(got, want))
			}
		})
	}
	if _, err := store.New(nil, make([]float32, 6), 1, rank, store.Options{TopologyPlacement: store.Planned, Devices: devs, Capacity: []int64{200}, Topology: true, Graph: g}); err == nil || !strings.Contains(err.Error(), "topology placement") {
		t.Errorf("a planned topology placement: %v", err)
	}
}

// TestGraphFit keeps the hottest topology rows that fit (XGNN-G, §6.8)
// on the graph of TestTopologyBytesByHand with one 100-byte device: rows
// of 20, 48, 12 bytes fit (80), the next (44) does not; the 20 bytes left
// hold one 16-byte feature row. Without GraphFit the ratio is refused.
func TestGraphFit(t *testing.T) {
	g := handGraph()
	topo := topology.Topology{Name: "one", Devices: 1, HostGBps: []float64{16}, PeerGBps: [][]float64{{0}}}
	devs := []tensor.Tier{sim.DeviceTier(0)}
	for _, fit := range []bool{true, false} {
		b, err := sim.New(topo, 1)
		if err != nil {
			t.Fatal(err)
		}
		s, err := store.New(b, make([]float32, 6*4), 4, []int32{0, 1, 2, 3, 4, 5},
			store.Options{Devices: devs, Capacity: []int64{100}, Topology: true, Graph: g, GraphRatio: 1, GraphFit: fit})
		if !fit {
			if err == nil || !errors.Is(err, store.ErrTopologyBudget) {
				t.Errorf("without GraphFit: %v, want the topology budget error", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		k, _ := s.HotTopology()
		topoB, featB := s.DeviceBytes()
		if k != 3 || topoB[0] != 80 || featB[0] != 16 {
			t.Errorf("GraphFit: %d topology rows, %v topology and %v feature bytes; want 3, [80], [16]", k, topoB, featB)
		}
		s.Close()
	}
}

// handGraph is TestTopologyBytesByHand's graph: 6 nodes with rows of 3,
// 10, 1, 9, 0 and 2 entries (row bytes 20, 48, 12, 44, 8, 16).
func handGraph() *graph.CSR {
	indptr := []int64{0, 3, 13, 14, 23, 23, 25}
	cols := make([]int64, 25)
	for e := range cols {
		cols[e] = int64(e*7) % 6
	}
	return graph.NewCSR(6, indptr, cols)
}
