// Package placement holds placement solvers: modules of the "placement"
// registry namespace that decide which GPUs store which logical data
// partitions (graph topology or features) so that every worker can read
// every partition from its own memory, an NVLink neighbour or the host.
// This is the Placement Solver of XGNN (Tang et al., §4.2, Fig. 7 and 8).
//
// Registered modules:
//
//	placement.xgnn    XGNN's pruning search (balance, less replication,
//	                  bandwidth rules)
//	placement.clique  QUIVER's policy: equal fully connected cliques, the
//	                  whole data replicated on each clique
//	placement.cliqueopt  the clique policy with the hottest rows duplicated
//	                  on every GPU (XGNN's CliqueOpt baseline, cliqueopt.go)
//
// The model: the graph data kept on GPUs is cut into n logical partitions,
// one per selected GPU, and logical partition p starts on the p-th selected
// GPU. A solver adds replicas so that each worker (the Sampler and Trainer
// on one GPU) reaches every partition over a direct link, and then says
// where each worker reads each partition from. Solvers are deterministic:
// the same topology and selection give the same plan.
package placement

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strata/core/placing"
	"strata/core/topology"

	"strata/core/registry"
)

// The contract's types, under their old names.
type (
	// Solver is placing.Solver.
	Solver = placing.Solver
	// Plan is placing.Plan.
	Plan = placing.Plan
)

// Host is the source of a read served from host memory (placing.Host).
const Host = placing.Host

// DefaultLocalGBps is the local memory bandwidth used for a worker's own
// partitions in MinBandwidth when a solver's local_gbps is not set: the
// HBM2 bandwidth of the V100 of XGNN's testbed.
const DefaultLocalGBps = 900.0

// MaxDevices is the largest selection a solver accepts.
const MaxDevices = 64

// CheckPlan verifies the plan against the topology: every worker reads every
// partition from a GPU that stores it and is itself or a direct neighbour
// within the selection, or from the host; the counts and bandwidths match
// the stores and reads.
func CheckPlan(p *Plan, topo topology.Topology) error {
	v, err := newView(topo, p.Devices)
	if err != nil {
		return err
	}
	n := v.n
	if len(p.Stores) != n || len(p.Reads) != n || len(p.Replicas) != n || len(p.WorkerGBps) != n {
		return fmt.Errorf("plan: %d devices but %d stores, %d reads, %d replicas, %d rates", n, len(p.Stores), len(p.Reads), len(p.Replicas), len(p.WorkerGBps))
	}
	pos := map[int]int{}
	for i, d := range p.Devices {
		pos[d] = i
	}
	store := make([]uint64, n)
	total := 0
	for i, s := range p.Stores {
		for _, q := range s {
			if q < 0 || q >= n || store[i]&(1<<q) != 0 {
				return fmt.Errorf("plan: G%d stores bad or repeated partition %d", p.Devices[i], q)
			}
			store[i] |= 1 << q
		}
		if !slices.IsSorted(s) {
			return fmt.Errorf("plan: G%d stores %v, not ascending", p.Devices[i], s)
		}
		if p.Replicas[i] != len(s)-1 {
			return fmt.Errorf("plan: G%d stores %d partitions but has %d replicas", p.Devices[i], len(s), p.Replicas[i])
		}
		total += p.Replicas[i]
	}
	if total != p.TotalReplicas {
		return fmt.Errorf("plan: replicas add up to %d, TotalReplicas is %d", total, p.TotalReplicas)
	}
	src := make([][]int, n)
	for i, r := range p.Reads {
		if len(r) != n {
			return fmt.Errorf("plan: worker G%d has %d reads, want %d", p.Devices[i], len(r), n)
		}
		src[i] = make([]int, n)
		for q, d := range r {
			if d == Host {
				src[i][q] = Host
				continue
			}
			j, ok := pos[d]
			if !ok {
				return fmt.Errorf("plan: worker G%d reads P%d from G%d, not in the selection", p.Devices[i], q, d)
			}
			if j != i && v.nbr[i]&(1<<j) == 0 {
				return fmt.Errorf("plan: worker G%d reads P%d from G%d, which it has no link to", p.Devices[i], q, d)
			}
			if store[j]&(1<<q) == 0 {
				return fmt.Errorf("plan: worker G%d reads P%d from G%d, which does not store it", p.Devices[i], q, d)
			}
			src[i][q] = j
		}
		a := v.rate(i, src[i], p.LocalGBps)
		if !near(a, p.WorkerGBps[i]) {
			return fmt.Errorf("plan: worker G%d: a = %v, recomputed %v", p.Devices[i], p.WorkerGBps[i], a)
		}
	}
	links, used := v.links(src)
	if links != p.Links || used != p.LinksUsed {
		return fmt.Errorf("plan: %d/%d links used, recomputed %d/%d", p.LinksUsed, p.Links, used, links)
	}
	if m := slices.Min(p.WorkerGBps); !near(m, p.MinBandwidth) {
		return fmt.Errorf("plan: MinBandwidth = %v, min of the workers' is %v", p.MinBandwidth, m)
	}
	return nil
}

