//go:build cuda

package cuda

import (
	"context"

	"strata/core/backend"
	"strata/core/graph"
	"strata/core/tensor"
)

// The LSTM aggregation runs the CPU backend's schedule (core/backend/cpu,
// lstm.go): rows sorted by degree, descending, so the rows still running
// at step t are a prefix of n_t rows, and every step is a gather kernel, a
// cuBLAS GEMM h_{t-1}·W_hh over that prefix and a cell kernel. The saved
// state is step-major: step t of the row at rank r is position off[t]+r.

// lstmSchedule is the step order on the host and on the device.
type lstmSchedule struct {
	off                 graph.Steps // host: off[t] = first position of step t; maxdeg+1 entries
	order, rank, offDev uintptr
}

// schedule builds the step order on first use (graph.StepOrder) and
// uploads it.
func (g *Graph) schedule() (*lstmSchedule, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sched != nil {
		return g.sched, nil
	}
	order, rank, off := graph.StepOrder(g.hostIndptr)
	s := &lstmSchedule{off: off}
	var err error
	if s.order, err = g.upload(bytesOf(order)); err != nil {
		return nil, err
	}
	if s.rank, err = g.upload(bytesOf(rank)); err != nil {
		return nil, err
	}
	if s.offDev, err = g.upload(bytesOf(s.off)); err != nil {
		return nil, err
	}
	g.sched = s
	return s, nil
}

// LSTMAggregate runs an LSTM over each destination's sources (see
// backend.Backend). Without saved state it steps through scratch of n_0
// rows instead.
func (b *Backend) LSTMAggregate(ctx context.Context, a backend.Adj, xw, whh, bias, out, gates, cells, hprev *tensor.Tensor) error {
	g, dt, h, save, err := b.chk.LSTMAggregate(a, xw, whh, bias, out, gates, cells, hprev)
	if err != nil {
		return err
	}
	if g.rows == 0 || h == 0 {
		return ctxErr(ctx)
	}
	defer b.enter()()
	s, err := g.schedule()
	if err != nil {
		return err
	}
	sc := scratch{b: b}
	defer sc.release()
	es := uintptr(dt.Size())
	H, G4 := int64(h), int64(4*h)
	var gp0, cp0, hp0 uintptr
	if save {
		gp0, cp0, hp0 = ptr(gates), ptr(cells), ptr(hprev)
	} else {
		n0 := int64(s.off.Rows(0))
		if gp0, err = sc.alloc(DeviceTier, G4*n0*int64(es)); err != nil {
			return err
		}
		if cp0, err = sc.alloc(DeviceTier, 2*H*n0*int64(es)); err != nil { // cells: two blocks, alternating
			return err
		}
		if hp0, err = sc.alloc(DeviceTier, 2*H*n0*int64(es)); err != nil {
			return err
		}
	}
	// pos is the address of step t's first row in a saved matrix of w
	// columns at base; in scratch, steps alternate between two blocks.
	pos := func(base uintptr, t int, w int64) uintptr {
		if save {
			return base + uintptr(s.off[t]*w)*es
		}
		return base + uintptr(int64(t%2)*int64(s.off.Rows(0))*w)*es
	}
	// Rows without sources output zeros: clear out first (rows with
	// sources are overwritten by their last step).
	if err := b.launch("fill_"+dt.Short(), int64(out.Numel()), ptr(out), int64(out.Numel()), 0.0); err != nil {
		return err
	}
	if save && s.off.Rows(0) > 0 { // h_{-1} = 0
		if err := b.launch("fill_"+dt.Short(), int64(s.off.Rows(0))*H, hp0, int64(s.off.Rows(0))*H, 0.0); err != nil {
			return err
		}
	}
	f64 := dt == tensor.Float64
	for t := 0; t < s.off.Len(); t++ {
		if err := ctxErr(ctx); err != nil {
			return err
		}
		n, next := int64(s.off.Rows(t)), int64(s.off.Rows(t+1))
		gt := gp0
		if save {
			gt = pos(gp0, t, G4)
		}
		if err := b.launch("lstm_gather_"+dt.Short()+"_"+g.idxType.Short(), n*G4, n, int64(t), g.fwd.indptr, g.fwd.idx,
			s.order, ptr(xw), ptr(bias), G4, gt); err != nil {
			return err
		}
		var cprev, hnext uintptr
		if t > 0 {
			if err := b.gemmRaw(f64, false, false, int(n), int(G4), h, 1, pos(hp0, t, H), h, ptr(whh), int(G4), 1, gt, int(G4)); err != nil {
				return err
			}
			cprev = pos(cp0, t-1, H)
		}
		if next > 0 {
			hnext = pos(hp0, t+1, H)
		}
		if err := b.launch("lstm_cell_"+dt.Short(), n*H, n, H, next, gt, cprev, pos(cp0, t, H), hnext, ptr(out), s.order); err != nil {
			return err
		}
	}
	return nil
}

