// Package store is strata's memory store (XGNN's GGMS): one logical
// float32 feature matrix and, optionally, the graph topology, whose
// hottest rows live in device tiers and the rest in host memory. Features
// are read in mini-batch gathers through a backend.Backend (Gather, or
// Features), so that a simulated backend (core/backend/sim) counts every
// byte per link; the topology is read through Topology(reader), the
// sampling.Graph access API (NumNeighbors, Neighbors, NeighborsBatch) that
// every sampler uses, each read served by the tier holding the row and
// counted in 32-byte sectors (see docs/store.md).
//
// Rows are ranked by a cache policy (plugins/cache: the ranking lists node
// ids hottest first). New places the ranking's prefix on the devices, up to
// each device's feature budget, with one of three placements:
//
//   - Interleaved (data tiering §4.2): the r-th hottest row goes to device
//     r mod D (round-robin over the devices that still have room), so D
//     devices cache D times as many distinct rows and read each other's
//     over the peer links.
//   - Replicated: every device holds the same hottest rows (as many as the
//     smallest budget allows); reads are local or from the host.
//   - Modulo (XGNN §4.3): Interleaved with the topology: the hottest
//     GraphRatio of the nodes' topology (row pointer and in-neighbour ids)
//     is first placed modulo D in the same order, and only "the rest of
//     the GPU memory" goes to features. Any placement holds the topology
//     with Options.Topology, placed like its feature rows.
//
// Gather returns bitwise the rows of a plain host gather, on any tier, and
// reports where each row came from and the bytes it moved per link.
package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"strata/core/backend"
	"strata/core/graph"
	"strata/core/tensor"
)

// Placement says how the hot rows are spread over the devices.
type Placement string

// Placements.
const (
	Interleaved Placement = "interleaved"
	Replicated  Placement = "replicated"
	Modulo      Placement = "modulo"
	// Planned follows a placement plan (XGNN's solver): the hot rows form
	// one logical partition per device (hot row r in partition r mod D),
	// each device stores the partitions the plan gives it, and each device
	// reads a partition from where the plan says.
	Planned Placement = "planned"
	// ReplicatedInterleaved (data tiering §4.2's combination): the
	// hottest rows that fill Options.Replicate of the smallest device
	// budget are on every device, the next ones interleaved in what is
	// left.
	ReplicatedInterleaved Placement = "replicated-interleaved"
)

// ErrTopologyBudget is wrapped by New's error when a device's budget
// cannot hold its share of the topology.
var ErrTopologyBudget = errors.New("the topology share does not fit the device budget")

// Plan is a partition placement over the store's devices (indices into
// Options.Devices): Stores[i] lists the partitions device i holds, and
// Reads[i][p] the device that device i reads partition p from, or -1 for
// the host. placement.Plan converts to it.
type Plan struct {
	Stores [][]int
	Reads  [][]int
	// Replicate is the share of every device's budget that holds the
	// hottest rows on every device, ahead of the partitions (CliqueOpt).
	Replicate float64
}

// Placements lists the placements.
func Placements() []Placement {
	return []Placement{Interleaved, Replicated, Modulo, Planned, ReplicatedInterleaved}
}

// Options configure a store.
type Options struct {
	Placement Placement
	// Devices are the device tiers that cache rows, in device order
	// (sim.DeviceTier(i) for the sim backend). None: everything on host.
	Devices []tensor.Tier
	// Capacity is each device's budget in bytes (one entry per device, or
	// a single entry for all). Gather's output and staging buffers are
	// allocated outside this budget, so leave the device some headroom.
	Capacity []int64
	// Topology makes the store hold the graph (Graph, N x N) as well:
	// the CSR rows of the hottest floor(GraphRatio·N) nodes of the
	// ranking go on the devices, placed like the hot feature rows and
	// before them (their bytes come off each device's budget first), and
	// Topology(reader) serves reads. GraphAuto instead puts all the ranked
	// rows' topology first when it fits, else gives the features the
	// budget first and the topology what is left (XGNN §6.8). Modulo
	// placement implies Topology when GraphRatio > 0.
	Topology   bool
	Graph      *graph.CSR
	GraphRatio float64
	GraphAuto  bool
	// GraphFit keeps, of the GraphRatio's hottest topology rows, those
	// that fit the budget (topology first: the features get what is
	// left, XGNN §6.8's XGNN-G) instead of refusing a ratio that does not
	// fit.
	GraphFit bool
	// TopologyPlacement places the topology rows apart from the feature
	// rows: Interleaved, Modulo or Replicated ("" = as Placement). DGL
	// with a feature cache replicates both; XGNN's graph store (+MSG)
	// partitions the topology while the features stay replicated.
	TopologyPlacement Placement
	// Plan is required by Planned.
	Plan *Plan
	// Replicate is ReplicatedInterleaved's share of the budget, in [0,1].
	Replicate float64
	// LimitFeatures caches at most floor(FeatureRatio·N) feature rows
	// (XGNN's feat_ratio), whatever the budget leaves.
	LimitFeatures bool
	FeatureRatio  float64
	// Prefix says rank is 0, 1, 2, ...: the nodes are relabelled by
	// hotness (Reorder, data.reorder = "score"), so the hot rows are a
	// prefix and the Interleaved, Modulo and Replicated placements find a
	// row by arithmetic instead of a per-node lookup map (Interleaved and
	// Modulo then hold as many rows on every device). Other placements
	// keep the map.
	Prefix bool
}

