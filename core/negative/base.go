package negative

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"strata/core/graph"
	"strata/core/registry"
)

// Drawer is a negative sampler's one-pair draw: with the base (Base) it
// is a whole Sampler. The base checks the graph and the positives, gives
// every positive its own random stream, redraws excluded pairs and fills
// the output; the Drawer only says how one negative is drawn. A module
// embeds Base and its Bind and Draw are one call each:
//
//	func (u *Mine) Bind(ctx context.Context, g *graph.CSR) error { return u.BindWith(ctx, u, g) }
//	func (u *Mine) Draw(ctx context.Context, src, dst []int32, k int, seed uint64) ([]int32, []int32, error) {
//		return u.DrawWith(ctx, u, src, dst, k, seed)
//	}
//
// Errors name the sampler by its registry ID (registry.Module).
type Drawer interface {
	// Prepare is called by the base's Bind after it checked g: the
	// draw's own set-up for g (degrees, alias tables). It may keep g.
	Prepare(ctx context.Context, g *graph.CSR) error
	// DrawPair draws one negative for positive (s, d) of the bound graph
	// of n nodes from r; both ids must be in [0, n). It must read
	// nothing but its arguments and what Prepare set (no state of its
	// own that changes between calls), and be safe for concurrent calls.
	DrawPair(r *rand.Rand, n, s, d int32) (ns, nd int32)
}

// MaxTries is how many draws in a row one negative may take when
// exclude_positives redraws edges and self loops; after as many the base
// gives up with an error (the graph is too dense around the positive).
// With a fraction f of the candidate pairs excluded, an honest draw fails
// with probability f^MaxTries (< 1e-4 for f = 0.9).
const MaxTries = 100

// maxPairs bounds len(src)*k per call, so that offsets stay in int32
// range for every consumer.
const maxPairs = math.MaxInt32

// ctxEvery is how many positives are drawn between checks of ctx.
const ctxEvery = 1 << 14

// Base is what every negative sampler shares: the exclude_positives
// option and the bound graph. Embed it and implement Drawer.
//
// Exclusion: with exclude_positives, a drawn pair (a, b) is redrawn when
// a == b (a self loop) or a→b is an edge of the bound graph (a is listed
// in row b), up to MaxTries draws. Exclusion is directed, as the graph
// is: on a symmetric graph (undirected data, both directions stored, as
// the training graph of an undirected split) that excludes the pair in
// either order; on a directed one the reverse of an edge remains a valid
// negative. The set excluded is the bound graph's edges only: edges held
// out for validation and test are not in it.
type Base struct {
	ExcludePositives bool `toml:"exclude_positives" doc:"redraw a negative that is an edge of the training graph (directed: a→b listed in row b; both orders on a symmetric graph) or a self loop, up to 100 draws, then fail"`

	bound *binding
}

// binding is what Bind keeps of the graph.
type binding struct {
	n      int32
	indptr []int64
	cols   []int32 // every row sorted ascending; nil without exclusion
}

// SetExclude implements Excluder: it sets exclude_positives (before
// Bind).
func (b *Base) SetExclude(on bool) { b.ExcludePositives = on }

// moduleID returns the name errors give d.
func moduleID(d Drawer) string {
	if m, ok := d.(registry.Module); ok {
		return m.StrataModule().ID
	}
	return fmt.Sprintf("negative sampler %T", d)
}

// CheckGraph returns an error, prefixed with id, unless g is a square
// CSR of 1 to MaxInt32 nodes.
func CheckGraph(id string, g *graph.CSR) error {
	switch {
	case g == nil:
		return fmt.Errorf("%s: Bind: nil graph", id)
	case g.NumRows != g.NumCols:
		return fmt.Errorf("%s: Bind: the graph is %dx%d: it must be square (row i lists the sources of node i)", id, g.NumRows, g.NumCols)
	case g.NumRows < 1:
		return fmt.Errorf("%s: Bind: the graph has no nodes to draw negatives from", id)
	case g.NumRows > math.MaxInt32:
		return fmt.Errorf("%s: Bind: %d nodes: node ids of negatives are int32", id, g.NumRows)
	case len(g.Indptr) != g.NumRows+1:
		return fmt.Errorf("%s: Bind: %d row pointers for %d rows", id, len(g.Indptr), g.NumRows)
	}
	return nil
}

