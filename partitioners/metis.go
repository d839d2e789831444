package partitioners

import (
	"context"
	"errors"
	"fmt"
	"math"

	"strata/core/graph"
	"strata/core/registry"
)

// MetisOptions are the METIS settings shared by partitioner.metis,
// partitioner.hongtu-2level and partitioner.betty-reg (embedded, so their
// keys sit directly in the plugin's table).
//
// METIS is Debian's METIS 5.1 (libmetis-dev), linked through cgo and built
// with 32-bit idx_t: graphs with more than 2^31-1 nodes or adjacency
// entries (after symmetrisation), or with node or edge weights whose total
// exceeds 2^31-1, are rejected with an error. Same seed, same options and
// the same graph give the same partition as `gpmetis -seed=S`.
//
// Calls into METIS are serialised (one at a time per process) and cannot be
// interrupted: ctx is checked before and after. METIS may print diagnostics
// on stdout when it rejects its input.
type MetisOptions struct {
	Method    string `toml:"method" enum:"kway,recursive" doc:"METIS_PartGraphKway (multilevel k-way) or METIS_PartGraphRecursive (recursive bisection)"`
	Seed      int64  `toml:"seed" doc:"METIS_OPTION_SEED: the same seed and options give the same partition (gpmetis -seed)"`
	Ufactor   int    `toml:"ufactor" range:"[0,1000000]" doc:"allowed imbalance in thousandths: the heaviest part may weigh (1+ufactor/1000) x the mean; 0 = METIS default (30 for kway, 1 for recursive)"`
	Objective string `toml:"objective" enum:"cut,vol" doc:"kway objective: edge cut or total communication volume"`
	Contig    bool   `toml:"contig" doc:"kway only: force contiguous parts (an error on a disconnected graph)"`
	MinConn   bool   `toml:"minconn" doc:"kway only: also minimise the maximum number of parts a part is connected to"`
	Ncuts     int    `toml:"ncuts" range:"[0,1000]" doc:"number of partitionings METIS computes, keeping the best (0 = METIS default, 1)"`

	// Progress, when set, is called at the start of each stage of a
	// Partition call ("symmetrize", "reg", "metis", "chunks", "done"), so a
	// caller partitioning a large graph can log what it is waiting on.
	// Partitioners print nothing themselves. It is not part of the config.
	Progress func(stage string) `toml:"-"`
}

// defaultMetisOptions returns the defaults: k-way, edge cut, seed 0.
func defaultMetisOptions() MetisOptions {
	return MetisOptions{Method: "kway", Objective: "cut"}
}

// Validate checks the METIS options.
func (o *MetisOptions) Validate() error {
	switch o.Method {
	case "kway", "recursive":
	default:
		return fmt.Errorf("method = %q: allowed values are \"kway\", \"recursive\"", o.Method)
	}
	switch o.Objective {
	case "cut":
	case "vol":
		if o.Method == "recursive" {
			return errors.New(`objective = "vol" needs method = "kway" (recursive bisection minimises the edge cut)`)
		}
	default:
		return fmt.Errorf("objective = %q: allowed values are \"cut\", \"vol\"", o.Objective)
	}
	if o.Method == "recursive" && (o.Contig || o.MinConn) {
		return errors.New("contig and minconn need method = \"kway\"")
	}
	if o.Seed < math.MinInt32 || o.Seed > math.MaxInt32 {
		return fmt.Errorf("seed = %d does not fit METIS's 32-bit idx_t", o.Seed)
	}
	if o.Ufactor < 0 || o.Ufactor > math.MaxInt32 {
		return fmt.Errorf("ufactor = %d: want 0 (METIS default) or a positive number of thousandths", o.Ufactor)
	}
	if o.Ncuts < 0 || o.Ncuts > math.MaxInt32 {
		return fmt.Errorf("ncuts = %d: want 0 (METIS default) or a positive count", o.Ncuts)
	}
	return nil
}

func (o *MetisOptions) progress(stage string) {
	if o.Progress != nil {
		o.Progress(stage)
	}
}

// metisOpts is the form of MetisOptions that callMetis reads.
type metisOpts struct {
	seed, ufactor, ncuts, niter int32
	vol, contig, minconn        bool
}

func (o *MetisOptions) lower() *metisOpts {
	return &metisOpts{
		seed: int32(o.Seed), ufactor: int32(o.Ufactor), ncuts: int32(o.Ncuts),
		vol: o.Objective == "vol", contig: o.Contig, minconn: o.MinConn,
	}
}

// metisGraph is an undirected graph without self loops in METIS's CSR
// form: both directions of every edge are stored. vwgt and adjwgt may be
// nil (unit weights).
type metisGraph struct {
	n            int
	xadj, adjncy []int32
	vwgt, adjwgt []int32
}