// Link is one direction of a transfer between two tiers.
type Link struct{ From, To tensor.Tier }

func (l Link) String() string { return string(l.From) + "->" + string(l.To) }

// GatherStats describes one Gather.
type GatherStats struct {
	Rows int // ids gathered
	// Local rows were read in the destination tier itself, Peer rows from
	// another device, Host rows from host memory (when the destination is
	// the host, its rows count as Local).
	Local, Peer, Host int
	// Tier counts the rows served by each source tier.
	Tier map[tensor.Tier]int
	// FeatureBytes are the feature bytes copied per link (rows × dim × 4;
	// a device-to-device copy is listed as such even when the backend
	// routes it through the host).
	FeatureBytes map[Link]int64
	// IndexBytes are the int32 row and position indices uploaded from the
	// host to device tiers (4 bytes an index; a real device would hold the
	// sampler's ids already).
	IndexBytes map[Link]int64
}

// Store is a tiered feature matrix. It is not safe for concurrent use (the
// backends are not).
type Store struct {
	b         backend.Backend
	n, dim    int
	placement Placement
	devices   []tensor.Tier
	host      *tensor.Tensor
	dev       []*tensor.Tensor // hot rows per device
	prefix    bool             // hot rows are nodes 0..kHot-1, placed arithmetically (no where, slot)
	kHot      int              // prefix: the hot rows
	topo      *topoStore       // the topology, when the store holds it
	topoK     int              // nodes whose topology is on the devices
	where     []int16          // per node: hostLoc, allDevices, or a device index
	slot      []int32          // the node's row in its device tensor
	perDevice []int            // rows cached per device
	// Planned: the partition and position of a hot row, where partition
	// p starts in each device's tensor (-1 when not stored), and the plan.
	part     []int32
	blockOff [][]int32
	plan     *Plan
}

const (
	hostLoc    = -1
	allDevices = -2
	planned    = -3 // a hot row of a Planned store: see part and slot
)