// BindWith is Sampler.Bind for a Drawer: it checks g, runs d's Prepare
// and, with exclude_positives, indexes g's edges (rows sorted: g's own
// column ids when they are 32-bit and sorted, else a sorted copy).
func (b *Base) BindWith(ctx context.Context, d Drawer, g *graph.CSR) error {
	id := moduleID(d)
	b.bound = nil
	if err := CheckGraph(id, g); err != nil {
		return err
	}
	if err := d.Prepare(ctx, g); err != nil {
		return fmt.Errorf("%s: Bind: %w", id, err)
	}
	bd := &binding{n: int32(g.NumRows), indptr: g.Indptr}
	if b.ExcludePositives {
		bd.cols = sortedCols(g)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b.bound = bd
	return nil
}

// sortedCols returns g's column ids with every row sorted ascending.
func sortedCols(g *graph.CSR) []int32 {
	if g.Idx32 != nil && rowsSorted(g.Indptr, g.Idx32) {
		return g.Idx32
	}
	cols := make([]int32, g.NNZ())
	for e := range cols {
		cols[e] = int32(g.Col(int64(e)))
	}
	for r := range g.NumRows {
		slices.Sort(cols[g.Indptr[r]:g.Indptr[r+1]])
	}
	return cols
}

func rowsSorted(indptr []int64, cols []int32) bool {
	for r := range len(indptr) - 1 {
		if !slices.IsSorted(cols[indptr[r]:indptr[r+1]]) {
			return false
		}
	}
	return true
}

// hasEdge reports whether a→b is an edge (a is in row b).
func (bd *binding) hasEdge(a, b int32) bool {
	_, ok := slices.BinarySearch(bd.cols[bd.indptr[b]:bd.indptr[b+1]], a)
	return ok
}

// NumNodes returns the node count of the bound graph, 0 before Bind.
func (b *Base) NumNodes() int {
	if b.bound == nil {
		return 0
	}
	return int(b.bound.n)
}

// checkDraw checks Draw's arguments against the binding.
func checkDraw(id string, bd *binding, src, dst []int32, k int) error {
	if bd == nil {
		return fmt.Errorf("%s: Draw before Bind: bind the training graph first", id)
	}
	if k < 1 {
		return fmt.Errorf("%s: k = %d negatives per positive: must be >= 1 (a negative ratio of 0 or less draws nothing; set it to 1 or more)", id, k)
	}
	if len(src) != len(dst) {
		return fmt.Errorf("%s: %d sources but %d destinations: give one source and one destination per positive", id, len(src), len(dst))
	}
	if len(src) > 0 && k > maxPairs/len(src) {
		return fmt.Errorf("%s: k = %d negatives for each of %d positives is over %d pairs: draw the batch in parts (negative.Offset)", id, k, len(src), maxPairs)
	}
	for i := range src {
		for _, e := range [2]struct {
			name string
			v    int32
		}{{"source", src[i]}, {"destination", dst[i]}} {
			if e.v < 0 || e.v >= bd.n {
				return fmt.Errorf("%s: positive %d: %s %d is outside the bound graph's nodes [0, %d)", id, i, e.name, e.v, bd.n)
			}
		}
	}
	return nil
}

// DrawWith is Sampler.Draw for a Drawer: it checks the arguments, then
// draws k negatives per positive, positive i from a PCG stream seeded by
// Offset(seed, i), redrawing excluded pairs (see Base).
func (b *Base) DrawWith(ctx context.Context, d Drawer, src, dst []int32, k int, seed uint64) (nsrc, ndst []int32, err error) {
	id := moduleID(d)
	bd := b.bound
	if err := checkDraw(id, bd, src, dst, k); err != nil {
		return nil, nil, err
	}
	exclude := b.ExcludePositives
	if exclude && bd.cols == nil {
		return nil, nil, fmt.Errorf("%s: exclude_positives was set after Bind: Bind again", id)
	}
	nsrc = make([]int32, len(src)*k)
	ndst = make([]int32, len(src)*k)
	var pcg rand.PCG
	r := rand.New(&pcg)
	for i := range src {
		if i%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
		key := Offset(seed, i)
		pcg.Seed(mix(key), mix(^key))
		for j := i * k; j < (i+1)*k; j++ {
			a, c, err := bd.drawOne(d, r, exclude, src[i], dst[i])
			if err != nil {
				return nil, nil, fmt.Errorf("%s: positive %d (%d→%d): %w", id, i, src[i], dst[i], err)
			}
			nsrc[j], ndst[j] = a, c
		}
	}
	return nsrc, ndst, nil
}

// drawOne draws one negative for (s, d), redrawing excluded pairs.
func (bd *binding) drawOne(d Drawer, r *rand.Rand, exclude bool, s, t int32) (int32, int32, error) {
	for range MaxTries {
		a, c := d.DrawPair(r, bd.n, s, t)
		if a < 0 || a >= bd.n || c < 0 || c >= bd.n {
			return 0, 0, fmt.Errorf("the draw gave (%d, %d), outside the nodes [0, %d)", a, c, bd.n)
		}
		if !exclude || a != c && !bd.hasEdge(a, c) {
			return a, c, nil
		}
	}
	return 0, 0, fmt.Errorf("%d draws in a row were edges of the graph or self loops (exclude_positives): the graph is too dense around this positive; set exclude_positives = false or use a sampler with more candidates", MaxTries)
}

// mix is splitmix64's finalizer: a bijection of uint64 that spreads
// nearby keys over the whole range.
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}