// metisMaxIdx is the largest value of METIS's 32-bit idx_t.
const metisMaxIdx = math.MaxInt32

// checkMetisSize reports an error when a graph with n nodes and nnz
// adjacency entries (both directions counted) does not fit METIS's 32-bit
// idx_t.
func checkMetisSize(id string, n int, nnz int64) error {
	if int64(n) > metisMaxIdx-1 {
		return fmt.Errorf("%s: %d nodes: METIS (Debian's libmetis, 32-bit idx_t) handles at most %d", id, n, metisMaxIdx-1)
	}
	if nnz > metisMaxIdx {
		return fmt.Errorf("%s: %d adjacency entries after symmetrisation: METIS (Debian's libmetis, 32-bit idx_t) handles at most %d", id, nnz, int64(metisMaxIdx))
	}
	return nil
}

// metisNodeWeights converts node weights to idx_t. Nil or all-zero weights
// give nil (unit weights: METIS cannot balance a zero total).
func metisNodeWeights(id string, w []int64) ([]int32, error) {
	if w == nil {
		return nil, nil
	}
	var total int64
	for i, x := range w {
		if x > metisMaxIdx {
			return nil, fmt.Errorf("%s: node %d has weight %d: METIS weights must fit its 32-bit idx_t", id, i, x)
		}
		total += x
		if total > metisMaxIdx {
			return nil, fmt.Errorf("%s: total node weight exceeds %d, METIS's 32-bit idx_t: scale the weights down", id, int64(metisMaxIdx))
		}
	}
	if total == 0 {
		return nil, nil
	}
	out := make([]int32, len(w))
	for i, x := range w {
		out[i] = int32(x)
	}
	return out, nil
}

// undirectedMetisGraph symmetrises g and drops its self loops and
// duplicate edges (graph.Symmetrize), the form METIS requires.
func undirectedMetisGraph(id string, g *graph.CSR, nodeWeights []int64) (*metisGraph, error) {
	if g.NumRows != g.NumCols {
		return nil, fmt.Errorf("%s: the graph is %d x %d: METIS partitions square graphs", id, g.NumRows, g.NumCols)
	}
	if err := checkMetisSize(id, g.NumRows, 0); err != nil {
		return nil, err
	}
	vw, err := metisNodeWeights(id, nodeWeights)
	if err != nil {
		return nil, err
	}
	s := graph.Symmetrize(g.Unweighted())
	if err := checkMetisSize(id, s.NumRows, s.NNZ()); err != nil {
		return nil, err
	}
	return &metisGraph{n: s.NumRows, xadj: narrowIndptr(s.Indptr), adjncy: s.Idx32, vwgt: vw}, nil
}

// narrowIndptr converts an indptr whose last entry fits int32.
func narrowIndptr(p []int64) []int32 {
	out := make([]int32, len(p))
	for i, x := range p {
		out[i] = int32(x)
	}
	return out
}

// metisStatus turns a METIS return code into an error.
func metisStatus(id string, rc int, o *MetisOptions) error {
	switch rc {
	case metisOK:
		return nil
	case metisErrorInput:
		return fmt.Errorf("%s: METIS rejected its input (METIS_ERROR_INPUT): check k, the weights and the options", id)
	case metisErrorMemory:
		return fmt.Errorf("%s: METIS ran out of memory (METIS_ERROR_MEMORY)", id)
	case metisError:
		if o.Contig {
			return fmt.Errorf("%s: METIS failed (METIS_ERROR): contig = true needs a connected graph", id)
		}
		return fmt.Errorf("%s: METIS failed (METIS_ERROR)", id)
	}
	return fmt.Errorf("%s: METIS returned the unknown status %d", id, rc)
}