// New builds a store over features (n × dim, row-major, host memory) on b:
// it uploads the whole matrix to the host tier and the placed hot rows to
// their devices (that set-up traffic is counted by the backend like any
// other; snapshot the counters after New to see only the gathers). rank
// lists node ids hottest first (any length; distinct ids in [0,n)).
func New(b backend.Backend, features []float32, dim int, rank []int32, opts Options) (*Store, error) {
	if dim <= 0 || len(features)%dim != 0 {
		return nil, fmt.Errorf("store: %d feature values are not rows of %d", len(features), dim)
	}
	n := len(features) / dim
	if n > math.MaxInt32 {
		return nil, fmt.Errorf("store: %d rows do not fit int32 ids", n)
	}
	D := len(opts.Devices)
	if D > math.MaxInt16 {
		return nil, fmt.Errorf("store: %d devices: at most %d", D, math.MaxInt16)
	}
	switch opts.TopologyPlacement {
	case "", Interleaved, Replicated, Modulo:
	default:
		return nil, fmt.Errorf("store: topology placement %q: want interleaved, modulo or replicated (or none: as the features)", opts.TopologyPlacement)
	}
	switch opts.Placement {
	case Interleaved, Replicated, Modulo:
	case ReplicatedInterleaved:
		if !(opts.Replicate >= 0 && opts.Replicate <= 1) {
			return nil, fmt.Errorf("store: replicated share %v: must be in [0, 1]", opts.Replicate)
		}
	case Planned:
		if err := checkPlan(opts.Plan, len(opts.Devices)); err != nil {
			return nil, err
		}
	case "":
		opts.Placement = Interleaved
	default:
		return nil, fmt.Errorf("store: unknown placement %q (known: %v)", opts.Placement, Placements())
	}
	caps := make([]int64, D)
	switch {
	case D == 0:
	case len(opts.Capacity) == 1:
		for i := range caps {
			caps[i] = opts.Capacity[0]
		}
	case len(opts.Capacity) == D:
		copy(caps, opts.Capacity)
	default:
		return nil, fmt.Errorf("store: %d capacities for %d devices (give one, or one per device)", len(opts.Capacity), D)
	}
	for i, c := range caps {
		if c < 0 {
			return nil, fmt.Errorf("store: device %s capacity %d bytes: must be >= 0", opts.Devices[i], c)
		}
	}
	s := &Store{b: b, n: n, dim: dim, placement: opts.Placement, devices: slices.Clone(opts.Devices), perDevice: make([]int, D)}
	s.prefix = opts.Prefix && (opts.Placement == Interleaved || opts.Placement == Modulo || opts.Placement == Replicated)
	if opts.Prefix {
		for i, v := range rank {
			if v != int32(i) {
				return nil, fmt.Errorf("store: a prefix ranking lists node %d at position %d; relabel the nodes by the ranking first (data.reorder = \"score\")", v, i)
			}
		}
	}
	if !s.prefix {
		s.where, s.slot = make([]int16, n), make([]int32, n)
		for i := range s.where {
			s.where[i] = hostLoc
		}
	}
	seen := make([]bool, n)
	for i, v := range rank {
		if v < 0 || int(v) >= n {
			return nil, fmt.Errorf("store: rank[%d] = %d outside [0,%d)", i, v, n)
		}
		if seen[v] {
			return nil, fmt.Errorf("store: node %d is ranked twice", v)
		}
		seen[v] = true
	}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()

	rowBytes := int64(dim) * 4
	// The topology: XGNN gives the devices' memory to the hottest
	// topology first, then to features; "auto" gives it to features first
	// when the whole topology does not fit (§6.8).
	featuresFirst := false
	if opts.Topology || opts.GraphAuto || opts.GraphRatio != 0 {
		if !(opts.GraphRatio >= 0 && opts.GraphRatio <= 1) {
			return nil, fmt.Errorf("store: graph ratio %v: must be in [0, 1]", opts.GraphRatio)
		}
	}
	if D > 0 && (opts.Topology || opts.GraphAuto || opts.Placement == Modulo && opts.GraphRatio > 0) {
		t, err := newTopoStore(opts.Graph, n, opts)
		if err != nil {
			return nil, err
		}
		s.topo = t
		k := min(len(rank), int(opts.GraphRatio*float64(n)))
		tb := t.topologyBytes(rank, k)
		if opts.GraphAuto {
			k = len(rank)
			tb = t.topologyBytes(rank, k)
			for i := range tb {
				if tb[i] > caps[i] {
					featuresFirst = true
				}
			}
		}
		if !featuresFirst {
			if opts.GraphFit {
				if fits := t.fitting(rank[:k], caps); fits < k {
					k = fits
					tb = t.topologyBytes(rank, k)
				}
			}
			for i, b := range tb {
				if b > caps[i] {
					return nil, fmt.Errorf("store: the hottest topology (graph ratio %v, %d nodes) needs %d bytes on %s, more than its %d-byte budget; lower the graph ratio or raise the capacity: %w", opts.GraphRatio, k, b, opts.Devices[i], caps[i], ErrTopologyBudget)
				}
				caps[i] -= b
			}
			s.topoK = k
		}
	}
	// Decide where each hot row goes.
	frank := rank // the feature rows' ranking
	if opts.LimitFeatures {
		if !(opts.FeatureRatio >= 0 && opts.FeatureRatio <= 1) {
			return nil, fmt.Errorf("store: feature ratio %v: must be in [0, 1]", opts.FeatureRatio)
		}
		frank = rank[:min(len(rank), int(opts.FeatureRatio*float64(n)))]
	}
	rows := make([][]int32, D) // node ids per device, in slot order
	switch {
	case D == 0:
	case s.prefix:
		// Hot row v is node v: its place is arithmetic, no lookup map
		// (data tiering §4.2 after Alg. 2; XGNN's modulo partition).
		k := len(frank)
		per := int64(n)
		for _, c := range caps {
			per = min(per, c/rowBytes)
		}
		if opts.Placement == Replicated {
			k = min(k, int(per))
			for d := range rows {
				rows[d] = frank[:k]
			}
		} else {
			k = min(k, int(per)*D)
			for r, v := range frank[:k] {
				rows[r%D] = append(rows[r%D], v)
			}
		}
		s.kHot = k
	case opts.Placement == Planned:
		k := s.replicate(frank, caps, opts.Plan.Replicate, rowBytes, rows)
		left := make([]int64, D)
		for d, c := range caps {
			left[d] = c - int64(k)*rowBytes
		}
		s.placePlanned(frank[k:], left, rowBytes, rows, opts.Plan)
	case opts.Placement == Replicated:
		k := len(frank)
		for _, c := range caps {
			k = min(k, int(c/rowBytes))
		}
		for i, v := range frank[:k] {
			s.where[v], s.slot[v] = allDevices, int32(i)
		}
		for d := range rows {
			rows[d] = frank[:k]
		}
	case opts.Placement == ReplicatedInterleaved:
		k := s.replicate(frank, caps, opts.Replicate, rowBytes, rows)
		room := make([]int, D)
		for d := range rows {
			room[d] = int(min(int64(n), caps[d]/rowBytes-int64(k)))
		}
		s.interleave(frank[k:], room, rows)
	default: // Interleaved, Modulo: round-robin over devices with room
		room := make([]int, D)
		for d, c := range caps {
			room[d] = int(min(int64(n), c/rowBytes))
		}
		s.interleave(frank, room, rows)
	}
	if s.topo != nil {
		if featuresFirst {
			room := make([]int64, D)
			for d := range room {
				room[d] = caps[d] - int64(len(rows[d]))*rowBytes
			}
			s.topoK = s.topo.fitting(rank, room)
		}
		if err := s.topo.place(b, opts.Devices, rank, s.topoK); err != nil {
			return nil, err
		}
	}
	// The host matrix: wrapped in place when the backend can (a CPU
	// backend can, so features mapped from a .strata file stay in the page
	// cache, and data larger than RAM works), else uploaded.
	if w, ok := b.(HostWrapper); ok {
		host, err := w.WrapHost(features, []int{n, dim})
		if err != nil {
			return nil, fmt.Errorf("store: host matrix: %w", err)
		}
		s.host = host
	} else if err := s.uploadHost(features, n, dim); err != nil {
		return nil, err
	}
	s.dev = make([]*tensor.Tensor, D)
	for d, ids := range rows {
		s.perDevice[d] = len(ids)
		if len(ids) == 0 {
			continue
		}
		t, err := b.Alloc(tensor.Float32, []int{len(ids), dim}, opts.Devices[d])
		if err != nil {
			return nil, fmt.Errorf("store: hot rows on %s: %w", opts.Devices[d], err)
		}
		s.dev[d] = t
		buf := make([]float32, len(ids)*dim)
		for i, v := range ids {
			copy(buf[i*dim:(i+1)*dim], features[int(v)*dim:(int(v)+1)*dim])
		}
		if err := b.Upload(t, buf); err != nil {
			return nil, fmt.Errorf("store: hot rows on %s: %w", opts.Devices[d], err)
		}
	}
	ok = true
	return s, nil
}

