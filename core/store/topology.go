package store

import (
	"cmp"
	"fmt"
	"slices"
	"sync/atomic"

	"strata/core/backend"
	"strata/core/graph"
	"strata/core/sampling"
	"strata/core/tensor"
)

// SectorBytes is the memory transaction of a topology read: a device reads
// memory on another tier in 32-byte sectors, so a lone 4-byte neighbour
// id moves a whole sector, and neighbours of one sector requested
// together (a batched, coalesced read) move it once.
const SectorBytes = 32

// topoStore is the topology part of the memory store: the CSR rows of the
// hottest k nodes of the ranking on the devices, placed like the hot
// feature rows (hot row r on device r mod D; on every device when
// replicated; by partition r mod D as a plan says), and every row on the
// host. Each device's rows are its own arrays, in slot order, and reads
// are served from the tier the reader reads the row from.
type topoStore struct {
	g         *graph.CSR
	k         int     // hot rows
	hot       []int32 // per node: its position in the ranking if < k, else -1 (nil with prefix)
	prefix    bool    // the ranking is 0, 1, 2, ...: node v is hot row v
	D         int
	placement Placement
	plan      *Plan
	partOff   [][]int32 // Planned: where partition p starts on device d, in rows (-1: not stored)
	ip        [][]int64 // per device: row pointers of its rows, in slot order
	idx       [][]int32 // per device: their neighbours
	bytes     []int64   // per device: the bytes the rows take (8 per row + 4 per edge)
	res       []*tensor.Tensor
}

// rowBytes is what node v's row takes on a device.
func (t *topoStore) rowBytes(v int32) int64 { return 8 + 4*(t.g.Indptr[v+1]-t.g.Indptr[v]) }

// holders returns the devices that store hot row r.
func (t *topoStore) holders(r int, out []int) []int {
	out = out[:0]
	switch t.placement {
	case Replicated:
		for d := range t.D {
			out = append(out, d)
		}
	case Planned:
		for d := range t.D {
			if slices.Contains(t.plan.Stores[d], r%t.D) {
				out = append(out, d)
			}
		}
	default:
		out = append(out, r%t.D)
	}
	return out
}

// slot returns hot row r's row on device d (which stores it).
func (t *topoStore) slot(d, r int) int {
	switch t.placement {
	case Replicated:
		return r
	case Planned:
		return int(t.partOff[d][r%t.D]) + r/t.D
	default:
		return r / t.D
	}
}

// source returns the device that reader (a device index, or -1 for the
// host) reads hot row r from, or -1 for the host.
func (t *topoStore) source(reader, r int) int {
	switch {
	case reader < 0:
		return -1
	case t.placement == Replicated:
		return reader
	case t.placement == Planned:
		return t.plan.Reads[reader][r%t.D]
	default:
		return r % t.D
	}
}

// topologyBytes returns the bytes the hottest k rows of rank take on each
// device.
func (t *topoStore) topologyBytes(rank []int32, k int) []int64 {
	out := make([]int64, t.D)
	var hs []int
	for r, v := range rank[:k] {
		b := t.rowBytes(v)
		for _, d := range t.holders(r, hs) {
			out[d] += b
		}
	}
	return out
}

// fitting returns how many of the hottest rows of rank fit in room bytes
// per device, stopping at the first that does not.
func (t *topoStore) fitting(rank []int32, room []int64) int {
	used := make([]int64, t.D)
	var hs []int
	for r, v := range rank {
		b := t.rowBytes(v)
		hs = t.holders(r, hs)
		for _, d := range hs {
			if used[d]+b > room[d] {
				return r
			}
		}
		for _, d := range hs {
			used[d] += b
		}
	}
	return len(rank)
}

// newTopoStore checks the graph against the store's n nodes and prepares
// the placement (no rows placed yet).
func newTopoStore(g *graph.CSR, n int, opts Options) (*topoStore, error) {
	if g == nil {
		return nil, fmt.Errorf("store: a graph ratio needs the graph (Options.Graph)")
	}
	if g.NumRows != n || g.NumCols != n {
		return nil, fmt.Errorf("store: the graph is %d x %d, but the store has %d nodes", g.NumRows, g.NumCols, n)
	}
	t := &topoStore{g: g, D: len(opts.Devices), placement: opts.Placement, plan: opts.Plan, prefix: opts.Prefix}
	if opts.TopologyPlacement != "" {
		t.placement = opts.TopologyPlacement
	}
	if t.placement == Planned {
		t.partOff = make([][]int32, t.D)
	}
	return t, nil
}

