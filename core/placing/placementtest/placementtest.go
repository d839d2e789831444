// Package placementtest is a conformance suite for placing.Solver. Test
// runs a solver made by a constructor on every topology preset
// (topology.PresetNames) and an asymmetric topology, with several device
// selections each, and checks every plan against the contract of
// core/placing, re-implemented here independently of the solvers' own
// plan checker:
//
//   - Devices is the selection (every GPU for nil); Stores, Reads,
//     Replicas and WorkerGBps have one entry per selected GPU;
//   - Stores[i] is ascending, without repeats, in [0, n), and holds the
//     partition i that GPU starts with; Replicas[i] = len(Stores[i]) - 1
//     and TotalReplicas is their sum;
//   - worker i reads every partition from itself (exactly the partitions
//     it stores), from a selected GPU that stores it and that it reaches
//     over a direct link (topo.PeerGBps[j][i] > 0), or from the host
//     (placing.Host), and from the host only when no GPU it reaches holds
//     the partition;
//   - WorkerGBps[i] is a_i recomputed from the reads and the link
//     bandwidths, MinBandwidth their minimum; Links counts the directed
//     NVLinks between selected GPUs and LinksUsed those some worker reads
//     over; Cliques, when set, split the selection;
//   - the plan is the same on every call and instance, and nil selects
//     the same plan as listing every GPU;
//   - an empty non-nil selection, an index out of range, a repeated index
//     and an invalid topology are errors, not panics.
package placementtest

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"

	"strata/core/placing"
	"strata/core/registry"
	"strata/core/topology"
)

// Test runs the suite on solvers made by newSolver, which must return a
// fresh, configured (validated and provisioned) instance on every call.
func Test(t *testing.T, newSolver func() placing.Solver) {
	t.Run("Plans", func(t *testing.T) { testPlans(t, newSolver) })
	t.Run("Errors", func(t *testing.T) { testErrors(t, newSolver) })
}

// place runs Place and turns a panic into an error that says so.
func place(s placing.Solver, ctx context.Context, topo topology.Topology, devices []int) (p *placing.Plan, err error, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			p, err, panicked = nil, fmt.Errorf("panic: %v", r), true
		}
	}()
	p, err = s.Place(ctx, topo, devices)
	return p, err, false
}

// Topologies returns the topologies of the suite: every preset (pcie-only
// with 1 and 3 devices) and "asym-4", four GPUs with one-way links.
func Topologies() ([]topology.Topology, error) {
	var out []topology.Topology
	for _, name := range topology.PresetNames() {
		counts := []int{0}
		if name == "pcie-only" {
			counts = []int{1, 3}
		}
		for _, n := range counts {
			topo, err := topology.Preset(name, n, 1<<30)
			if err != nil {
				return nil, err
			}
			if n > 0 {
				topo.Name = fmt.Sprintf("%s-%d", name, n)
			}
			out = append(out, topo)
		}
	}
	// One-way ring 0 → 1 → 2 → 3 → 0 plus a slower 0 → 2, and hosts of
	// different bandwidths.
	asym := topology.Topology{Name: "asym-4", Devices: 4, HostGBps: []float64{16, 12, 16, 8}, Compute: topology.V100}
	asym.PeerGBps = [][]float64{{0, 50, 25, 0}, {0, 0, 50, 0}, {0, 0, 0, 50}, {50, 0, 0, 0}}
	return append(out, asym), nil
}