// DeviceBytes returns, per device, the bytes its topology rows (CSR
// words) and its cached feature rows take.
func (s *Store) DeviceBytes() (topology, features []int64) {
	topology, features = make([]int64, len(s.devices)), make([]int64, len(s.devices))
	for d := range s.devices {
		if s.topo != nil {
			topology[d] = s.topo.bytes[d]
		}
		features[d] = int64(s.perDevice[d]) * int64(s.dim) * 4
	}
	return topology, features
}

// replicate puts the hottest rows that fill share of the smallest budget
// on every device (rows[d] starts with them) and returns their number.
func (s *Store) replicate(rank []int32, caps []int64, share float64, rowBytes int64, rows [][]int32) int {
	k := len(rank)
	for _, c := range caps {
		k = min(k, int(int64(float64(c)*share)/rowBytes))
	}
	for i, v := range rank[:k] {
		s.where[v], s.slot[v] = allDevices, int32(i)
	}
	for d := range rows {
		rows[d] = slices.Clone(rank[:k])
	}
	return k
}

// interleave places rank round-robin over the devices with room (room[d]
// rows left on device d), after the rows they hold.
func (s *Store) interleave(rank []int32, room []int, rows [][]int32) {
	D := len(room)
	d := 0
	for _, v := range rank {
		tries := 0
		for room[d] == 0 && tries < D {
			d, tries = (d+1)%D, tries+1
		}
		if room[d] == 0 {
			break
		}
		s.where[v], s.slot[v] = int16(d), int32(len(rows[d]))
		rows[d] = append(rows[d], v)
		room[d]--
		d = (d + 1) % D
	}
}

