package chunked

import (
	"context"
	"fmt"
	"strings"

	"strata/core/backend"
	"strata/core/engine"
	"strata/core/tensor"
	"strata/plugins/strategy/internal/chunkplan"
	"strata/plugins/strategy/internal/hosttier"
)

// chunked.intermediates = "split" is HongTu's recomputation-caching
// hybrid within a layer (§4.2, Fig. 4c): the forward keeps on the host
// only the outputs of the layer's aggregations (one row per destination,
// O(|V|) per layer), and the backward restores them and reruns the ops
// after them (the update), and before them only what the backward of the
// pre-aggregation part reads (engine.Program.Split). A layer whose
// backward reads edge-sized values (attention) falls back to
// recomputation, as in the paper.

// planSplit decides, for chunked.intermediates = "split" and "hybrid",
// which layers can split (r.canSplit[l] non-nil) and why the others
// cannot (r.splitWhy); with "split" they all split (r.split), with
// "hybrid" those the price chooses (chooseIntermediates). The plan is the
// layer's structure: it is made on a dry binding of a small block (every
// row space distinct) and checked again on every chunk's program.
func (r *chunkedRun) planSplit() error {
	r.canSplit = make([]*engine.SplitPlan, len(r.layers))
	r.splitWhy = make([]string, len(r.layers))
	r.keptBufs = make([][]engine.KeptBuffer, len(r.layers))
	for l, lg := range r.layers {
		sz, err := engine.NewSizer(lg, r.e.DT)
		if err != nil {
			return fmt.Errorf("chunked: sizing layer %d: %w", l, err)
		}
		shape := engine.BlockShape{Dst: 2, Src: 3, Edges: map[string]int64{}, Degrees: map[string]engine.Degrees{}}
		for name := range r.used[l] {
			shape.Edges[name], shape.Degrees[name] = 4, engine.Degrees{Rows1: 2, Rows2: 2, Max: 2}
		}
		sp, size, err := sz.Split(shape, r.layerUsage(l))
		if err != nil {
			return fmt.Errorf("chunked: splitting layer %d: %w", l, err)
		}
		if !sp.Applies {
			r.splitWhy[l] = sp.Reason
			continue
		}
		r.canSplit[l], r.keptBufs[l] = &sp, size.Buffers
	}
	if r.opts.Intermediates == "split" {
		r.split = r.canSplit
	}
	return nil
}

// splitOpen reports whether layer l may still be chosen to split: a
// "hybrid" run before its choice (chooseIntermediates), at a layer that
// can split. The peak estimate sizes such a layer both ways.
func (r *chunkedRun) splitOpen(l int) bool {
	return r.split == nil && r.canSplit != nil && r.canSplit[l] != nil
}

// splitOf returns the split plan of a chunk's program of layer l, which
// must agree with the layer's (planSplit).
func (r *chunkedRun) splitOf(l int, p *engine.Program) (engine.SplitPlan, error) {
	sp := p.Split()
	if want := r.split[l]; !sp.Applies || sp.NeedsInput != want.NeedsInput || sp.DstRows != want.DstRows {
		return sp, fmt.Errorf("chunked: layer %d splits differently over this chunk (applies %v, reads its input rows %v, its destinations' %v; the layer: %v, %v): %s",
			l, sp.Applies, sp.NeedsInput, sp.DstRows, want.NeedsInput, want.DstRows, sp.Reason)
	}
	return sp, nil
}

