package cpu

import (
	"context"
	"unsafe"

	"gonum.org/v1/netlib/blas/netlib"

	"strata/core/backend"
	"strata/core/graph"
	"strata/core/tensor"
)

// The LSTM aggregation steps t = 0 .. maxdeg-1 over the rows that still
// have a t-th source. Rows run sorted by degree, descending, so those rows
// are a prefix of the order and each step is one GEMM over a contiguous
// block: gates_t = xw[source t] + b + h_{t-1}·W_hh, then the pointwise cell
// (C, kern_lstm.h). The saved state is step-major: step t of the row at
// rank r is position off[t]+r of gates, cells and hprev (which holds the
// h_{t-1} the step read, zero at t = 0), so the W_hh gradient is one GEMM
// and the backward steps are GEMMs over the same blocks. Every output row
// is written by one goroutine and the GEMMs are deterministic, so results
// do not depend on the thread count.

// lstmSchedule is the step order of an adjacency's rows: order lists the
// rows by degree, descending (ties by row id), rank is its inverse and
// step t covers positions [off[t], off[t+1]) (off has maxdeg+1 entries).
type lstmSchedule struct {
	order, rank []int64
	off         graph.Steps
}

// schedule returns the graph's LSTM step order, built and counted on first
// use.
func (g *Graph) schedule() *lstmSchedule {
	g.schedMu.Lock()
	defer g.schedMu.Unlock()
	if g.sched != nil {
		return g.sched
	}
	order, rank, off := graph.StepOrder(g.fwd.indptr)
	s := &lstmSchedule{order: order, rank: rank, off: off}
	g.sched = s
	bytes := 8 * int64(len(s.order)+len(s.rank)+len(s.off))
	g.bytes += bytes
	g.owner.account(bytes)
	return s
}

// at returns the address of s[i], or nil past the end.
func at[T float](s []T, i int) unsafe.Pointer {
	if i >= len(s) {
		return nil
	}
	return unsafe.Pointer(&s[i])
}

// scratch allocates temporaries through Alloc, so that a backend with a
// capacity (a simulated device) counts them; release frees them.
type scratch struct {
	b  *Backend
	ts []*tensor.Tensor
}

func (s *scratch) alloc(dt tensor.DType, tier tensor.Tier, shape ...int) (*tensor.Tensor, error) {
	t, err := s.b.Alloc(dt, shape, tier)
	if err == nil {
		s.ts = append(s.ts, t)
	}
	return t, err
}

func (s *scratch) release() {
	for _, t := range s.ts {
		s.b.Release(t)
	}
}

// LSTMAggregate runs an LSTM over each destination's sources (see
// backend.Backend). Without saved state it steps through scratch of n_0
// rows (the rows with a source) instead.
func (b *Backend) LSTMAggregate(ctx context.Context, a backend.Adj, xw, whh, bias, out, gates, cells, hprev *tensor.Tensor) error {
	g, dt, h, save, err := chk.LSTMAggregate(a, xw, whh, bias, out, gates, cells, hprev)
	if err != nil {
		return err
	}
	if g.rows == 0 || h == 0 {
		return ctxErr(ctx)
	}
	s := g.schedule()
	sc := scratch{b: b}
	defer sc.release()
	if !save {
		n0, tier := s.off.Rows(0), xw.Tier()
		if gates, err = sc.alloc(dt, tier, n0, 4*h); err == nil {
			if cells, err = sc.alloc(dt, tier, n0, h); err == nil {
				hprev, err = sc.alloc(dt, tier, n0, h)
			}
		}
		if err != nil {
			return err
		}
	}
	if dt == tensor.Float32 {
		return lstmForward(b, ctx, g, s, save, h, fl[float32](xw), fl[float32](whh), fl[float32](bias), fl[float32](out),
			fl[float32](gates), fl[float32](cells), fl[float32](hprev), netlib.Implementation{}.Sgemm)
	}
	return lstmForward(b, ctx, g, s, save, h, fl[float64](xw), fl[float64](whh), fl[float64](bias), fl[float64](out),
		fl[float64](gates), fl[float64](cells), fl[float64](hprev), netlib.Implementation{}.Dgemm)
}

func lstmForward[T float](b *Backend, ctx context.Context, g *Graph, s *lstmSchedule, save bool, h int,
	xw, whh, bias, out, gates, cells, hprev []T, call gemmFunc[T]) error {
	dc, g4 := dtCode(dtOf[T]()), 4*h
	c := &g.fwd
	ip, idx, it, order := &c.indptr[0], c.idxPtr(), c.itCode(), &s.order[0]
	// Rows without sources output zeros.
	for r := s.off.Rows(0); r < g.rows; r++ {
		clear(out[int(s.order[r])*h:][:h])
	}
	if save {
		clear(hprev[:s.off.Rows(0)*h]) // h_{-1} = 0
	}
	// pos returns the offset of step t's first row in a saved tensor of w
	// columns, or 0 in the scratch (one block reused by every step).
	pos := func(t, w int) int {
		if !save {
			return 0
		}
		return int(s.off[t]) * w
	}
	for t := 0; t < s.off.Len(); t++ {
		n, next := s.off.Rows(t), s.off.Rows(t+1)
		gt := gates[pos(t, g4):]
		gp := at(gt, 0)
		if err := b.parallel(ctx, b.rowBounds(int64(n), int64(n*g4)), func(lo, hi int64) {
			cLSTMGather(dc, lo, hi, int64(t), it, ip, idx, order, at(xw, 0), at(bias, 0), int64(g4), gp)
		}); err != nil {
			return err
		}
		var cprev, hnext unsafe.Pointer
		if t > 0 {
			gemm(b, false, false, n, g4, h, 1, hprev[pos(t, h):], h, whh, g4, 1, gt, call)
			cprev = at(cells, pos(t-1, h))
		}
		if next > 0 {
			hnext = at(hprev, pos(t+1, h))
		}
		cout := at(cells, pos(t, h))
		if err := b.parallel(ctx, b.rowBounds(int64(n), int64(n*g4)), func(lo, hi int64) {
			cLSTMCell(dc, lo, hi, int64(h), int64(next), gp, cprev, cout, hnext, at(out, 0), order)
		}); err != nil {
			return err
		}
	}
	return nil
}