// loc returns where node v's row is cached (hostLoc, allDevices, planned
// or a device index) and its slot there.
func (s *Store) loc(v int32) (int16, int32) {
	if !s.prefix {
		return s.where[v], s.slot[v]
	}
	switch {
	case int(v) >= s.kHot:
		return hostLoc, 0
	case s.placement == Replicated:
		return allDevices, v
	default:
		D := int32(len(s.devices))
		return int16(v % D), v / D
	}
}

// LookupMap reports whether the store keeps a per-node map of where the
// rows are (false for a Prefix store).
func (s *Store) LookupMap() bool { return s.where != nil }

// Dim returns the feature dimension.
func (s *Store) Dim() int { return s.dim }

// NumRows returns the number of rows.
func (s *Store) NumRows() int { return s.n }

// Cached returns the number of rows cached on each device.
func (s *Store) Cached() []int { return slices.Clone(s.perDevice) }

// Location returns the tiers that hold node v's row: the host always, plus
// the device(s) that cache it.
func (s *Store) Location(v int32) []tensor.Tier {
	switch w, _ := s.loc(v); w {
	case planned:
		var out []tensor.Tier
		for d := range s.devices {
			if s.blockOff[d][s.part[v]] >= 0 {
				out = append(out, s.devices[d])
			}
		}
		return append(out, tensor.Host)
	case hostLoc:
		return []tensor.Tier{tensor.Host}
	case allDevices:
		return append(slices.Clone(s.devices), tensor.Host)
	default:
		return []tensor.Tier{s.devices[w], tensor.Host}
	}
}

// Source returns the tier Gather reads node v's row from when the
// destination is dst: dst itself when it caches v, else the device that
// caches v (for Replicated, the first device), else the host.
func (s *Store) Source(v int32, dst tensor.Tier) tensor.Tier {
	if w, _ := s.loc(v); w == planned {
		t, _ := s.source(v, slices.Index(s.devices, dst))
		if t == 0 {
			return tensor.Host
		}
		return s.devices[t-1]
	}
	switch w, _ := s.loc(v); w {
	case hostLoc:
		return tensor.Host
	case allDevices:
		if slices.Contains(s.devices, dst) {
			return dst
		}
		return s.devices[0]
	default:
		return s.devices[w]
	}
}

// source returns the index of the tier in s.tiers() that serves v for dst
// (0 = host, d+1 = device d) and the row within it.
func (s *Store) source(v int32, dstDev int) (int, int32) {
	w, slot := s.loc(v)
	switch w {
	case planned:
		if dstDev < 0 {
			return 0, v
		}
		p := s.part[v]
		src := s.plan.Reads[dstDev][p]
		if src < 0 {
			return 0, v
		}
		return src + 1, s.blockOff[src][p] + slot
	case hostLoc:
		return 0, v
	case allDevices:
		if dstDev >= 0 {
			return dstDev + 1, slot
		}
		return 1, slot
	default:
		return int(w) + 1, slot
	}
}

// Close releases the store's tensors.
func (s *Store) Close() {
	if s.host != nil {
		s.b.Release(s.host)
		s.host = nil
	}
	for i, t := range s.dev {
		if t != nil {
			s.b.Release(t)
			s.dev[i] = nil
		}
	}
	if s.topo != nil {
		s.topo.close(s.b)
	}
}

