package store_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strata/core/topology"
	"strings"
	"testing"

	"strata/core/backend/sim"
	"strata/core/graph"
	"strata/core/graph/synth"
	"strata/core/registry"
	"strata/core/store"
	"strata/core/tensor"
	"strata/plugins/cache"
)

func dataset(t *testing.T) *graph.Dataset {
	t.Helper()
	d, err := synth.RMAT(synth.RMATOptions{Scale: 9, EdgeFactor: 8, FeatDim: 7, NumClasses: 3, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	// Special values: signed zeros, infinities, a NaN, subnormals.
	special := []float32{float32(math.Copysign(0, -1)), 0, float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(0x7fc00123), math.Float32frombits(1), -math.Float32frombits(3)}
	for i, v := range special {
		d.Features[i*13] = v
	}
	return d
}

func fullRank(t *testing.T, id string, d *graph.Dataset) []int32 {
	t.Helper()
	p, err := registry.New[cache.Policy](id)
	if err != nil {
		t.Fatal(err)
	}
	// capacity 1: the full ranking; the store cuts it to its budget
	switch q := p.(type) {
	case *cache.Degree:
		q.Capacity.Capacity = 1
	case *cache.Random:
		q.Capacity.Capacity = 1
	case *cache.RPageRank:
		q.Capacity.Capacity = 1
	case *cache.WeightedRPageRank:
		q.Capacity.Capacity = 1
	case *cache.Presample:
		q.Capacity.Capacity, q.Fanouts, q.BatchSize = 1, []int{4, 3}, 16
	}
	r, err := p.Rank(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// expect is the independent model of a placement: the device index that
// caches each node (-1 none, -2 all) for equal per-device budgets.
func expect(p store.Placement, rank []int32, n, D int, rowsPerDev int, topo []int64, rowBytes int64, capBytes int64) []int {
	where := make([]int, n)
	for i := range where {
		where[i] = -1
	}
	switch p {
	case store.Replicated:
		for _, v := range rank[:min(len(rank), rowsPerDev)] {
			where[v] = -2
		}
	case store.Interleaved:
		for r, v := range rank[:min(len(rank), D*rowsPerDev)] {
			where[v] = r % D
		}
	case store.ReplicatedInterleaved: // half of the budget replicated
		k := min(len(rank), int(int64(float64(capBytes)*0.5)/rowBytes))
		for _, v := range rank[:k] {
			where[v] = -2
		}
		rest := rank[k:]
		for r, v := range rest[:min(len(rest), D*(int(capBytes/rowBytes)-k))] {
			where[v] = r % D
		}
	case store.Modulo:
		room := make([]int, D)
		for d := range room {
			room[d] = int((capBytes - topo[d]) / rowBytes)
		}
		d := 0
		for _, v := range rank {
			tries := 0
			for room[d] == 0 && tries < D {
				d, tries = (d+1)%D, tries+1
			}
			if room[d] == 0 {
				break
			}
			where[v] = d
			room[d]--
			d = (d + 1) % D
		}
	}
	return where
}

func traffic(b *sim.Backend) map[string]int64 {
	m := map[string]int64{}
	for _, l := range b.Traffic() {
		m[l.Link] = l.Bytes
	}
	return m
}

// TestGatherExact checks, for every static policy, placement and
// topology, that Gather returns bitwise the rows of a host gather, that
// the hits per tier and the bytes match an independent count, and that the
// simulated backend's per-link traffic moved by exactly those bytes.
func TestGatherExact(t *testing.T) {
	d := dataset(t)
	n, dim := d.NumNodes, d.FeatDim
	rowBytes := int64(dim) * 4
	rng := rand.New(rand.NewPCG(1, 1))
	policies := []string{"cache.none", "cache.degree", "cache.random", "cache.rpagerank", "cache.weighted-rpagerank", "cache.presample"}
	topos := []struct {
		name string
		devs int
	}{{"pcie-only", 1}, {"pcie-only", 3}, {"nvlink-ring-4", 0}, {"dgx1-v100-8", 0}}
	for _, pid := range policies {
		rank := fullRank(t, pid, d)
		for _, tp := range topos {
			topo, err := topology.Preset(tp.name, tp.devs, 0)
			if err != nil {
				t.Fatal(err)
			}
			D := topo.Devices
			devs := make([]tensor.Tier, D)
			for i := range devs {
				devs[i] = sim.DeviceTier(i)
			}
			for _, pl := range store.Placements() {
				rowsPerDev := n / (4 * D) // a quarter of the graph over all devices
				capBytes := int64(rowsPerDev)*rowBytes + 5
				ratio := 0.0
				if pl == store.Modulo {
					ratio = 0.01
					capBytes *= 4 // room for the hottest topology too
				}
				b, err := sim.New(topo, 2)
				if err != nil {
					t.Fatal(err)
				}
				if pl == store.Planned {
					continue // TestPlannedGather
				}
				s, err := store.New(b, d.Features, dim, rank, store.Options{Placement: pl, Devices: devs,
					Capacity: []int64{capBytes}, Graph: d.Graph, GraphRatio: ratio, Replicate: 0.5})
				if err != nil {
					t.Fatalf("%s %s %s: %v", pid, tp.name, pl, err)
				}
				// independent topology bytes for Modulo
				topoBytes := make([]int64, D)
				if pl == store.Modulo {
					for i, v := range rank[:min(len(rank), int(ratio*float64(n)))] {
						topoBytes[i%D] += 8 + 4*(d.Graph.Indptr[v+1]-d.Graph.Indptr[v])
					}
				}
				where := expect(pl, rank, n, D, rowsPerDev, topoBytes, rowBytes, capBytes)
				cached := make([]int, D)
				for _, w := range where {
					if w >= 0 {
						cached[w]++
					} else if w == -2 {
						for i := range cached {
							cached[i]++
						}
					}
				}
				for i, c := range s.Cached() {
					if c != cached[i] {
						t.Fatalf("%s %s %s: device %d caches %d rows, want %d", pid, tp.name, pl, i, c, cached[i])
					}
				}
				for _, dst := range append([]tensor.Tier{tensor.Host}, devs...) {
					ids := make([]int32, 1+rng.IntN(300))
					for i := range ids {
						ids[i] = int32(rng.IntN(n))
					}
					if dst == tensor.Host || dst == sim.DeviceTier(D-1) { // every row once
						ids = ids[:0]
						for _, v := range rng.Perm(n) {
							ids = append(ids, int32(v))
						}
					}
					before := traffic(b)
					got, st, err := s.Gather(context.Background(), ids, dst)
					if err != nil {
						t.Fatalf("%s %s %s -> %s: %v", pid, tp.name, pl, dst, err)
					}
					if got.Tier() != dst {
						t.Fatalf("output on %s, want %s", got.Tier(), dst)
					}
					after := traffic(b) // before the Download, which counts too
					out := make([]float32, len(ids)*dim)
					if err := b.Download(got, out); err != nil {
						t.Fatal(err)
					}
					b.Release(got)
					want := store.HostGather(d.Features, dim, ids)
					for i := range want {
						if math.Float32bits(out[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s %s %s -> %s: element %d = %x, want %x", pid, tp.name, pl, dst, i,
								math.Float32bits(out[i]), math.Float32bits(want[i]))
						}
					}
					// Independent count of sources, bytes and routed traffic.
					dstDev := -1
					if dst != tensor.Host {
						dstDev = int(strings.TrimPrefix(string(dst), "device")[0] - '0')
					}
					var local, peer, host int
					feat := map[store.Link]int64{}
					srcRows := map[int]int{} // -1 host, else device
					for _, v := range ids {
						src := -1
						switch w := where[v]; {
						case w == -2 && dstDev >= 0:
							src = dstDev
						case w == -2:
							src = 0
						default:
							src = w
						}
						srcRows[src]++
						switch {
						case src == dstDev:
							local++
						case src == -1:
							host++
						default:
							peer++
						}
					}
					route := map[string]int64{}
					tierOf := func(i int) tensor.Tier {
						if i < 0 {
							return tensor.Host
						}
						return sim.DeviceTier(i)
					}
					for src, k := range srcRows {
						if src == dstDev {
							continue
						}
						bytes := int64(k) * rowBytes
						feat[store.Link{From: tierOf(src), To: dst}] += bytes
						if src >= 0 && dstDev >= 0 && topo.PeerGBps[src][dstDev] == 0 {
							route[string(tierOf(src))+"->host"] += bytes
							route["host->"+string(dst)] += bytes
						} else {
							route[string(tierOf(src))+"->"+string(dst)] += bytes
						}
					}
					if st.Local != local || st.Peer != peer || st.Host != host || st.Rows != len(ids) {
						t.Fatalf("%s %s %s -> %s: local/peer/host %d/%d/%d, want %d/%d/%d", pid, tp.name, pl, dst,
							st.Local, st.Peer, st.Host, local, peer, host)
					}
					if len(st.FeatureBytes) != len(feat) {
						t.Fatalf("feature bytes %v, want %v", st.FeatureBytes, feat)
					}
					for l, v := range feat {
						if st.FeatureBytes[l] != v {
							t.Fatalf("%s %s %s -> %s: feature bytes %v, want %v", pid, tp.name, pl, dst, st.FeatureBytes, feat)
						}
					}
					for l, v := range st.IndexBytes {
						route[l.String()] += v
					}
					delta := map[string]int64{}
					for l, v := range after {
						if x := v - before[l]; x != 0 {
							delta[l] = x
						}
					}
					if len(delta) != len(route) {
						t.Fatalf("%s %s %s -> %s: traffic delta %v, want %v", pid, tp.name, pl, dst, delta, route)
					}
					for l, v := range route {
						if delta[l] != v {
							t.Fatalf("%s %s %s -> %s: traffic delta %v, want %v", pid, tp.name, pl, dst, delta, route)
						}
					}
				}
				s.Close()
			}
		}
	}
}

func TestStoreErrors(t *testing.T) {
	topo, _ := topology.Preset("pcie-only", 1, 1<<10)
	b, _ := sim.New(topo, 1)
	feat := make([]float32, 100*8)
	devs := []tensor.Tier{sim.DeviceTier(0)}
	rank := []int32{3, 1, 2}
	for _, tc := range []struct {
		name string
		opts store.Options
		rank []int32
		want string
	}{
		{"bad placement", store.Options{Placement: "striped", Devices: devs, Capacity: []int64{64}}, rank, "unknown placement"},
		{"capacity count", store.Options{Devices: devs, Capacity: []int64{64, 64}}, rank, "2 capacities for 1 devices"},
		{"duplicate rank", store.Options{Devices: devs, Capacity: []int64{64}}, []int32{1, 1}, "ranked twice"},
		{"rank range", store.Options{Devices: devs, Capacity: []int64{64}}, []int32{100}, "outside"},
		{"device OOM", store.Options{Devices: devs, Capacity: []int64{1 << 20}}, make([]int32, 0), ""},
		{"over device memory", store.Options{Devices: devs, Capacity: []int64{1 << 20}}, seq(100), "out of memory"},
		{"modulo without graph", store.Options{Placement: store.Modulo, Devices: devs, Capacity: []int64{64}, GraphRatio: 0.5}, rank, "needs the graph"},
	} {
		_, err := store.New(b, feat, 8, tc.rank, tc.opts)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	s, err := store.New(b, feat, 8, rank, store.Options{Devices: devs, Capacity: []int64{64}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Gather(context.Background(), []int32{1}, "device7"); err == nil {
		t.Error("gather to an unknown tier accepted")
	}
	if _, _, err := s.Gather(context.Background(), []int32{100}, tensor.Host); err == nil {
		t.Error("out-of-range id accepted")
	}
}

func seq(n int) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = int32(i)
	}
	return s
}

func BenchmarkGather(b *testing.B) {
	d, err := synth.RMAT(synth.RMATOptions{Scale: 16, EdgeFactor: 8, FeatDim: 128, NumClasses: 2, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	topo, _ := topology.Preset("nvlink-clique-4", 0, 0)
	be, _ := sim.New(topo, 0)
	devs := []tensor.Tier{sim.DeviceTier(0), sim.DeviceTier(1), sim.DeviceTier(2), sim.DeviceTier(3)}
	rank := seq(d.NumNodes)
	s, err := store.New(be, d.Features, d.FeatDim, rank, store.Options{Devices: devs, Capacity: []int64{int64(d.NumNodes/16) * 128 * 4}})
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]int32, 20000)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range ids {
		ids[i] = int32(r.IntN(d.NumNodes))
	}
	b.SetBytes(int64(len(ids)) * 128 * 4)
	b.ResetTimer()
	for range b.N {
		out, _, err := s.Gather(context.Background(), ids, devs[0])
		if err != nil {
			b.Fatal(err)
		}
		be.Release(out)
	}
}
