//go:build cuda

package cuda

import (
	"context"
	"fmt"
	"math"
	"sync"

	"strata/core/backend"
	"strata/core/backend/argcheck"
	"strata/core/graph"
	"strata/core/tensor"
)

// orientation is one CSR orientation of an adjacency on the device.
type orientation struct {
	rows   int
	indptr uintptr // [rows+1] int64
	idx    uintptr // [nnz] column ids (idxType)
	perm   uintptr // [nnz] int64 original edge ids (transposed orientation only)

	// Rows of more than Backend.heavy entries, split into chunks: heavy
	// row i is hrow[i], its chunks hoff[i] .. hoff[i+1], chunk c covers
	// entries [ck0[c], ck1[c]). nh = 0 when there are none.
	nh, nch              int64
	hrow, hoff, ck0, ck1 uintptr
}

// heavyChunks lists the rows of more than heavy entries and their chunks.
func heavyChunks(indptr []int64, heavy int64) (hrow, hoff, ck0, ck1 []int64) {
	hoff = []int64{0}
	for r := range len(indptr) - 1 {
		k0, k1 := indptr[r], indptr[r+1]
		if k1-k0 <= heavy {
			continue
		}
		hrow = append(hrow, int64(r))
		for k := k0; k < k1; k += heavy {
			ck0, ck1 = append(ck0, k), append(ck1, min(k+heavy, k1))
		}
		hoff = append(hoff, int64(len(ck0)))
	}
	return hrow, hoff, ck0, ck1
}

// uploadHeavy places the heavy-row chunks of an orientation.
func (g *Graph) uploadHeavy(o *orientation, indptr []int64) error {
	hrow, hoff, ck0, ck1 := heavyChunks(indptr, g.owner.heavy)
	if len(hrow) == 0 {
		return nil
	}
	o.nh, o.nch = int64(len(hrow)), int64(len(ck0))
	for _, a := range []struct {
		dst *uintptr
		v   []int64
	}{{&o.hrow, hrow}, {&o.hoff, hoff}, {&o.ck0, ck0}, {&o.ck1, ck1}} {
		p, err := g.upload(bytesOf(a.v))
		if err != nil {
			return err
		}
		*a.dst = p
	}
	return nil
}

// heavyArg is the kernels' heavy-row threshold for o: 0 when o has no
// heavy rows, so that the row kernels skip nothing.
func (g *Graph) heavyArg(o *orientation) int64 {
	if o.nh == 0 {
		return 0
	}
	return g.owner.heavy
}

// Graph is an adjacency on the device: the CSR as uploaded (rows =
// destinations), the destination of every edge, and the transpose with its
// edge permutation, so that Aᵀ products and reductions into sources need
// no atomics.
type Graph struct {
	owner      *Backend
	tier       tensor.Tier
	rows, cols int
	nnz        int64
	idxType    tensor.DType // Int32, or Int64 for more than 2^31-1 rows or columns
	fwd, bwd   orientation
	erow       uintptr // [nnz] destination row of each edge (idxType)
	vals32     uintptr // [nnz] float32 edge values; 0 = none
	vals64     uintptr // float64 copy, made on first use
	bufs       []*buffer
	hostIndptr []int64 // for the LSTM schedule

	mu    sync.Mutex
	sched *lstmSchedule
}

var _ backend.Adj = (*Graph)(nil)

// Rows returns the number of destinations.
func (g *Graph) Rows() int { return g.rows }

// Cols returns the number of sources.
func (g *Graph) Cols() int { return g.cols }

// NNZ returns the number of edges.
func (g *Graph) NNZ() int64 { return g.nnz }

// Tier returns the tier holding the adjacency.
func (g *Graph) Tier() tensor.Tier { return g.tier }

// convert copies integer ids to another integer type.
func convert[From, To int32 | int64](ids []From) []To {
	out := make([]To, len(ids))
	for i, v := range ids {
		out[i] = To(v)
	}
	return out
}

// upload places a host slice in the graph's tier and keeps its buffer.
func (g *Graph) upload(data []byte) (uintptr, error) {
	bf, err := g.owner.allocRaw(g.tier, int64(len(data)))
	if err != nil {
		return 0, err
	}
	g.bufs = append(g.bufs, bf)
	if err := g.owner.toDevice(bf, 0, data); err != nil {
		return 0, err
	}
	return bf.ptr, nil
}