// Gather returns the rows of ids, in order, as a new [len(ids), dim]
// Float32 tensor in tier dst (the host or one of the store's devices; the
// caller releases it).
//
// On a backend with a multi-tier gather (backend.TierGatherer) it is one
// kernel on dst, data tiering's Listing 1: each row is read from the
// tier that serves it, in place where the kernel can read that tier
// (dst itself, a peer device, pinned host memory with zero-copy), and the
// rows of a tier it cannot read are first gathered there and copied to
// dst in one block. Without one, for each source tier it gathers the rows
// there, copies them to dst (the backend counts the bytes on that link)
// and scatter-adds them into an output filled with -0.0, which makes the
// sum bitwise the row for every value, signed zeros included (-0 + x =
// x). Either way the result is bitwise the rows.
func (s *Store) Gather(ctx context.Context, ids []int32, dst tensor.Tier) (*tensor.Tensor, GatherStats, error) {
	st := GatherStats{Rows: len(ids), Tier: map[tensor.Tier]int{}, FeatureBytes: map[Link]int64{}, IndexBytes: map[Link]int64{}}
	if s.host == nil {
		return nil, st, fmt.Errorf("store: Gather on a closed store")
	}
	dstDev := slices.Index(s.devices, dst)
	if dst != tensor.Host && dstDev < 0 {
		return nil, st, fmt.Errorf("store: destination tier %q is neither the host nor a store device (%v)", dst, s.devices)
	}
	g := gatherPlan{tiers: append([]tensor.Tier{tensor.Host}, s.devices...), srcT: append([]*tensor.Tensor{s.host}, s.dev...), dst: dst}
	g.rows = make([][]int32, len(g.tiers))
	g.pos = make([][]int32, len(g.tiers))
	for i, v := range ids {
		if v < 0 || int(v) >= s.n {
			return nil, st, fmt.Errorf("store: id %d (position %d) outside [0,%d)", v, i, s.n)
		}
		t, r := s.source(v, dstDev)
		g.rows[t] = append(g.rows[t], r)
		g.pos[t] = append(g.pos[t], int32(i))
	}
	if err := ctx.Err(); err != nil {
		return nil, st, err
	}
	for t, r := range g.rows {
		if k := len(r); k > 0 {
			g.groups++
			st.Tier[g.tiers[t]] += k
			switch {
			case g.tiers[t] == dst:
				st.Local += k
			case t == 0:
				st.Host += k
			default:
				st.Peer += k
			}
		}
	}
	out, err := s.b.Alloc(tensor.Float32, []int{len(ids), s.dim}, dst)
	if err != nil {
		return nil, st, fmt.Errorf("store: gather output: %w", err)
	}
	if tg, ok := s.b.(backend.TierGatherer); ok && s.combines(tg, &g) {
		err = s.gatherCombined(tg, &g, len(ids), out, &st)
	} else {
		err = s.gatherGroups(&g, out, &st)
	}
	if err != nil {
		s.b.Release(out)
		return nil, st, err
	}
	return out, st, ctx.Err()
}

// gatherPlan is one Gather's rows grouped by the tier that serves them:
// index 0 is the host, d+1 device d.
type gatherPlan struct {
	tiers     []tensor.Tier
	srcT      []*tensor.Tensor
	rows, pos [][]int32 // per tier: the rows there, and their positions in the output
	groups    int       // tiers that serve rows
	dst       tensor.Tier
}

// combines reports whether Gather runs as one multi-tier kernel: not when
// a single group is already one kernel (rows of dst itself, or host rows
// gathered on the host and copied), nor when the combined index would
// overflow int32.
func (s *Store) combines(tg backend.TierGatherer, g *gatherPlan) bool {
	if g.groups == 1 {
		for t, r := range g.rows {
			if len(r) > 0 && (g.tiers[t] == g.dst || !tg.GathersFrom(g.tiers[t], g.dst)) {
				return false
			}
		}
	}
	var total int64
	for _, x := range g.srcT {
		if x != nil {
			total += int64(x.Rows())
		}
	}
	return total <= math.MaxInt32
}

// gatherCombined gathers with one TierGatherer kernel into out: the
// sources it reads in place whole, the rows of the others staged to dst
// in one block each (gathered in their tier, copied).
func (s *Store) gatherCombined(tg backend.TierGatherer, g *gatherPlan, n int, out *tensor.Tensor, st *GatherStats) error {
	rowBytes := int64(s.dim) * 4
	combined := make([]int32, n)
	var srcs, staged []*tensor.Tensor
	defer func() {
		for _, x := range staged {
			s.b.Release(x)
		}
	}()
	base := int32(0)
	for t, r := range g.rows {
		if len(r) == 0 {
			continue
		}
		src := g.srcT[t]
		if tg.GathersFrom(g.tiers[t], g.dst) {
			for j, p := range g.pos[t] {
				combined[p] = base + r[j]
			}
		} else {
			x, err := s.stage(g.tiers[t], src, r, g.dst, st)
			if x != nil {
				staged = append(staged, x)
			}
			if err != nil {
				return err
			}
			src = x
			for j, p := range g.pos[t] {
				combined[p] = base + int32(j)
			}
		}
		if g.tiers[t] != g.dst {
			st.FeatureBytes[Link{g.tiers[t], g.dst}] += int64(len(r)) * rowBytes
		}
		srcs = append(srcs, src)
		base += int32(src.Rows())
	}
	idx, err := s.index(g.dst, combined, st)
	if err != nil {
		return err
	}
	defer s.b.Release(idx)
	return tg.GatherTiers(srcs, idx, out)
}

