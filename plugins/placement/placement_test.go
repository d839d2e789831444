package placement

import (
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"strata/core/topology"
	"strings"
	"testing"

	"strata/core/registry"
)

// Link bandwidths of the presets (topology.NVLinkGBps = 25 GB/s per link):
//
//	dgx1-v100-8 (XGNN Fig. 7): quads {0,1,2,3} and {4,5,6,7}; the quad
//	links 0-3, 1-2, 4-7, 5-6 and the cross links 0-6, 1-7, 2-4, 3-5 are
//	doubled (50 GB/s), the other quad links single (25 GB/s). So G0's
//	neighbours are G1 (25), G2 (25), G3 (50) and G6 (50).
//	nvlink-clique-4: every pair linked at 50 GB/s.
//	nvlink-ring-4: 0-1, 1-2, 2-3, 3-0 at 50 GB/s.
//
// In a plan a_i = min over the sources j worker i reads from of
// bw_ij / (partitions read from j), and MinBandwidth = min_i a_i. A useful
// bound: a_i <= (sum of the bandwidths of the links used) / (remote reads),
// since min_j bw_j/c_j <= sum bw_j / sum c_j.

func preset(t testing.TB, name string) topology.Topology {
	t.Helper()
	topo, err := topology.Preset(name, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// The four topologies of XGNN Fig. 13, selected from the Fig. 7 DGX-1.
var fig13 = []struct {
	name    string
	devices []int
}{
	{"4G_f", []int{0, 1, 2, 3}},
	{"4G_c", []int{0, 1, 6, 7}},
	{"6G", []int{0, 1, 2, 3, 4, 5}},
	{"8G", nil},
}

// mustNew returns a fresh registered module with its defaults.
func mustNew[T any](id string) T {
	m, err := registry.New[T](id)
	if err != nil {
		panic(err)
	}
	return m
}

func newXGNN() *XGNN     { return mustNew[*XGNN]("placement.xgnn") }
func newClique() *Clique { return mustNew[*Clique]("placement.clique") }

func TestPlans(t *testing.T) {
	dgx := preset(t, "dgx1-v100-8")
	tests := []struct {
		name    string
		topo    topology.Topology
		devices []int
		solver  Solver
		stored  int // partitions stored on every GPU (all plans here are balanced)
		total   int // TotalReplicas
		minBW   float64
		used    int     // directed NVLinks some worker reads over
		cliques [][]int // placement.clique only
	}{
		// 4G_f = G0..G3, one fully connected quad: every GPU reaches every
		// other, so no replica is needed. Each worker reads one partition
		// from each neighbour; G0's single links (to G1, G2) give
		// a = 25/1 = 25. Clique finds the same plan (one clique).
		{"4G_f xgnn", dgx, fig13[0].devices, newXGNN(), 1, 0, 25, 12, nil},
		{"4G_f clique", dgx, fig13[0].devices, newClique(), 1, 0, 25, 12, [][]int{{0, 1, 2, 3}}},
		// 4G_c = G0, G1, G6, G7: the ring G0-G1 (25), G1-G7 (50),
		// G7-G6 (25), G6-G0 (50). Each GPU misses exactly the partition of
		// the opposite GPU, four different partitions, so four replicas,
		// one per GPU by the balance rule: 2 stored each. A worker reads 2
		// partitions over one 25 and one 50 GB/s link: (1,1) gives
		// min(25, 50) = 25, (0,2) gives 50/2 = 25, so 25 is the best.
		// Clique splits into the 50 GB/s pairs {G0,G6}, {G1,G7} (better
		// than {G0,G1}, {G6,G7} at 25): each worker reads 2 partitions from
		// its peer, 50/2 = 25 too, with the same storage. The difference
		// is utilisation: XGNN's workers read over all 8 directed links,
		// clique's over the 4 inside the pairs.
		{"4G_c xgnn", dgx, fig13[1].devices, newXGNN(), 2, 4, 25, 8, nil},
		{"4G_c clique", dgx, fig13[1].devices, newClique(), 2, 4, 25, 4, [][]int{{0, 6}, {1, 7}}},
		// 6G = G0..G5: G4 reaches only G2, G5; G5 only G3, G4. Missing:
		// P4 for G0, G1, G3; P5 for G0, G1, G2; P0, P1, P3 for G4;
		// P0, P1, P2 for G5. At least one replica of each of P0..P5, and 6
		// is enough: P0, P1 on G4/G5 (serving both), P3 on G2, P2 on G3,
		// P4, P5 on G0/G1 — 2 stored per GPU. That plan is forced, so G0
		// must read P1 and one of P4/P5 from G1 over a 25 GB/s link:
		// 25/2 = 12.5. Clique: no 3-cliques covering G4, so pairs; each GPU
		// stores 6/2 = 3 partitions (12 replicas, 50% more memory) and
		// reads 3 from its peer; G4-G5 is a 25 GB/s link in every split:
		// 25/3. XGNN reads over 16 of the 18 directed links (G2 and G3
		// store the same partitions, so G2-G3 carries nothing), clique
		// over 6 (each worker only from its peer).
		{"6G xgnn", dgx, fig13[2].devices, newXGNN(), 2, 6, 12.5, 16, nil},
		{"6G clique", dgx, fig13[2].devices, newClique(), 3, 12, 25.0 / 3, 6, [][]int{{0, 1}, {2, 3}, {4, 5}}},
		// 8G (Fig. 7): every GPU misses the three partitions of the other
		// quad it has no link to. XGNN stores one extra partition per GPU
		// (8 replicas, 2 each), and every worker reads its 6 remote
		// partitions over all four links, 1 over each single link and 2
		// over each double one: a = 25 on every worker, the bound
		// (25+25+50+50)/6 = 25. Clique: the two quads, 2 per GPU as well,
		// but a worker reads its 6 remote partitions from its 3 quad
		// peers, 2 from each, so G0's single links give 25/2 = 12.5 and
		// the cross links stay idle (24 of 32 directed links used).
		{"8G xgnn", dgx, fig13[3].devices, newXGNN(), 2, 8, 25, 32, nil},
		{"8G clique", dgx, fig13[3].devices, newClique(), 2, 8, 12.5, 24, [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}}},
		// nvlink-clique-4: no replicas, one read per 50 GB/s link.
		{"clique-4 xgnn", preset(t, "nvlink-clique-4"), nil, newXGNN(), 1, 0, 50, 12, nil},
		{"clique-4 clique", preset(t, "nvlink-clique-4"), nil, newClique(), 1, 0, 50, 12, [][]int{{0, 1, 2, 3}}},
		// nvlink-ring-4 (50 GB/s links): each GPU misses the opposite
		// partition; XGNN stores it next to it (2 each), and a worker
		// reads one partition over each of its two links: 50. Clique
		// pairs {0,1}, {2,3}: 2 reads over one link, 25.
		{"ring-4 xgnn", preset(t, "nvlink-ring-4"), nil, newXGNN(), 2, 4, 50, 8, nil},
		{"ring-4 clique", preset(t, "nvlink-ring-4"), nil, newClique(), 2, 4, 25, 4, [][]int{{0, 1}, {2, 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.solver.Place(context.Background(), tt.topo, tt.devices)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("\n%s", p)
			if err := CheckPlan(p, tt.topo); err != nil {
				t.Fatal(err)
			}
			n := len(p.Devices)
			if tt.devices != nil && !slices.Equal(p.Devices, tt.devices) {
				t.Errorf("Devices = %v, want %v", p.Devices, tt.devices)
			}
			for i, s := range p.Stores {
				if len(s) != tt.stored || p.Replicas[i] != tt.stored-1 {
					t.Errorf("G%d stores %v (%d replicas), want %d partitions", p.Devices[i], s, p.Replicas[i], tt.stored)
				}
				if !slices.Contains(s, i) {
					t.Errorf("G%d stores %v, not its own partition %d", p.Devices[i], s, i)
				}
			}
			if p.TotalReplicas != tt.total {
				t.Errorf("TotalReplicas = %d, want %d", p.TotalReplicas, tt.total)
			}
			if !near(p.MinBandwidth, tt.minBW) {
				t.Errorf("MinBandwidth = %v, want %v", p.MinBandwidth, tt.minBW)
			}
			if p.LinksUsed != tt.used {
				t.Errorf("LinksUsed = %d/%d, want %d", p.LinksUsed, p.Links, tt.used)
			}
			if !reflect.DeepEqual(p.Cliques, tt.cliques) {
				t.Errorf("Cliques = %v, want %v", p.Cliques, tt.cliques)
			}
			// Every worker reaches every partition over NVLink or locally.
			for i, r := range p.Reads {
				if len(r) != n || slices.Contains(r, Host) {
					t.Errorf("worker G%d reads %v: want all %d partitions from GPUs", p.Devices[i], r, n)
				}
			}
			// Deterministic.
			again, err := tt.solver.Place(context.Background(), tt.topo, tt.devices)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p, again) {
				t.Errorf("second plan differs:\n%s", again)
			}
		})
	}
}

// TestFig7 checks the properties the paper states for the 8-GPU plan:
// "GGMS stores one extra partition in each GPU and makes all NVLinks be
// used evenly". Every worker reads 2 partitions locally, and over each
// link a number of partitions proportional to its bandwidth: 1 over a
// single (25 GB/s) link, 2 over a double one.
func TestFig7(t *testing.T) {
	dgx := preset(t, "dgx1-v100-8")
	p, err := newXGNN().Place(context.Background(), dgx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for w, r := range p.Reads {
		cnt := map[int]int{}
		for _, src := range r {
			cnt[src]++
		}
		if cnt[w] != 2 {
			t.Errorf("worker G%d reads %d partitions locally, want 2", w, cnt[w])
		}
		nbrs := dgx.Neighbours(w)
		if len(cnt) != 1+len(nbrs) {
			t.Errorf("worker G%d reads from %v, want itself and all of %v", w, cnt, nbrs)
		}
		for _, j := range nbrs {
			if want := int(dgx.PeerGBps[w][j] / topology.NVLinkGBps); cnt[j] != want {
				t.Errorf("worker G%d reads %d partitions from G%d over %v GB/s, want %d", w, cnt[j], j, dgx.PeerGBps[w][j], want)
			}
		}
	}
	// Each partition ends up on exactly two GPUs.
	copies := make([]int, 8)
	for _, s := range p.Stores {
		for _, q := range s {
			copies[q]++
		}
	}
	if !slices.Equal(copies, []int{2, 2, 2, 2, 2, 2, 2, 2}) {
		t.Errorf("copies per partition = %v", copies)
	}
}

// TestUnbalanced covers selections that cannot be balanced and the host
// fallback.
func TestUnbalanced(t *testing.T) {
	dgx := preset(t, "dgx1-v100-8")
	t.Run("5 GPUs", func(t *testing.T) {
		// G0..G4 (§6.4: "not possible to distribute ... equally"): G4
		// reaches only G2, so it must hold or reach 4 more partitions
		// through G2 and itself; every worker still reaches everything.
		p, err := newXGNN().Place(context.Background(), dgx, []int{0, 1, 2, 3, 4})
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckPlan(p, dgx); err != nil {
			t.Fatal(err)
		}
		for i, r := range p.Reads {
			if slices.Contains(r, Host) {
				t.Errorf("worker G%d reads from the host: %v", i, r)
			}
		}
		if p.MaxStored() != 3 || p.TotalReplicas != 4 {
			t.Errorf("max stored %d, %d replicas, want 3 and 4:\n%s", p.MaxStored(), p.TotalReplicas, p)
		}
	})
	t.Run("max_stored 1", func(t *testing.T) {
		// No room for replicas: G0 reads P4, P5, P7 from the host, 3 over
		// 16 GB/s PCIe: a = 16/3.
		x := newXGNN()
		x.MaxStored = 1
		p, err := x.Place(context.Background(), dgx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckPlan(p, dgx); err != nil {
			t.Fatal(err)
		}
		if p.TotalReplicas != 0 || !near(p.MinBandwidth, topology.PCIeGBps/3) {
			t.Errorf("replicas %d, MinBandwidth %v, want 0 and 16/3", p.TotalReplicas, p.MinBandwidth)
		}
		var host []int
		for q, src := range p.Reads[0] {
			if src == Host {
				host = append(host, q)
			}
		}
		if !slices.Equal(host, []int{4, 5, 7}) {
			t.Errorf("G0 reads %v from the host, want [4 5 7]", host)
		}
	})
	t.Run("pcie-only", func(t *testing.T) {
		// No links: every GPU stores everything and reads it locally,
		// a = 900/3; clique degenerates to cliques of one, the same plan.
		topo, err := topology.Preset("pcie-only", 3, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []Solver{newXGNN(), newClique()} {
			p, err := s.Place(context.Background(), topo, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckPlan(p, topo); err != nil {
				t.Fatal(err)
			}
			if p.TotalReplicas != 6 || !near(p.MinBandwidth, DefaultLocalGBps/3) {
				t.Errorf("%s: %d replicas, MinBandwidth %v", p.Solver, p.TotalReplicas, p.MinBandwidth)
			}
		}
	})
	t.Run("one-way link", func(t *testing.T) {
		// Only the link G0 → G1 exists: worker 1 reads P0 from G0, but
		// worker 0 cannot read from G1, so G0 stores P1 too.
		topo := topology.Topology{Name: "oneway", Devices: 2, HostGBps: []float64{16, 16},
			PeerGBps: [][]float64{{0, 25}, {0, 0}}}
		p, err := newXGNN().Place(context.Background(), topo, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckPlan(p, topo); err != nil {
			t.Fatal(err)
		}
		want := [][]int{{0, 1}, {1}}
		if !reflect.DeepEqual(p.Stores, want) || !reflect.DeepEqual(p.Reads, [][]int{{0, 0}, {0, 1}}) {
			t.Errorf("plan:\n%s", p)
		}
		if p.Links != 1 || p.LinksUsed != 1 || !near(p.MinBandwidth, 25) {
			t.Errorf("links %d/%d, MinBandwidth %v", p.LinksUsed, p.Links, p.MinBandwidth)
		}
	})
	t.Run("max_steps 1", func(t *testing.T) {
		// A tiny budget still gives a complete plan (the greedy path),
		// deterministically.
		x := newXGNN()
		x.MaxSteps = 1
		p, err := x.Place(context.Background(), dgx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckPlan(p, dgx); err != nil {
			t.Fatal(err)
		}
		for i, r := range p.Reads {
			if slices.Contains(r, Host) {
				t.Errorf("worker G%d reads from the host: %v", i, r)
			}
		}
		again, _ := x.Place(context.Background(), dgx, nil)
		if !reflect.DeepEqual(p, again) {
			t.Error("not deterministic")
		}
	})
}

func TestBadInput(t *testing.T) {
	dgx := preset(t, "dgx1-v100-8")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		topo    topology.Topology
		devices []int
		substr  string
		sel     bool // wraps ErrBadSelection
	}{
		{"out of range", context.Background(), dgx, []int{0, 8}, "device 8 out of range", true},
		{"negative", context.Background(), dgx, []int{-1, 0}, "device -1 out of range", true},
		{"duplicate", context.Background(), dgx, []int{0, 1, 1}, "device 1 selected twice", true},
		{"empty", context.Background(), dgx, []int{}, "no devices selected", true},
		{"bad topology", context.Background(), topology.Topology{Name: "x"}, nil, "0 devices", false},
		{"cancelled", cancelled, dgx, nil, "context canceled", false},
	}
	for _, tt := range tests {
		for _, s := range []Solver{newXGNN(), newClique()} {
			t.Run(tt.name+"/"+reflect.TypeOf(s).Elem().Name(), func(t *testing.T) {
				p, err := s.Place(tt.ctx, tt.topo, tt.devices)
				if err == nil || !strings.Contains(err.Error(), tt.substr) {
					t.Fatalf("err = %v, want %q (plan %v)", err, tt.substr, p)
				}
				if errors.Is(err, ErrBadSelection) != tt.sel {
					t.Errorf("errors.Is(%v, ErrBadSelection) = %v", err, !tt.sel)
				}
			})
		}
	}
}

func TestOptions(t *testing.T) {
	for _, tt := range []struct {
		name   string
		mod    interface{ Validate() error }
		substr string
	}{
		{"xgnn defaults", newXGNN(), ""},
		{"clique defaults", newClique(), ""},
		{"xgnn local 0", &XGNN{}, "local_gbps"},
		{"xgnn local NaN", &XGNN{LocalGBps: math.NaN()}, "local_gbps"},
		{"xgnn local Inf", &XGNN{LocalGBps: math.Inf(1)}, "local_gbps"},
		{"xgnn max_stored", &XGNN{LocalGBps: 1, MaxStored: -1}, "max_stored"},
		{"xgnn max_steps", &XGNN{LocalGBps: 1, MaxSteps: -1}, "max_steps"},
		{"clique local", &Clique{LocalGBps: -1}, "local_gbps"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.mod.Validate()
			if tt.substr == "" && err != nil || tt.substr != "" && (err == nil || !strings.Contains(err.Error(), tt.substr)) {
				t.Fatalf("Validate() = %v, want %q", err, tt.substr)
			}
			if m, ok := tt.mod.(registry.Module); ok && tt.substr != "" {
				// Rejected before use; Place does not check them again.
				if _, err := registry.Ready(context.Background(), m); err == nil {
					t.Error("the lifecycle accepted bad options")
				}
			}
		})
	}
}

func TestRegistered(t *testing.T) {
	mods := registry.Namespace("placement")
	var ids []string
	for _, m := range mods {
		ids = append(ids, m.ID)
		if strings.Contains(m.Doc, "\n") || len(m.Doc) > 80 || m.Doc == "" {
			t.Errorf("%s: Doc %q is not one short line", m.ID, m.Doc)
		}
		if _, ok := m.New().(Solver); !ok {
			t.Errorf("%s does not implement Solver", m.ID)
		}
	}
	if !slices.Equal(ids, []string{"placement.clique", "placement.cliqueopt", "placement.xgnn"}) {
		t.Errorf("placement modules = %v", ids)
	}
	x := newXGNN()
	if x.LocalGBps != DefaultLocalGBps || x.MaxStored != 0 || x.MaxSteps != DefaultMaxSteps {
		t.Errorf("xgnn defaults = %+v", *x)
	}
}

func BenchmarkPlace(b *testing.B) {
	dgx := preset(b, "dgx1-v100-8")
	type topo struct {
		name    string
		topo    topology.Topology
		devices []int
	}
	var topos []topo
	for _, f := range fig13 {
		topos = append(topos, topo{f.name, dgx, f.devices})
	}
	topos = append(topos, topo{"clique-4", preset(b, "nvlink-clique-4"), nil}, topo{"ring-4", preset(b, "nvlink-ring-4"), nil})
	for _, s := range []Solver{newXGNN(), newClique()} {
		name := reflect.TypeOf(s).Elem().Name()
		for _, tp := range topos {
			b.Run(strings.ToLower(name)+"/"+tp.name, func(b *testing.B) {
				for b.Loop() {
					if _, err := s.Place(context.Background(), tp.topo, tp.devices); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