// splitAnnouncement says which input rows each splitting layer's
// backward loads, and with chunked.intermediates = "split" which layers
// fall back to recomputation and why ("" when no layer splits and the
// mode is not "split").
func (r *chunkedRun) splitAnnouncement() string {
	var parts []string
	for l := range r.layers {
		switch sp := r.splitAt(l); {
		case l == 0 && r.fixed != nil: // its chunks do not run (precompute.go)
		case sp == nil && r.opts.Intermediates == "split":
			parts = append(parts, fmt.Sprintf("layer %d recomputes (%s)", l, r.splitWhy[l]))
		case sp == nil:
		case sp.NeedsInput:
			parts = append(parts, fmt.Sprintf("layer %d keeps its aggregations and reloads its input rows", l))
		case sp.DstRows:
			parts = append(parts, fmt.Sprintf("layer %d keeps its aggregations and loads its destinations' rows", l))
		default:
			parts = append(parts, fmt.Sprintf("layer %d keeps its aggregations and loads no input row", l))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; split: " + strings.Join(parts, "; ")
}

// splitAt returns layer l's split when it splits in this run (nil
// otherwise).
func (r *chunkedRun) splitAt(l int) *engine.SplitPlan {
	if r.split == nil {
		return nil
	}
	return r.split[l]
}

// splitFallback returns, with chunked.intermediates = "split", why each
// layer recomputes ("" where it splits); nil in the other modes, whose
// results keep their fields.
func (r *chunkedRun) splitFallback() []string {
	if r.opts.Intermediates != "split" {
		return nil
	}
	return r.splitWhy
}

// isSplit reports whether layer l keeps its aggregations' outputs.
func (r *chunkedRun) isSplit(l int) bool { return r.splitAt(l) != nil }

// keptInFile reports whether a split keeps buffer kb in the host file:
// with chunked.host_file, a matrix of a row per destination in the run's
// dtype (a max aggregation's winners, int32, stay in RAM).
func (r *chunkedRun) keptInFile(kb engine.KeptBuffer) bool {
	return r.opts.HostFile != "" && kb.Cols > 0 && kb.DType == r.e.DT
}

// keptFileWidths returns the widths of the host file's matrices for the
// buffers the split layers keep (keptInFile), in allocKept's order.
func (r *chunkedRun) keptFileWidths() []int {
	var out []int
	for l := range r.layers {
		if !r.isSplit(l) {
			continue
		}
		for _, kb := range r.keptBufs[l] {
			if r.keptInFile(kb) {
				out = append(out, kb.Cols)
			}
		}
	}
	return out
}

// allocKept gives every buffer a split layer keeps in the host file
// (keptInFile) a matrix of a row per node in arena: each chunk's
// forward writes its destinations' rows, its backward reads them back,
// so the aggregations' outputs take no RAM (at R-MAT 2^20 GCN's layer
// 0 keeps 512 MB).
func (r *chunkedRun) allocKept(arena *hosttier.Arena) error {
	r.keptRows = make([][]hosttier.Rows, len(r.layers))
	for l := range r.layers {
		if !r.isSplit(l) {
			continue
		}
		r.keptRows[l] = make([]hosttier.Rows, len(r.keptBufs[l]))
		for i, kb := range r.keptBufs[l] {
			if !r.keptInFile(kb) {
				continue
			}
			m, err := arena.Matrix(r.e.DS.NumNodes, kb.Cols)
			if err != nil {
				return err
			}
			r.keptRows[l][i] = m
		}
	}
	return nil
}

// keptAt returns the host file's matrix of layer l's kept buffer i (nil:
// the buffer is kept in RAM).
func (r *chunkedRun) keptAt(l, i int) hosttier.Rows {
	if l >= len(r.keptRows) || i >= len(r.keptRows[l]) {
		return nil
	}
	return r.keptRows[l][i]
}

// keep copies to the host, after a training forward of layer l over
// chunk c, what its backward restores: every saved tensor (cache) or the
// aggregations' outputs (split; with a host file, into its matrices);
// nothing when the layer recomputes.
func (r *chunkedRun) keep(l int, c *chunkplan.Chunk, p *engine.Program) error {
	var ts []*tensor.Tensor
	switch {
	case r.cache[l]:
		ts = p.Saved()
	case r.isSplit(l):
		sp, err := r.splitOf(l, p)
		if err != nil {
			return err
		}
		ts = p.SplitSaved(sp)
	default:
		return nil
	}
	be := backend.ForPurpose(r.e.Be, purposeIntermediates)
	bufs := make([]any, len(ts))
	for i, t := range ts {
		var err error
		if m := r.keptAt(l, i); m != nil && !r.cache[l] {
			err = r.putRows(m, c.Dst, t)
		} else {
			bufs[i], err = download(be, t)
		}
		if err != nil {
			return err
		}
	}
	if r.kept == nil {
		r.kept = make([]int64, len(r.layers))
	}
	if c == r.plan.Chunks[r.plan.Sched[0][0]] { // an epoch's first chunk
		r.kept[l] = 0
	}
	for _, t := range ts {
		r.kept[l] += t.Bytes()
	}
	r.saved[l][c.Id] = bufs
	return nil
}

// restore gives layer l's program over chunk c, before its backward, the
// state of the forward in mode m: the kept tensors uploaded back (and,
// with split, the ops after the aggregations rerun), or the whole
// forward run again.
func (r *chunkedRun) restore(ctx context.Context, l int, c *chunkplan.Chunk, p *engine.Program, m engine.Mode) error {
	if !r.cache[l] && !r.isSplit(l) {
		return p.Forward(ctx, m)
	}
	be := backend.ForPurpose(r.e.Be, purposeIntermediates)
	bufs := r.saved[l][c.Id]
	delete(r.saved[l], c.Id)
	if r.cache[l] {
		if err := uploadAll(be, p.Saved(), bufs); err != nil {
			return err
		}
		return p.Resume(m)
	}
	sp, err := r.splitOf(l, p)
	if err != nil {
		return err
	}
	if n := len(p.SplitSaved(sp)); n != len(bufs) {
		return fmt.Errorf("%d kept buffers for %d tensors", len(bufs), n)
	}
	return p.ResumeSplit(ctx, sp, m, func(k int, t *tensor.Tensor) error {
		if m := r.keptAt(l, k); m != nil {
			return r.loadRows(purposeIntermediates, m, c.Dst, t)
		}
		return be.Upload(t, bufs[k])
	})
}

// putRows writes t's rows (a chunk's, one per destination) into rows
// ids of the host matrix m.
func (r *chunkedRun) putRows(m hosttier.Rows, ids []int32, t *tensor.Tensor) error {
	v, err := r.hostView(purposeIntermediates, m, t)
	if err != nil {
		return err
	}
	return m.Put(ids, v)
}

// keptBytes returns the bytes each layer kept on the host in the last
// epoch with chunked.intermediates = "split" (nil otherwise: the results
// of the other modes keep their fields).
func (r *chunkedRun) keptBytes() []int64 {
	if r.opts.Intermediates != "split" {
		return nil
	}
	return r.kept
}

// dstInput returns layer l's input over chunk c on device k for a split
// backward that reads only the destinations' rows (a root term): those
// rows from the host tier, filed as the layer's input rows (features or
// activations), in the first rows, and zeros for the other sources.
func (r *chunkedRun) dstInput(l, k int, c *chunkplan.Chunk) (*tensor.Tensor, error) {
	tier := r.devs[k].tier
	x, err := r.feed.Zeroed([]int{len(c.Src), r.inWidth(l)}, tier)
	if err != nil {
		return nil, err
	}
	src, _ := r.chunkIn(l)
	err = func() error {
		rows, err := src.Gather(c.Dst, nil)
		if err != nil {
			return err
		}
		tmp, err := r.feed.Scratch([]int{len(c.Dst), r.inWidth(l)}, tier)
		if err != nil {
			return err
		}
		defer r.e.Be.Release(tmp)
		if err := backend.ForPurpose(r.e.Be, r.inPurpose(l)).Upload(tmp, rows); err != nil {
			return err
		}
		first := make([]int32, len(c.Dst))
		for i := range first {
			first[i] = int32(i)
		}
		return r.feed.Scatter(tier, tmp, x, first)
	}()
	if err != nil {
		r.e.Be.Release(x)
		return nil, fmt.Errorf("destination rows: %w", err)
	}
	return x, nil
}