// stage gathers rows r of x (in tier) there and copies them to dst as one
// block, returned (also on error, when allocated: the caller releases it).
func (s *Store) stage(tier tensor.Tier, x *tensor.Tensor, r []int32, dst tensor.Tier, st *GatherStats) (*tensor.Tensor, error) {
	src, err := s.b.Alloc(tensor.Float32, []int{len(r), s.dim}, tier)
	if err != nil {
		return nil, fmt.Errorf("store: staging on %s: %w", tier, err)
	}
	defer s.b.Release(src)
	if err := s.gatherIn(tier, x, r, src, st); err != nil {
		return nil, err
	}
	moved, err := s.b.Alloc(tensor.Float32, []int{len(r), s.dim}, dst)
	if err != nil {
		return nil, fmt.Errorf("store: staging on %s: %w", dst, err)
	}
	return moved, s.b.Copy(moved, src)
}

// gatherGroups gathers each group in its own tier, copies it to dst and
// scatter-adds it into out (filled with -0.0 when there are several).
func (s *Store) gatherGroups(g *gatherPlan, out *tensor.Tensor, st *GatherStats) error {
	if g.groups > 1 {
		if err := s.b.Fill(out, math.Copysign(0, -1)); err != nil {
			return err
		}
	}
	rowBytes := int64(s.dim) * 4
	dst := g.dst
	var err error
	for t, r := range g.rows {
		k := len(r)
		if k == 0 {
			continue
		}
		// Gather the rows in their own tier; straight into out when it
		// is the only group in dst. A device that reads pinned host
		// memory in place gathers host rows itself: no staging copy.
		zeroCopy := t == 0 && dst != tensor.Host && readsHostInPlace(s.b)
		direct := g.groups == 1 && (g.tiers[t] == dst || zeroCopy)
		var staged *tensor.Tensor
		switch {
		case direct:
			staged = out
		case zeroCopy:
			staged, err = s.b.Alloc(tensor.Float32, []int{k, s.dim}, dst)
		default:
			staged, err = s.b.Alloc(tensor.Float32, []int{k, s.dim}, g.tiers[t])
		}
		if err != nil {
			return fmt.Errorf("store: staging on %s: %w", g.tiers[t], err)
		}
		gatherTier := g.tiers[t]
		if zeroCopy {
			gatherTier = dst
			st.FeatureBytes[Link{tensor.Host, dst}] += int64(k) * rowBytes
		}
		if err := s.gatherIn(gatherTier, g.srcT[t], r, staged, st); err != nil {
			if !direct {
				s.b.Release(staged)
			}
			return err
		}
		if direct {
			break
		}
		moved := staged
		if g.tiers[t] != dst && !zeroCopy {
			if g.groups == 1 {
				moved = out
			} else if moved, err = s.b.Alloc(tensor.Float32, []int{k, s.dim}, dst); err != nil {
				s.b.Release(staged)
				return fmt.Errorf("store: staging on %s: %w", dst, err)
			}
			if err := s.b.Copy(moved, staged); err != nil {
				s.b.Release(staged)
				return err
			}
			st.FeatureBytes[Link{g.tiers[t], dst}] += int64(k) * rowBytes
			s.b.Release(staged)
		}
		if g.groups == 1 {
			break
		}
		pidx, err := s.index(dst, g.pos[t], st)
		if err != nil {
			return err
		}
		err = s.b.ScatterAdd(moved, pidx, out)
		s.b.Release(pidx)
		s.b.Release(moved)
		if err != nil {
			return err
		}
	}
	return nil
}

// Features is XGNN's Features, batched: Gather.
func (s *Store) Features(ctx context.Context, ids []int32, dst tensor.Tier) (*tensor.Tensor, GatherStats, error) {
	return s.Gather(ctx, ids, dst)
}

// gatherIn gathers rows r of x (in tier) into y.
func (s *Store) gatherIn(tier tensor.Tier, x *tensor.Tensor, r []int32, y *tensor.Tensor, st *GatherStats) error {
	idx, err := s.index(tier, r, st)
	if err != nil {
		return err
	}
	defer s.b.Release(idx)
	return s.b.Gather(x, idx, y)
}