// UploadGraph copies g to the tier with its transpose (graph.Transpose)
// and the destination of every edge.
func (b *Backend) UploadGraph(cg *graph.CSR, tier tensor.Tier) (backend.Adj, error) {
	const op = "UploadGraph"
	if _, err := b.poolOf(tier); err != nil {
		return nil, errf(op, "%v", err)
	}
	if err := argcheck.CSR(cg); err != nil {
		return nil, b.chk.Wrap(err)
	}
	nnz := cg.NNZ()
	g := &Graph{owner: b, tier: tier, rows: cg.NumRows, cols: cg.NumCols, nnz: nnz, idxType: tensor.Int32,
		hostIndptr: append([]int64(nil), cg.Indptr...)}
	if max(cg.NumRows, cg.NumCols) > math.MaxInt32 {
		g.idxType = tensor.Int64
	}
	// The transpose: rows = sources, columns = destinations, perm = edge
	// ids (edge values are read through perm, so it carries none).
	t, perm := graph.Transpose(&graph.CSR{NumRows: cg.NumRows, NumCols: cg.NumCols, Indptr: cg.Indptr, Idx32: cg.Idx32, Idx64: cg.Idx64})
	erow := make([]int64, nnz)
	for r := range cg.NumRows {
		for e := cg.Indptr[r]; e < cg.Indptr[r+1]; e++ {
			erow[e] = int64(r)
		}
	}
	defer b.enter()()
	ok := false
	defer func() {
		if !ok {
			g.release()
		}
	}()
	// idx uploads ids in the graph's index type, converting only when the
	// CSR holds the other one.
	idx := func(ids32 []int32, ids64 []int64) (uintptr, error) {
		switch {
		case g.idxType == tensor.Int32 && ids64 == nil:
			return g.upload(bytesOf(ids32))
		case g.idxType == tensor.Int64 && ids64 != nil:
			return g.upload(bytesOf(ids64))
		case g.idxType == tensor.Int64:
			return g.upload(bytesOf(convert[int32, int64](ids32)))
		}
		return g.upload(bytesOf(convert[int64, int32](ids64)))
	}
	var err error
	steps := []func() error{
		func() error { g.fwd.indptr, err = g.upload(bytesOf(cg.Indptr)); return err },
		func() error { g.fwd.idx, err = idx(cg.Idx32, cg.Idx64); return err },
		func() error { g.erow, err = idx(nil, erow); return err },
		func() error { g.bwd.indptr, err = g.upload(bytesOf(t.Indptr)); return err },
		func() error { g.bwd.idx, err = idx(t.Idx32, t.Idx64); return err },
		func() error { g.bwd.perm, err = g.upload(bytesOf(perm)); return err },
	}
	if cg.Values != nil {
		steps = append(steps, func() error { g.vals32, err = g.upload(bytesOf(cg.Values)); return err })
	}
	steps = append(steps, func() error { return g.uploadHeavy(&g.fwd, cg.Indptr) },
		func() error { return g.uploadHeavy(&g.bwd, t.Indptr) })
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, errf(op, "%v", err)
		}
	}
	g.fwd.rows, g.bwd.rows = cg.NumRows, cg.NumCols
	ok = true
	return g, nil
}

// ReleaseGraph frees an adjacency's device arrays.
func (b *Backend) ReleaseGraph(a backend.Adj) {
	if g, ok := a.(*Graph); ok && g.owner == b {
		g.release()
	}
}

func (g *Graph) release() {
	for _, bf := range g.bufs {
		g.owner.releaseRaw(bf)
	}
	g.bufs = nil
}

// graphArg returns a live adjacency of this backend.
func (b *Backend) graphArg(op string, a backend.Adj) (*Graph, error) {
	g, ok := a.(*Graph)
	if !ok || g == nil || g.owner != b {
		return nil, errf(op, "adjacency %T was not uploaded by this cuda backend", a)
	}
	if g.bufs == nil && g.nnz+int64(g.rows) > 0 {
		return nil, errf(op, "adjacency was released")
	}
	return g, nil
}

// values returns the edge values in dtype dt, converting them to float64
// on first use; 0 when the adjacency has none.
func (g *Graph) values(dt tensor.DType) (uintptr, error) {
	if g.vals32 == 0 || dt == tensor.Float32 {
		return g.vals32, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.vals64 == 0 {
		bf, err := g.owner.allocRaw(g.tier, 8*g.nnz)
		if err != nil {
			return 0, err
		}
		g.bufs = append(g.bufs, bf)
		if err := g.owner.toDouble(tensor.Float32, g.vals32, bf.ptr, g.nnz); err != nil {
			return 0, err
		}
		g.vals64 = bf.ptr
	}
	return g.vals64, nil
}

// orientation returns the CSR as uploaded, or its transpose.
func (g *Graph) orientation(trans bool) *orientation {
	if trans {
		return &g.bwd
	}
	return &g.fwd
}

func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	return nil
}