// place puts the hottest k rows of rank on the devices of b and reserves
// their memory there.
func (t *topoStore) place(b backend.Backend, devices []tensor.Tier, rank []int32, k int) error {
	t.k = k
	if !t.prefix {
		t.hot = make([]int32, t.g.NumRows)
		for i := range t.hot {
			t.hot[i] = -1
		}
		for r, v := range rank[:k] {
			t.hot[v] = int32(r)
		}
	}
	// The rows of each device in slot order.
	rows := make([][]int32, t.D)
	switch t.placement {
	case Replicated:
		for d := range rows {
			rows[d] = rank[:k]
		}
	case Planned:
		parts := make([][]int32, t.D)
		for r, v := range rank[:k] {
			parts[r%t.D] = append(parts[r%t.D], v)
		}
		for d := range t.D {
			t.partOff[d] = make([]int32, t.D)
			for q := range t.partOff[d] {
				t.partOff[d][q] = -1
			}
			for _, q := range t.plan.Stores[d] {
				t.partOff[d][q] = int32(len(rows[d]))
				rows[d] = append(rows[d], parts[q]...)
			}
		}
	default:
		for r, v := range rank[:k] {
			rows[r%t.D] = append(rows[r%t.D], v)
		}
	}
	t.ip, t.idx, t.bytes, t.res = make([][]int64, t.D), make([][]int32, t.D), make([]int64, t.D), make([]*tensor.Tensor, t.D)
	for d, vs := range rows {
		ip := make([]int64, len(vs)+1)
		for i, v := range vs {
			ip[i+1] = ip[i] + t.g.Indptr[v+1] - t.g.Indptr[v]
		}
		idx := make([]int32, ip[len(vs)])
		for i, v := range vs {
			sampling.ReadRow(t.g, t.g.Indptr[v], idx[ip[i]:ip[i+1]])
		}
		t.ip[d], t.idx[d] = ip, idx
		t.bytes[d] = 8*int64(len(vs)) + 4*int64(len(idx))
		if len(vs) == 0 {
			continue
		}
		// The device memory holds the neighbour ids and the row pointers
		// (two int32 words each).
		words := make([]int32, 0, len(idx)+2*len(vs))
		words = append(words, idx...)
		for _, p := range ip[1:] {
			words = append(words, int32(p), int32(p>>32))
		}
		res, err := b.Alloc(tensor.Int32, []int{len(words)}, devices[d])
		if err != nil {
			return fmt.Errorf("store: topology on %s: %w", devices[d], err)
		}
		t.res[d] = res
		if err := b.Upload(res, words); err != nil {
			return fmt.Errorf("store: topology on %s: %w", devices[d], err)
		}
	}
	return nil
}

func (t *topoStore) close(b backend.Backend) {
	for i, r := range t.res {
		if r != nil {
			b.Release(r)
			t.res[i] = nil
		}
	}
}

// TopologyStats are the topology reads of a view: the bytes each link
// carried (whole sectors) and the bytes read in the reader's own memory.
type TopologyStats struct {
	Bytes      map[Link]int64
	LocalBytes int64
}

// TopologyView is the access API (sampling.Graph) of the store's
// topology for one reader: every read is served by the tier the reader
// reads the row from (its own memory, a peer device's, or the host's)
// and counted. Safe for concurrent use; Take collects the counts.
type TopologyView struct {
	t      *topoStore
	reader int // device index, -1 for the host
	tiers  []tensor.Tier
	bytes  []atomic.Int64 // per source: 0 host, 1+d device d
}

var _ sampling.Graph = (*TopologyView)(nil)

// Topology returns the access API of the store's graph for a reader: the
// host or one of the store's devices. It fails when the store holds no
// topology (Options.GraphRatio unset).
func (s *Store) Topology(reader tensor.Tier) (*TopologyView, error) {
	if s.topo == nil {
		return nil, fmt.Errorf("store: the store holds no topology (set a graph ratio)")
	}
	r := slices.Index(s.devices, reader)
	if reader != tensor.Host && r < 0 {
		return nil, fmt.Errorf("store: reader tier %q is neither the host nor a store device (%v)", reader, s.devices)
	}
	tiers := append([]tensor.Tier{tensor.Host}, s.devices...)
	return &TopologyView{t: s.topo, reader: r, tiers: tiers, bytes: make([]atomic.Int64, len(tiers))}, nil
}

// HoldsTopology reports whether the store holds the topology.
func (s *Store) HoldsTopology() bool { return s.topo != nil }

// HotTopology returns the number of nodes whose rows are on the devices
// and the bytes they take on each device.
func (s *Store) HotTopology() (int, []int64) {
	if s.topo == nil {
		return 0, make([]int64, len(s.devices))
	}
	return s.topo.k, slices.Clone(s.topo.bytes)
}

// locate returns where the reader reads node v's row: the source (0 the
// host, 1+d device d), the source's neighbour array and row pointer
// array position (slot), and the row's first edge in that array.
func (v *TopologyView) locate(node int32) (src int, slot int64, start int64) {
	t := v.t
	r := -1
	switch {
	case t.hot != nil:
		r = int(t.hot[node])
	case int(node) < t.k:
		r = int(node)
	}
	if r >= 0 {
		if d := t.source(v.reader, r); d >= 0 {
			sl := t.slot(d, r)
			return d + 1, int64(sl), t.ip[d][sl]
		}
	}
	return 0, int64(node), t.g.Indptr[node]
}