func near(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// view is a selection of a topology, indexed by position in the selection.
type view struct {
	n    int
	dev  []int
	all  uint64      // the n partitions (and the n GPUs) as a bit set
	nbr  []uint64    // nbr[i]: the GPUs i reads from over a direct link, not i
	rdr  []uint64    // rdr[j]: the GPUs that read from j over a direct link
	peer [][]float64 // peer[i][j]: GB/s of the link j → i that i reads j over
	host []float64   // PCIe GB/s of each selected GPU
}

// ErrBadSelection is wrapped by the errors about the devices argument.
var ErrBadSelection = errors.New("bad device selection")

func newView(topo topology.Topology, devices []int) (*view, error) {
	if err := topo.Validate(); err != nil {
		return nil, err
	}
	if devices == nil {
		devices = make([]int, topo.Devices)
		for i := range devices {
			devices[i] = i
		}
	}
	n := len(devices)
	switch {
	case n == 0:
		return nil, fmt.Errorf("%w: no devices selected", ErrBadSelection)
	case n > MaxDevices:
		return nil, fmt.Errorf("%w: %d devices selected, at most %d are supported", ErrBadSelection, n, MaxDevices)
	}
	seen := map[int]bool{}
	for _, d := range devices {
		if d < 0 || d >= topo.Devices {
			return nil, fmt.Errorf("%w: device %d out of range: topology %q has devices 0..%d", ErrBadSelection, d, topo.Name, topo.Devices-1)
		}
		if seen[d] {
			return nil, fmt.Errorf("%w: device %d selected twice", ErrBadSelection, d)
		}
		seen[d] = true
	}
	v := &view{n: n, dev: slices.Clone(devices), nbr: make([]uint64, n), rdr: make([]uint64, n), peer: make([][]float64, n), host: make([]float64, n)}
	if n == 64 {
		v.all = math.MaxUint64
	} else {
		v.all = 1<<n - 1
	}
	for i, di := range devices {
		v.host[i] = topo.HostGBps[di]
		v.peer[i] = make([]float64, n)
		for j, dj := range devices {
			if bw := topo.PeerGBps[dj][di]; i != j && bw > 0 {
				v.peer[i][j] = bw
				v.nbr[i] |= 1 << j
				v.rdr[j] |= 1 << i
			}
		}
	}
	return v, nil
}

// closed returns the GPUs i reads from: itself and its neighbours.
func (v *view) closed(i int) uint64 { return v.nbr[i] | 1<<i }

// reach returns the GPUs that can read what j stores: j and the GPUs that
// read from j.
func (v *view) reach(j int) uint64 { return v.rdr[j] | 1<<j }

// ones lists the set bits of m, ascending.
func ones(m uint64) []int {
	out := make([]int, 0, bits.OnesCount64(m))
	for m != 0 {
		b := bits.TrailingZeros64(m)
		out = append(out, b)
		m &^= 1 << b
	}
	return out
}

// rate returns a_i of worker i reading partition q from src[q] (a
// selection index or Host).
func (v *view) rate(i int, src []int, localGBps float64) float64 {
	cnt := make([]int, v.n+1) // cnt[j+1]: partitions read from j (Host = -1)
	for _, j := range src {
		cnt[j+1]++
	}
	a := math.Inf(1)
	for j1, c := range cnt {
		if c == 0 {
			continue
		}
		var bw float64
		switch j := j1 - 1; {
		case j == Host:
			bw = v.host[i]
		case j == i:
			bw = localGBps
		default:
			bw = v.peer[i][j]
		}
		a = min(a, bw/float64(c))
	}
	return a
}

// reads assigns worker i's reads given the stores: local partitions are
// read locally, a partition held by a source in eligible (a set of i's
// neighbours) is read over NVLink, any other from the host. Among the
// NVLink assignments it picks one that maximises a_i: the largest
// threshold T with a matching of the partitions to the sources in which
// source j serves at most floor(bw_j/T) of them, found by binary search
// over the candidate values bw_j/k. Ties are broken deterministically
// (partitions ascending; sources by (load+1)/bw, load, bandwidth, index),
// which spreads a worker's reads over all the links that can serve them.
func (v *view) reads(i int, store []uint64, eligible uint64, localGBps float64) ([]int, float64) {
	n := v.n
	src := make([]int, n)
	var remote []int
	var elig []uint64 // per remote partition: the eligible sources holding it
	sources := ones(eligible)
	for q := 0; q < n; q++ {
		bit := uint64(1) << q
		if store[i]&bit != 0 {
			src[q] = i
			continue
		}
		var holders uint64
		for _, j := range sources {
			if store[j]&bit != 0 {
				holders |= 1 << j
			}
		}
		if holders == 0 {
			src[q] = Host
			continue
		}
		remote = append(remote, q)
		elig = append(elig, holders)
	}
	if len(remote) > 0 {
		slices.SortStableFunc(sources, func(a, b int) int {
			switch {
			case v.peer[i][a] > v.peer[i][b]:
				return -1
			case v.peer[i][a] < v.peer[i][b]:
				return 1
			}
			return a - b
		})
		var cands []float64
		for _, j := range sources {
			for k := 1; k <= len(remote); k++ {
				cands = append(cands, v.peer[i][j]/float64(k))
			}
		}
		slices.Sort(cands)
		cands = slices.Compact(cands)
		slices.Reverse(cands) // descending: feasibility is false...false, true...true
		m := &matcher{v: v, i: i, sources: sources, elig: elig, capacity: make([]int, n), load: make([]int, n), match: make([]int, len(remote))}
		lo, hi := 0, len(cands)-1 // cands[hi] (each source may serve all) is feasible
		for lo < hi {
			mid := (lo + hi) / 2
			if m.feasible(cands[mid]) {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		if !m.feasible(cands[lo]) {
			panic("placement: no read assignment at the lowest threshold")
		}
		for k, q := range remote {
			src[q] = m.match[k]
		}
	}
	return src, v.rate(i, src, localGBps)
}

// matcher finds a capacitated bipartite matching of partitions to sources
// (Kuhn's augmenting paths).
type matcher struct {
	v        *view
	i        int
	sources  []int
	elig     []uint64
	capacity []int
	load     []int
	match    []int // per remote partition: its source
	seen     uint64
}

func (m *matcher) feasible(t float64) bool {
	for _, j := range m.sources {
		m.capacity[j] = int(math.Floor(m.v.peer[m.i][j]/t + 1e-9))
		m.load[j] = 0
	}
	for k := range m.match {
		m.match[k] = -1
	}
	for k := range m.match {
		m.seen = 0
		if !m.augment(k) {
			return false
		}
	}
	return true
}

func (m *matcher) augment(k int) bool {
	// Try the sources least loaded relative to their bandwidth first
	// ((load+1)/bw; then lower load, higher bandwidth, lower index), so
	// that ties spread the reads over more links.
	var order [MaxDevices]int
	cands := order[:0]
	for _, j := range m.sources {
		if m.elig[k]&(1<<j) != 0 && m.seen&(1<<j) == 0 && m.capacity[j] > 0 {
			cands = append(cands, j)
		}
	}
	peer := m.v.peer[m.i]
	slices.SortStableFunc(cands, func(a, b int) int {
		ra, rb := float64(m.load[a]+1)/peer[a], float64(m.load[b]+1)/peer[b]
		switch {
		case ra != rb:
			return cmp.Compare(ra, rb)
		case m.load[a] != m.load[b]:
			return m.load[a] - m.load[b]
		}
		return 0 // m.sources is by bandwidth, then index
	})
	for _, j := range cands {
		if m.seen&(1<<j) != 0 {
			continue
		}
		m.seen |= 1 << j
		if m.load[j] < m.capacity[j] {
			m.match[k] = j
			m.load[j]++
			return true
		}
		for k2 := range m.match {
			if m.match[k2] == j && m.augment(k2) {
				m.match[k] = j
				return true
			}
		}
	}
	return false
}

// buildPlan turns stores (selection bit sets) into a Plan, assigning each
// worker's reads among the GPUs in eligible[i].
func (v *view) buildPlan(solver string, store []uint64, eligible []uint64, localGBps float64) *Plan {
	n := v.n
	p := &Plan{Solver: solver, Devices: slices.Clone(v.dev), Stores: make([][]int, n), Reads: make([][]int, n),
		Replicas: make([]int, n), WorkerGBps: make([]float64, n), LocalGBps: localGBps}
	src := make([][]int, n)
	for i := range n {
		p.Stores[i] = ones(store[i])
		p.Replicas[i] = len(p.Stores[i]) - 1
		p.TotalReplicas += p.Replicas[i]
		s, a := v.reads(i, store, eligible[i], localGBps)
		src[i] = s
		p.Reads[i] = make([]int, n)
		for q, j := range s {
			p.Reads[i][q] = Host
			if j != Host {
				p.Reads[i][q] = v.dev[j]
			}
		}
		p.WorkerGBps[i] = a
	}
	p.MinBandwidth = slices.Min(p.WorkerGBps)
	p.Links, p.LinksUsed = v.links(src)
	return p
}

// links counts the directed NVLinks of the selection and those that some
// worker reads over; src[i][q] is a selection index or Host.
func (v *view) links(src [][]int) (links, used int) {
	for i := range v.n {
		links += bits.OnesCount64(v.nbr[i])
		var from uint64
		for _, j := range src[i] {
			if j != Host && j != i {
				from |= 1 << j
			}
		}
		used += bits.OnesCount64(from)
	}
	return links, used
}

// checkLocal validates a local_gbps option.
func checkLocal(gbps float64) error {
	if !(gbps > 0) || math.IsInf(gbps, 1) {
		return fmt.Errorf("local_gbps = %v: must be a positive finite bandwidth", gbps)
	}
	return nil
}

func init() {
	registry.Register(new(XGNN))
	registry.Register(new(Clique))
}