// SpMM computes y = A·x + beta·y, or Aᵀ·x + beta·y when trans is set.
func (b *Backend) SpMM(ctx context.Context, a backend.Adj, trans bool, w, x *tensor.Tensor, beta float64, y *tensor.Tensor) error {
	g, dt, h, err := b.chk.SpMM(a, trans, w, x, y)
	if err != nil {
		return err
	}
	o, out, f := g.orientation(trans), y.Rows(), x.Cols()
	defer b.enter()()
	mode, wp := int64(0), ptr(w)
	if w == nil {
		if wp, err = g.values(dt); err != nil {
			return err
		}
	}
	if wp != 0 {
		mode = 1
		if trans {
			mode = 2
		}
	}
	if out == 0 || f == 0 {
		return ctxErr(ctx)
	}
	kn := dt.Short() + "_" + g.idxType.Short()
	H, C := int64(h), int64(f/h)
	if err := b.launch("spmm_"+kn, int64(out)*int64(f), o.indptr, o.idx, o.perm, wp, mode, H, C, ptr(x), beta, ptr(y),
		int64(out), g.heavyArg(o)); err != nil || o.nh == 0 {
		return err
	}
	sc := scratch{b: b}
	defer sc.release()
	part, err := sc.alloc(DeviceTier, o.nch*int64(f)*int64(dt.Size()))
	if err != nil {
		return err
	}
	if err := b.launch("spmm_chunk_"+kn, o.nch*int64(f), o.ck0, o.ck1, o.idx, o.perm, wp, mode, H, C, ptr(x), part, o.nch); err != nil {
		return err
	}
	return b.launch("spmm_heavy_"+dt.Short(), o.nh*int64(f), o.hrow, o.hoff, part, beta, ptr(y), o.nh, int64(f))
}

// Row reduction modes of rowReduce (see kernels.cu).
const (
	reduceSum int64 = iota
	reduceMax
	reduceDot
)

// rowReduce writes out[r,h] = the reduction over the entries of row r of
// o of the edge values v (and v2 for reduceDot), [E,H] in edge order.
func (b *Backend) rowReduce(g *Graph, o *orientation, mode int64, dt tensor.DType, v, v2, out uintptr, h int64) error {
	s := dt.Short()
	if err := b.launch("row_reduce_"+s, int64(o.rows)*h, mode, o.indptr, o.perm, v, v2, out, int64(o.rows), h, g.heavyArg(o)); err != nil || o.nh == 0 {
		return err
	}
	sc := scratch{b: b}
	defer sc.release()
	part, err := sc.alloc(DeviceTier, o.nch*h*int64(dt.Size()))
	if err != nil {
		return err
	}
	if err := b.launch("row_chunk_"+s, o.nch*h, mode, o.ck0, o.ck1, o.perm, v, v2, part, o.nch, h); err != nil {
		return err
	}
	return b.launch("row_heavy_"+s, o.nh*h, mode, o.hrow, o.hoff, part, out, o.nh, h)
}

// SpMMMax computes the row-wise max over sources and its argmax.
func (b *Backend) SpMMMax(ctx context.Context, a backend.Adj, x, y, argmax *tensor.Tensor) error {
	g, dt, err := b.chk.SpMMMax(a, x, y, argmax)
	if err != nil {
		return err
	}
	f := x.Cols()
	defer b.enter()()
	n := int64(g.rows) * int64(f)
	return b.launch("spmm_max_"+dt.Short()+"_"+g.idxType.Short()+"_"+argmax.DType().Short(), n, g.fwd.indptr, g.fwd.idx,
		ptr(x), ptr(y), ptr(argmax), int64(g.rows), int64(f))
}

var _ backend.SegmentSelector = (*Backend)(nil)

// SegmentSelect implements backend.SegmentSelector: one thread per row
// and column ranks the row's values (O(d²) each).
func (b *Backend) SegmentSelect(ctx context.Context, a backend.Adj, q float64, nth int, e, out, idx *tensor.Tensor) error {
	g, dt, cols, err := b.chk.SegmentSelect(a, e, out, idx)
	if err != nil {
		return err
	}
	if !(q >= 0 && q <= 1) {
		return b.chk.Errf("SegmentSelect", "q = %g outside [0,1]", q)
	}
	defer b.enter()()
	n := int64(g.rows) * int64(cols)
	return b.launch("segment_select_"+dt.Short()+"_"+idx.DType().Short(), n, g.fwd.indptr, ptr(e), ptr(out), ptr(idx),
		int64(g.rows), int64(cols), q, int64(nth))
}

var _ backend.SegmentMultiplier = (*Backend)(nil)

// SegmentProd implements backend.SegmentMultiplier: one thread per row and
// column multiplies the row's in-edge values.
func (b *Backend) SegmentProd(ctx context.Context, a backend.Adj, e, out *tensor.Tensor) error {
	g, dt, cols, err := b.chk.SegmentProd(a, e, out)
	if err != nil {
		return err
	}
	defer b.enter()()
	n := int64(g.rows) * int64(cols)
	return b.launch("segment_prod_"+dt.Short(), n, g.fwd.indptr, ptr(e), ptr(out), int64(g.rows), int64(cols))
}