// add counts sectors moved from src.
func (v *TopologyView) add(src int, sectors int64) {
	if sectors != 0 {
		v.bytes[src].Add(sectors * SectorBytes)
	}
}

// NumNodes implements sampling.Graph.
func (v *TopologyView) NumNodes() int { return v.t.g.NumRows }

// NumNeighbors implements sampling.Graph: each degree reads the row's two
// 8-byte row pointers (one sector, two when they straddle a boundary).
func (v *TopologyView) NumNeighbors(ids []int32, deg []int64) {
	t := v.t
	moved := make([]int64, len(v.bytes))
	for i, node := range ids {
		src, slot, _ := v.locate(node)
		if src == 0 {
			deg[i] = t.g.Indptr[node+1] - t.g.Indptr[node]
		} else {
			deg[i] = t.ip[src-1][slot+1] - t.ip[src-1][slot]
		}
		moved[src] += spanSectors(8*slot, 16)
	}
	v.flush(moved[:])
}

// flush adds a per-source count to the view.
func (v *TopologyView) flush(moved []int64) {
	for src, n := range moved {
		v.add(src, n)
	}
}

// read copies the neighbours of node at positions pos (nil: all) from its
// source into out and returns the source and the row's first edge.
func (v *TopologyView) read(node int32, pos []int64, out []int32) (int, int64) {
	src, _, start := v.locate(node)
	if src == 0 {
		if pos == nil {
			sampling.ReadRow(v.t.g, start, out)
		} else {
			sampling.ReadAt(v.t.g, start, pos, out)
		}
		return 0, start
	}
	row := v.t.idx[src-1][start:]
	if pos == nil {
		copy(out, row)
	} else {
		for q, p := range pos {
			out[q] = row[p]
		}
	}
	return src, start
}

// Neighbors implements sampling.Graph: a whole row moves the sectors it
// spans; picked neighbours are requested one by one, a sector each.
func (v *TopologyView) Neighbors(node int32, pos []int64, out []int32) {
	src, start := v.read(node, pos, out)
	if pos == nil {
		v.add(src, spanSectors(4*start, 4*int64(len(out))))
		return
	}
	v.add(src, int64(len(pos)))
}

// NeighborsBatch implements sampling.Graph: one request in which the
// ascending positions of a row that share a sector move it once.
func (v *TopologyView) NeighborsBatch(ids []int32, rowptr []int64, pos []int64, out []int32) {
	moved := make([]int64, len(v.bytes))
	for i, node := range ids {
		lo, hi := rowptr[i], rowptr[i+1]
		if pos == nil {
			src, start := v.read(node, nil, out[lo:hi])
			moved[src] += spanSectors(4*start, 4*(hi-lo))
			continue
		}
		src, start := v.read(node, pos[lo:hi], out[lo:hi])
		last := int64(-1)
		for _, p := range pos[lo:hi] {
			if s := 4 * (start + p) / SectorBytes; s != last {
				moved[src]++
				last = s
			}
		}
	}
	v.flush(moved[:])
}

// spanSectors is the number of sectors the bytes [addr, addr+n) touch.
func spanSectors(addr, n int64) int64 {
	if n <= 0 {
		return 0
	}
	return (addr+n-1)/SectorBytes - addr/SectorBytes + 1
}

// Take returns the reads since the last Take and starts counting anew.
// Reads of the reader's own memory are local; a host reader's reads are
// all local (the host holds every row).
func (v *TopologyView) Take() TopologyStats {
	st := TopologyStats{Bytes: map[Link]int64{}}
	readerTier := tensor.Host
	if v.reader >= 0 {
		readerTier = v.tiers[v.reader+1]
	}
	for src := range v.bytes {
		n := v.bytes[src].Swap(0)
		if n == 0 {
			continue
		}
		if v.tiers[src] == readerTier {
			st.LocalBytes += n
		} else {
			st.Bytes[Link{v.tiers[src], readerTier}] += n
		}
	}
	return st
}

// CountTopology counts the link bytes of st on the backend (under the
// topology purpose), as reads in place by the reader.
func (s *Store) CountTopology(st TopologyStats) error {
	if len(st.Bytes) == 0 {
		return nil
	}
	r, ok := backend.ForPurpose(s.b, backend.PurposeTopology).(backend.InPlaceReads)
	if !ok {
		return fmt.Errorf("store: backend %s cannot count in-place topology reads", s.b.Name())
	}
	links := make([]Link, 0, len(st.Bytes))
	for l := range st.Bytes {
		links = append(links, l)
	}
	slices.SortFunc(links, func(a, b Link) int { return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To)) })
	for _, l := range links {
		if err := r.CountRead(l.From, l.To, st.Bytes[l]); err != nil {
			return fmt.Errorf("store: topology reads: %w", err)
		}
	}
	return nil
}