// partitionGraph partitions a METIS-ready graph into k parts (1 <= k <=
// mg.n). k = 1 and edgeless graphs do not call METIS: every node goes to
// part 0, or contiguous ranges balanced by node weight (any split has cut
// 0). Parts METIS leaves empty are filled (see fillEmptyParts).
func (o *MetisOptions) partitionGraph(ctx context.Context, id string, mg *metisGraph, k int) ([]int32, error) {
	parts := make([]int32, mg.n)
	if k == 1 {
		return parts, nil
	}
	if len(mg.adjncy) == 0 {
		prefix := make([]int64, mg.n+1)
		for i := 0; i < mg.n; i++ {
			w := int64(1)
			if mg.vwgt != nil {
				w = int64(mg.vwgt[i])
			}
			prefix[i+1] = prefix[i] + w
		}
		b := RangeBounds(prefix, k)
		for p := 0; p < k; p++ {
			for i := b[p]; i < b[p+1]; i++ {
				parts[i] = int32(p)
			}
		}
		return parts, nil
	}
	if !metisAvailable {
		return nil, fmt.Errorf("%s: this strata binary was built without cgo, so without METIS", id)
	}
	if o.Contig && o.Method == "kway" {
		// METIS would print an error and fail: say why without calling it.
		if c := components(mg); c > 1 {
			return nil, fmt.Errorf("%s: contig = true needs a connected graph; this one has %d connected components", id, c)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o.progress("metis")
	_, rc := callMetis(o.Method == "recursive", mg, int32(k), o.lower(), parts)
	if err := metisStatus(id, rc, o); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, p := range parts {
		if p < 0 || int(p) >= k {
			return nil, fmt.Errorf("%s: METIS put node %d in part %d, outside [0,%d)", id, i, p, k)
		}
	}
	fillEmptyParts(mg, parts, k)
	return parts, nil
}

// components returns the number of connected components of mg.
func components(mg *metisGraph) int {
	seen := make([]bool, mg.n)
	var stack []int32
	c := 0
	for s := 0; s < mg.n; s++ {
		if seen[s] {
			continue
		}
		c++
		seen[s] = true
		stack = append(stack[:0], int32(s))
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, u := range mg.adjncy[mg.xadj[v]:mg.xadj[v+1]] {
				if !seen[u] {
					seen[u] = true
					stack = append(stack, u)
				}
			}
		}
	}
	return c
}

// fillEmptyParts makes every part non-empty (k <= n). METIS 5.1 may leave
// parts empty, mostly when k is close to the number of nodes or the graph
// has many tiny components. For each empty part, in increasing order, the
// node of the currently largest part (lowest part id on ties) with the
// fewest neighbours inside that part (lowest node id on ties) moves into
// it. The cost is O(n) per empty part.
func fillEmptyParts(mg *metisGraph, parts []int32, k int) {
	count := make([]int, k)
	for _, p := range parts {
		count[p]++
	}
	for e := 0; e < k; e++ {
		if count[e] != 0 {
			continue
		}
		big := 0
		for p := range count {
			if count[p] > count[big] {
				big = p
			}
		}
		best, bestIn := -1, 0
		for v, p := range parts {
			if int(p) != big {
				continue
			}
			in := 0
			for _, u := range mg.adjncy[mg.xadj[v]:mg.xadj[v+1]] {
				if int(parts[u]) == big {
					in++
				}
			}
			if best < 0 || in < bestIn {
				best, bestIn = v, in
			}
		}
		parts[best] = int32(e)
		count[big]--
		count[e]++
	}
}

// Metis partitions the nodes with METIS 5.1 (k-way or recursive
// bisection), minimising the number of cut edges while balancing the node
// weights (node counts when nodeWeights is nil or all zero).
//
// METIS needs an undirected graph without self loops: the graph is
// symmetrised internally (an edge in either direction connects two nodes;
// duplicates and self loops are dropped), so the edge direction is
// ignored and the input is not modified. The result does not change with
// GOMAXPROCS. k = 1 does not call METIS (METIS 5.1's k-way crashes with
// SIGFPE on one part), nor does an edgeless graph (contiguous ranges
// balanced by node weight: every split cuts nothing).
//
// Disconnected graphs: METIS k-way leaves parts empty rather than split
// small connected components (with 10 two-node components and k = 15 it
// returns 5 empty parts and a cut of 0), while recursive bisection splits
// them. Partition fills the empty parts afterwards (see fillEmptyParts),
// so every part is non-empty whenever k <= n, at the price of a slightly
// larger cut.
type Metis struct {
	MetisOptions
}

// SquareOnly reports that METIS partitions square graphs only.
func (*Metis) SquareOnly() bool { return true }

// StrataModule registers partitioner.metis.
func (*Metis) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID:  "partitioner.metis",
		New: func() registry.Module { return &Metis{MetisOptions: defaultMetisOptions()} },
		Doc: "METIS 5.1 min-edge-cut partitioning of the symmetrised graph",
	}
}

// Partition implements Partitioner.
func (m *Metis) Partition(ctx context.Context, g *graph.CSR, k int, nodeWeights []int64) ([]int32, error) {
	const id = "partitioner.metis"
	if err := checkArgs(id, g, k, nodeWeights); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if k == 1 {
		if g.NumRows != g.NumCols {
			return nil, fmt.Errorf("%s: the graph is %d x %d: METIS partitions square graphs", id, g.NumRows, g.NumCols)
		}
		m.progress("done")
		return make([]int32, g.NumRows), nil
	}
	m.progress("symmetrize")
	mg, err := undirectedMetisGraph(id, g, nodeWeights)
	if err != nil {
		return nil, err
	}
	parts, err := m.partitionGraph(ctx, id, mg, k)
	if err != nil {
		return nil, err
	}
	m.progress("done")
	return parts, nil
}

func init() {
	registry.Register(new(Metis))
}