// index uploads an int32 index vector to tier.
func (s *Store) index(tier tensor.Tier, v []int32, st *GatherStats) (*tensor.Tensor, error) {
	t, err := s.b.Alloc(tensor.Int32, []int{len(v)}, tier)
	if err != nil {
		return nil, fmt.Errorf("store: index on %s: %w", tier, err)
	}
	if err := s.b.Upload(t, v); err != nil {
		s.b.Release(t)
		return nil, err
	}
	if tier != tensor.Host {
		st.IndexBytes[Link{tensor.Host, tier}] += 4 * int64(len(v))
	}
	return t, nil
}

// HostReader is implemented by backends whose kernels read host-tier
// tensors in place (pinned host memory mapped into the device, as the
// cuda backend's): the store then gathers cold rows from the host straight
// into the destination device, the on-demand access of data tiering and
// HongTu, instead of gathering on the host and copying.
type HostReader interface {
	ReadsHostInPlace() bool
}

func readsHostInPlace(b backend.Backend) bool {
	r, ok := b.(HostReader)
	return ok && r.ReadsHostInPlace()
}

// HostWrapper is implemented by backends that can use host memory in
// place as a host-tier tensor (the CPU backend and sim).
type HostWrapper interface {
	WrapHost(v []float32, shape []int) (*tensor.Tensor, error)
}

// uploadHost copies the feature matrix into a host-tier tensor.
func (s *Store) uploadHost(features []float32, n, dim int) error {
	host, err := s.b.Alloc(tensor.Float32, []int{n, dim}, tensor.Host)
	if err != nil {
		return fmt.Errorf("store: host matrix: %w", err)
	}
	s.host = host
	if err := s.b.Upload(host, features); err != nil {
		return fmt.Errorf("store: host matrix: %w", err)
	}
	return nil
}

// HostGather is the reference gather: the rows of ids copied from a host
// feature matrix.
func HostGather(features []float32, dim int, ids []int32) []float32 {
	out := make([]float32, len(ids)*dim)
	for i, v := range ids {
		copy(out[i*dim:(i+1)*dim], features[int(v)*dim:(int(v)+1)*dim])
	}
	return out
}

// checkPlan validates a Planned store's plan for D devices.
func checkPlan(p *Plan, D int) error {
	switch {
	case p == nil:
		return fmt.Errorf("store: placement %q needs a plan", Planned)
	case len(p.Stores) != D || len(p.Reads) != D:
		return fmt.Errorf("store: a plan for %d and %d devices, but the store has %d", len(p.Stores), len(p.Reads), D)
	case !(p.Replicate >= 0 && p.Replicate <= 1):
		return fmt.Errorf("store: plan: replicated share %v, want [0, 1]", p.Replicate)
	}
	for i := range D {
		if len(p.Reads[i]) != D {
			return fmt.Errorf("store: plan: device %d reads %d partitions, want %d", i, len(p.Reads[i]), D)
		}
		for _, q := range p.Stores[i] {
			if q < 0 || q >= D {
				return fmt.Errorf("store: plan: device %d stores partition %d, outside [0,%d)", i, q, D)
			}
		}
		for q, src := range p.Reads[i] {
			if src >= D || src < -1 {
				return fmt.Errorf("store: plan: device %d reads partition %d from device %d, outside [-1,%d)", i, q, src, D)
			}
			if src >= 0 && !slices.Contains(p.Stores[src], q) {
				return fmt.Errorf("store: plan: device %d reads partition %d from device %d, which does not store it", i, q, src)
			}
		}
	}
	return nil
}

// placePlanned splits the hottest rows into one partition per device and
// lays out each device's partitions as the plan says; the number of hot
// rows is what the fullest device can hold.
func (s *Store) placePlanned(rank []int32, caps []int64, rowBytes int64, rows [][]int32, p *Plan) {
	D := len(caps)
	perPart := int64(len(rank)+D-1) / int64(D)
	for d, c := range caps {
		if n := len(p.Stores[d]); n > 0 {
			perPart = min(perPart, c/rowBytes/int64(n))
		}
	}
	k := min(len(rank), int(perPart)*D)
	s.plan, s.part = p, make([]int32, s.n)
	parts := make([][]int32, D)
	for r, v := range rank[:k] {
		q := r % D
		s.where[v], s.part[v], s.slot[v] = planned, int32(q), int32(len(parts[q]))
		parts[q] = append(parts[q], v)
	}
	s.blockOff = make([][]int32, D)
	for d := range D {
		s.blockOff[d] = make([]int32, D)
		for q := range s.blockOff[d] {
			s.blockOff[d][q] = -1
		}
		for _, q := range p.Stores[d] {
			s.blockOff[d][q] = int32(len(rows[d]))
			rows[d] = append(rows[d], parts[q]...)
		}
	}
}