// dtOf returns the dtype of T.
func dtOf[T float]() tensor.DType {
	var z T
	if _, ok := any(z).(float32); ok {
		return tensor.Float32
	}
	return tensor.Float64
}

// LSTMAggregateBackward computes dxw and dwhh from dout and the saved
// state (see backend.Backend). It steps backwards through the same blocks,
// with two scratch matrices of n_0 rows (the carried cell gradient and the
// hidden gradient from the next step).
func (b *Backend) LSTMAggregateBackward(ctx context.Context, a backend.Adj, whh, gates, cells, hprev, dout, dxw, dwhh *tensor.Tensor) error {
	g, dt, h, err := chk.LSTMAggregateBackward(a, whh, gates, cells, hprev, dout, dxw, dwhh)
	if err != nil {
		return err
	}
	if h == 0 {
		return ctxErr(ctx)
	}
	s := g.schedule()
	sc := scratch{b: b}
	defer sc.release()
	tier := dxw.Tier()
	dcs, err := sc.alloc(dt, tier, s.off.Rows(0), h)
	if err != nil {
		return err
	}
	dhp, err := sc.alloc(dt, tier, s.off.Rows(1), h)
	if err != nil {
		return err
	}
	if dt == tensor.Float32 {
		return lstmBackward(b, ctx, g, s, h, fl[float32](whh), fl[float32](gates), fl[float32](cells), fl[float32](hprev),
			fl[float32](dout), fl[float32](dxw), fl[float32](dwhh), fl[float32](dcs), fl[float32](dhp), netlib.Implementation{}.Sgemm)
	}
	return lstmBackward(b, ctx, g, s, h, fl[float64](whh), fl[float64](gates), fl[float64](cells), fl[float64](hprev),
		fl[float64](dout), fl[float64](dxw), fl[float64](dwhh), fl[float64](dcs), fl[float64](dhp), netlib.Implementation{}.Dgemm)
}

func lstmBackward[T float](b *Backend, ctx context.Context, g *Graph, s *lstmSchedule, h int,
	whh, gates, cells, hprev, dout, dxw, dwhh, dcs, dhp []T, call gemmFunc[T]) error {
	dc, g4 := dtCode(dtOf[T]()), 4*h
	order := &s.order[0]
	if g.rows == 0 {
		order = nil
	}
	for t := s.off.Len() - 1; t >= 0; t-- {
		if err := ctxErr(ctx); err != nil {
			return err
		}
		n, next := s.off.Rows(t), s.off.Rows(t+1)
		if next > 0 { // dh_t of the rows that run on = dgates_{t+1}·W_hhᵀ
			gemm(b, false, true, next, h, g4, 1, gates[int(s.off[t+1])*g4:], g4, whh, g4, 0, dhp, call)
		}
		var cprev unsafe.Pointer
		if t > 0 {
			cprev = at(cells, int(s.off[t-1])*h)
		}
		gp, cp := at(gates, int(s.off[t])*g4), at(cells, int(s.off[t])*h)
		if err := b.parallel(ctx, b.rowBounds(int64(n), int64(n*g4)), func(lo, hi int64) {
			cLSTMCellBwd(dc, lo, hi, int64(h), int64(next), gp, cp, cprev, at(dhp, 0), at(dout, 0), order, at(dcs, 0))
		}); err != nil {
			return err
		}
	}
	// dW_hh = Σ_t h_{t-1}ᵀ·dgates_t over the steps t ≥ 1 (h_{-1} = 0).
	n0 := s.off.Rows(0)
	if rest := int(g.nnz) - n0; rest > 0 {
		gemm(b, true, false, h, g4, rest, 1, hprev[n0*h:], h, gates[n0*g4:], g4, 0, dwhh, call)
	} else {
		clear(dwhh)
	}
	// dxw: every source sums the gate gradients of its edges.
	if g.cols == 0 {
		return ctxErr(ctx)
	}
	bc := g.transposed()
	bip, bidx, it, perm := &bc.indptr[0], bc.idxPtr(), bc.itCode(), bc.permPtr()
	ip, rank, off := &g.fwd.indptr[0], (*int64)(nil), &s.off[0]
	if g.rows > 0 {
		rank = &s.rank[0]
	}
	return b.parallel(ctx, bc.chunks(g4), func(lo, hi int64) {
		cLSTMScatter(dc, lo, hi, it, bip, bidx, perm, ip, rank, off, int64(g4), at(gates, 0), at(dxw, 0))
	})
}