// SegmentProdBackward implements backend.SegmentMultiplier: one thread per
// row and column counts the row's zeros, multiplies the non-zero factors
// and writes every edge's product of the others.
func (b *Backend) SegmentProdBackward(ctx context.Context, a backend.Adj, e, dout, de *tensor.Tensor) error {
	g, dt, cols, err := b.chk.SegmentProdBackward(a, e, dout, de)
	if err != nil {
		return err
	}
	defer b.enter()()
	n := int64(g.rows) * int64(cols)
	return b.launch("segment_prod_bwd_"+dt.Short(), n, g.fwd.indptr, ptr(e), ptr(dout), ptr(de), int64(g.rows), int64(cols))
}

// SDDMM computes out[e,h] = <x[dst(e)] head h, y[src(e)] head h>.
func (b *Backend) SDDMM(ctx context.Context, a backend.Adj, x, y, out *tensor.Tensor) error {
	g, dt, h, err := b.chk.SDDMM(a, x, y, out)
	if err != nil {
		return err
	}
	defer b.enter()()
	return b.launch("sddmm_"+dt.Short()+"_"+g.idxType.Short(), g.nnz*int64(h), g.erow, g.fwd.idx, ptr(x), ptr(y), ptr(out),
		g.nnz, int64(h), int64(x.Cols()/h))
}

// UAddV computes out[e,h] = u[src(e),h] + v[dst(e),h].
func (b *Backend) UAddV(ctx context.Context, a backend.Adj, u, v, out *tensor.Tensor) error {
	g, dt, h, err := b.chk.UAddV(a, u, v, out)
	if err != nil {
		return err
	}
	defer b.enter()()
	return b.launch("uaddv_"+dt.Short()+"_"+g.idxType.Short(), g.nnz*int64(h), g.erow, g.fwd.idx, ptr(u), ptr(v), ptr(out),
		g.nnz, int64(h))
}

// EdgeReduce sums edge values into destinations, or into sources through
// the transposed CSR and its edge permutation.
func (b *Backend) EdgeReduce(ctx context.Context, a backend.Adj, toSrc bool, e, out *tensor.Tensor) error {
	g, dt, h, err := b.chk.EdgeReduce(a, toSrc, e, out)
	if err != nil {
		return err
	}
	o := g.orientation(toSrc)
	defer b.enter()()
	return b.rowReduce(g, o, reduceSum, dt, ptr(e), 0, ptr(out), int64(h))
}

// EdgeSoftmax normalises scores over the edges of each destination.
func (b *Backend) EdgeSoftmax(ctx context.Context, a backend.Adj, scores, out *tensor.Tensor) error {
	g, dt, h, err := b.chk.EdgeSoftmax(a, scores, out)
	if err != nil {
		return err
	}
	defer b.enter()()
	sc := scratch{b: b}
	defer sc.release()
	H, name := int64(h), dt.Short()+"_"+g.idxType.Short()
	rowmax, err := sc.alloc(DeviceTier, int64(g.rows)*H*int64(dt.Size()))
	if err != nil {
		return err
	}
	rowsum, err := sc.alloc(DeviceTier, int64(g.rows)*H*int64(dt.Size()))
	if err != nil {
		return err
	}
	if err := b.rowReduce(g, &g.fwd, reduceMax, dt, ptr(scores), 0, rowmax, H); err != nil {
		return err
	}
	if err := b.launch("edge_exp_"+name, g.nnz*H, g.erow, ptr(scores), rowmax, ptr(out), g.nnz, H); err != nil {
		return err
	}
	if err := b.rowReduce(g, &g.fwd, reduceSum, dt, ptr(out), 0, rowsum, H); err != nil {
		return err
	}
	return b.launch("edge_div_"+name, g.nnz*H, g.erow, rowsum, ptr(out), g.nnz, H)
}

// EdgeSoftmaxBackward computes dscores = out·(dout − Σ_row out·dout).
func (b *Backend) EdgeSoftmaxBackward(ctx context.Context, a backend.Adj, out, dout, dscores *tensor.Tensor) error {
	g, dt, h, err := b.chk.EdgeSoftmaxBackward(a, out, dout, dscores)
	if err != nil {
		return err
	}
	defer b.enter()()
	sc := scratch{b: b}
	defer sc.release()
	H := int64(h)
	d, err := sc.alloc(DeviceTier, int64(g.rows)*H*int64(dt.Size()))
	if err != nil {
		return err
	}
	if err := b.rowReduce(g, &g.fwd, reduceDot, dt, ptr(out), ptr(dout), d, H); err != nil {
		return err
	}
	return b.launch("edge_softmax_bwd_"+dt.Short()+"_"+g.idxType.Short(), g.nnz*H, g.erow, ptr(out), ptr(dout), d, ptr(dscores), g.nnz, H)
}