// selections returns the device selections tried on n GPUs: nil, the
// first GPU, the last, every GPU ascending and descending, the even ones,
// the first half, XGNN's 4G_c on an 8-GPU machine, and a scrambled half.
func selections(n int) []struct {
	name    string
	devices []int
} {
	type sel = struct {
		name    string
		devices []int
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	desc := slices.Clone(all)
	slices.Reverse(desc)
	var even []int
	for i := 0; i < n; i += 2 {
		even = append(even, i)
	}
	out := []sel{{"nil", nil}, {"first", []int{0}}, {"last", []int{n - 1}}, {"all", all}, {"desc", desc}, {"even", even}}
	if n >= 4 {
		out = append(out, sel{"half", all[:n/2]}, sel{"scrambled", []int{n - 1, 1, n / 2}})
	}
	if n == 8 {
		out = append(out, sel{"4G_c", []int{0, 1, 6, 7}}, sel{"6G", []int{0, 1, 2, 3, 4, 5}})
	}
	return out
}

func testPlans(t *testing.T, newS func() placing.Solver) {
	topos, err := Topologies()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, topo := range topos {
		for _, sel := range selections(topo.Devices) {
			t.Run(topo.Name+"/"+sel.name, func(t *testing.T) {
				s := newS()
				p, err, _ := place(s, ctx, topo, sel.devices)
				if err != nil {
					t.Fatal(err)
				}
				if err := Check(p, topo, sel.devices); err != nil {
					t.Fatalf("%v\n%v", err, p)
				}
				if m, ok := s.(registry.Module); ok && p.Solver != m.StrataModule().ID {
					t.Errorf("Solver = %q, want the module's ID %q", p.Solver, m.StrataModule().ID)
				}
				again, err, _ := place(s, ctx, topo, slices.Clone(sel.devices))
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(p, again) {
					t.Fatalf("a second call gives another plan:\n%v\n%v", p, again)
				}
				fresh, err, _ := place(newS(), ctx, topo, sel.devices)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(p, fresh) {
					t.Fatalf("a fresh instance gives another plan:\n%v\n%v", p, fresh)
				}
				if sel.devices == nil {
					all := make([]int, topo.Devices)
					for i := range all {
						all[i] = i
					}
					explicit, err, _ := place(newS(), ctx, topo, all)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(p, explicit) {
						t.Fatalf("nil and every GPU listed give other plans:\n%v\n%v", p, explicit)
					}
				}
			})
		}
	}
}

func testErrors(t *testing.T, newS func() placing.Solver) {
	dgx, err := topology.Preset("dgx1-v100-8", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	bad := dgx
	bad.HostGBps = bad.HostGBps[:4]
	for _, tt := range []struct {
		name    string
		topo    topology.Topology
		devices []int
	}{
		{"empty", dgx, []int{}},
		{"out of range", dgx, []int{0, 8}},
		{"negative", dgx, []int{-1, 0}},
		{"repeated", dgx, []int{0, 1, 1}},
		{"no devices", topology.Topology{Name: "none"}, nil},
		{"invalid topology", bad, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err, panicked := place(newS(), context.Background(), tt.topo, tt.devices)
			if panicked {
				t.Fatalf("want an error, got %v", err)
			}
			if err == nil {
				t.Fatalf("no error; plan:\n%v", p)
			}
		})
	}
}

// near reports whether a and b agree to 1e-9 relative.
func near(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// Check reports the first way p is not a valid plan of the selection
// devices (nil: every GPU) of topo.
func Check(p *placing.Plan, topo topology.Topology, devices []int) error {
	if p == nil {
		return fmt.Errorf("nil plan")
	}
	if p.Solver == "" {
		return fmt.Errorf("the plan names no Solver")
	}
	want := devices
	if want == nil {
		for i := range topo.Devices {
			want = append(want, i)
		}
	}
	if !slices.Equal(p.Devices, want) {
		return fmt.Errorf("Devices = %v, want the selection %v", p.Devices, want)
	}
	n := len(want)
	if len(p.Stores) != n || len(p.Reads) != n || len(p.Replicas) != n || len(p.WorkerGBps) != n {
		return fmt.Errorf("%d devices, but %d Stores, %d Reads, %d Replicas, %d WorkerGBps", n, len(p.Stores), len(p.Reads), len(p.Replicas), len(p.WorkerGBps))
	}
	if !(p.LocalGBps > 0) || math.IsInf(p.LocalGBps, 0) {
		return fmt.Errorf("LocalGBps = %v", p.LocalGBps)
	}
	pos := map[int]int{}
	for i, d := range want {
		pos[d] = i
	}
	stores := make([]map[int]bool, n)
	total := 0
	for i, s := range p.Stores {
		stores[i] = map[int]bool{}
		for k, q := range s {
			if q < 0 || q >= n {
				return fmt.Errorf("G%d stores partition %d, outside [0,%d)", want[i], q, n)
			}
			if k > 0 && q <= s[k-1] {
				return fmt.Errorf("G%d stores %v: not strictly ascending", want[i], s)
			}
			stores[i][q] = true
		}
		if !stores[i][i] {
			return fmt.Errorf("G%d stores %v, without its own partition %d", want[i], s, i)
		}
		if p.Replicas[i] != len(s)-1 {
			return fmt.Errorf("G%d stores %d partitions, Replicas says %d", want[i], len(s), p.Replicas[i])
		}
		total += p.Replicas[i]
	}
	if total != p.TotalReplicas {
		return fmt.Errorf("TotalReplicas = %d, the Replicas add up to %d", p.TotalReplicas, total)
	}
	links, used := 0, 0
	minA := math.Inf(1)
	for i, di := range want {
		if len(p.Reads[i]) != n {
			return fmt.Errorf("worker G%d has %d reads, want %d", di, len(p.Reads[i]), n)
		}
		for _, dj := range want {
			if dj != di && topo.PeerGBps[dj][di] > 0 {
				links++
			}
		}
		count := map[int]int{} // reads per source GPU (topology index) or Host
		for q, src := range p.Reads[i] {
			count[src]++
			switch {
			case stores[i][q]:
				if src != di {
					return fmt.Errorf("worker G%d stores P%d but reads it from %d", di, q, src)
				}
			case src == di:
				return fmt.Errorf("worker G%d reads P%d from itself, but does not store it", di, q)
			case src == placing.Host:
				for j, dj := range want {
					if stores[j][q] && topo.PeerGBps[dj][di] > 0 {
						return fmt.Errorf("worker G%d reads P%d from the host, but its neighbour G%d stores it", di, q, dj)
					}
				}
			default:
				j, ok := pos[src]
				if !ok {
					return fmt.Errorf("worker G%d reads P%d from G%d, which is not selected", di, q, src)
				}
				if !(topo.PeerGBps[src][di] > 0) {
					return fmt.Errorf("worker G%d reads P%d from G%d, which has no link to it", di, q, src)
				}
				if !stores[j][q] {
					return fmt.Errorf("worker G%d reads P%d from G%d, which does not store it", di, q, src)
				}
			}
		}
		a := math.Inf(1)
		for src, c := range count {
			var bw float64
			switch src {
			case placing.Host:
				bw = topo.HostGBps[di]
			case di:
				bw = p.LocalGBps
			default:
				bw = topo.PeerGBps[src][di]
				used++
			}
			a = min(a, bw/float64(c))
		}
		if !near(a, p.WorkerGBps[i]) {
			return fmt.Errorf("worker G%d: WorkerGBps = %v, recomputed a_i = %v", di, p.WorkerGBps[i], a)
		}
		minA = min(minA, a)
	}
	if !near(minA, p.MinBandwidth) {
		return fmt.Errorf("MinBandwidth = %v, min of a_i = %v", p.MinBandwidth, minA)
	}
	if links != p.Links || used != p.LinksUsed {
		return fmt.Errorf("%d of %d NVLinks used, recomputed %d of %d", p.LinksUsed, p.Links, used, links)
	}
	if p.Cliques != nil {
		var members []int
		for _, c := range p.Cliques {
			members = append(members, c...)
		}
		slices.Sort(members)
		sorted := slices.Sorted(slices.Values(want))
		if !slices.Equal(members, sorted) {
			return fmt.Errorf("Cliques %v do not split the selection %v", p.Cliques, want)
		}
	}
	return nil
}