// LSTMAggregateBackward computes dxw and dwhh from dout and the saved
// state (see backend.Backend).
func (b *Backend) LSTMAggregateBackward(ctx context.Context, a backend.Adj, whh, gates, cells, hprev, dout, dxw, dwhh *tensor.Tensor) error {
	g, dt, h, err := b.chk.LSTMAggregateBackward(a, whh, gates, cells, hprev, dout, dxw, dwhh)
	if err != nil {
		return err
	}
	if h == 0 {
		return ctxErr(ctx)
	}
	defer b.enter()()
	s, err := g.schedule()
	if err != nil {
		return err
	}
	sc := scratch{b: b}
	defer sc.release()
	es := int64(dt.Size())
	H, G4 := int64(h), int64(4*h)
	dcs, err := sc.alloc(DeviceTier, max(int64(s.off.Rows(0)), 1)*H*es)
	if err != nil {
		return err
	}
	dhp, err := sc.alloc(DeviceTier, max(int64(s.off.Rows(1)), 1)*H*es)
	if err != nil {
		return err
	}
	f64 := dt == tensor.Float64
	at := func(base uintptr, t int, w int64) uintptr { return base + uintptr(s.off[t]*w*es) }
	for t := s.off.Len() - 1; t >= 0; t-- {
		if err := ctxErr(ctx); err != nil {
			return err
		}
		n, next := int64(s.off.Rows(t)), int64(s.off.Rows(t+1))
		if next > 0 { // dh_t of the rows that run on = dgates_{t+1}·W_hhᵀ
			if err := b.gemmRaw(f64, false, true, int(next), h, int(G4), 1, at(ptr(gates), t+1, G4), int(G4), ptr(whh), int(G4), 0, dhp, h); err != nil {
				return err
			}
		}
		var cprev uintptr
		if t > 0 {
			cprev = at(ptr(cells), t-1, H)
		}
		if err := b.launch("lstm_cell_bwd_"+dt.Short(), n*H, n, H, next, at(ptr(gates), t, G4), at(ptr(cells), t, H), cprev,
			dhp, ptr(dout), s.order, dcs); err != nil {
			return err
		}
	}
	// dW_hh = Σ_t h_{t-1}ᵀ·dgates_t over the steps t ≥ 1 (h_{-1} = 0).
	n0 := int64(s.off.Rows(0))
	if rest := g.nnz - n0; rest > 0 {
		if err := b.gemmRaw(f64, true, false, h, int(G4), int(rest), 1, ptr(hprev)+uintptr(n0*H*es), h,
			ptr(gates)+uintptr(n0*G4*es), int(G4), 0, ptr(dwhh), int(G4)); err != nil {
			return err
		}
	} else if err := b.launch("fill_"+dt.Short(), H*G4, ptr(dwhh), H*G4, 0.0); err != nil {
		return err
	}
	if g.cols == 0 {
		return ctxErr(ctx)
	}
	return b.launch("lstm_scatter_"+dt.Short()+"_"+g.idxType.Short(), int64(g.cols)*G4, int64(g.cols), g.bwd.indptr, g.bwd.idx,
		g.bwd.perm, g.fwd.indptr, s.rank, s.offDev, G4, ptr(gates), ptr(dxw))
}
