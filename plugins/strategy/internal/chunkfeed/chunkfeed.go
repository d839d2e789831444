// Package chunkfeed is HongTu's deduplicated communication (§5, Alg. 2
// and 3) for chunked training: a Feed delivers the input rows of a
// layer pass batch by batch through per-device transition buffers, a
// Sink collects those rows' gradients the same way (internal kit of
// plugins/strategy).
package chunkfeed

import (
	"fmt"
	"slices"
	"strata/core/backend"
	"strata/core/tensor"
	"strata/core/train"
	"strata/plugins/strategy/internal/chunkplan"
	"strata/plugins/strategy/internal/hosttier"
)

// Deduplicated communication (HongTu §5, Alg. 2): in each batch, every
// neighbour row of the batch's chunks crosses from the host once, to the
// transition buffer of the device whose partition owns it; a device
// assembles its chunk's input rows from its own transition buffer and
// fetches the rest from the other devices' (p2p). With reuse, rows that
// were in a device's transition buffer for the batch before are copied
// on the device instead of loaded again.

// Purposes of the feed's and the sink's own transfers: the row indices
// of the transition buffers (HongTu computes them once, in
// preprocessing), the rows devices fetch from each other's transition
// buffers, and the input rows' gradients moved to the host. Neighbour
// rows from the host are "features" (layer 0) and "activations".
const (
	PurposeIndex    = "index"            // row indices of gathers and scatters
	PurposeP2P      = "p2p"              // rows fetched from another device's transition buffer
	PurposeVertGrad = "vertex_gradients" // input-row gradients to the host
)

// DedupNone, DedupP2P and DedupReuse are the values of chunked.dedup:
// every chunk loads its rows from the host, each row crosses from the
// host once per batch (p2p), or once while consecutive batches read it
// (p2p and reuse).
const (
	DedupNone  = "none"
	DedupP2P   = "p2p"
	DedupReuse = "p2p_reuse"
)

// Env is what the feed and the sink use of a chunked run, set once its
// chunks, devices and deduplication plan exist.
type Env struct {
	Be    backend.Backend        // the run's backend: releases, gathers, scatters, p2p copies
	DT    tensor.DType           // the rows' dtype
	Bufs  backend.Backend        // allocates the buffers (Zeroed, Scratch)
	Rows  backend.RowCopier      // moves rows by host indices (a host backend; nil: Gather and ScatterAdd)
	Tiers []tensor.Tier          // per device, its tier
	Owner []int32                // per node, the device whose partition owns its rows (chunkplan.Plan.Owner)
	Trans *chunkplan.Transitions // the deduplication plan (nil with DedupNone)
	Dedup string                 // chunked.dedup: DedupNone, DedupP2P or DedupReuse
}

// Feed delivers the input rows of one pass over a layer, batch by
// batch, by chunked.dedup.
type Feed struct {
	env   *Env
	src   hosttier.Rows
	be    backend.Backend // filed under the rows' purpose
	mode  string
	trans []*Transition // per device, the current batch's buffer
	index [][]int32     // per device, per node: position + 1 in its current buffer (0: absent)
	host  any           // the host rows of the last Gather or Buf, reused by the next
}

// Transition is a device's transition buffer: the rows of its partition
// that the current batch reads.
type Transition struct {
	rows []int32 // global ids
	pos  []int32 // per node: position + 1 in rows (the device's index, while t is its current buffer)
	t    *tensor.Tensor
}

// indexOf returns device i's node index, all zeros at first.
func (f *Feed) indexOf(i int) []int32 {
	if f.index == nil {
		f.index = make([][]int32, len(f.trans))
	}
	if f.index[i] == nil {
		f.index[i] = make([]int32, len(f.env.Owner))
	}
	return f.index[i]
}

// setIndex makes idx the index of rows after it was old's (nil: none).
func setIndex(idx []int32, old *Transition, rows []int32) {
	if old != nil {
		for _, u := range old.rows {
			idx[u] = 0
		}
	}
	for k, u := range rows {
		idx[u] = int32(k + 1)
	}
}

// NewFeed returns a feed of the host rows src, its loads from the host
// filed under purpose ("features" or "activations").
func NewFeed(env *Env, src hosttier.Rows, purpose string) *Feed {
	return &Feed{env: env, src: src, be: backend.ForPurpose(env.Be, purpose), mode: env.Dedup, trans: make([]*Transition, len(env.Tiers))}
}

// Release frees the transition buffers.
func (f *Feed) Release() {
	for i, t := range f.trans {
		if t != nil {
			f.env.Be.Release(t.t)
			f.trans[i] = nil
		}
	}
}

// Next fills the transition buffers of batch j of the schedule from the
// run's deduplication plan (Env.Trans): each device's set of rows,
// and with reuse those its buffer held for batch j-1 (the pass runs the
// batches in order).
func (f *Feed) Next(j int) error {
	nts, err := f.Prepare(j)
	if err != nil {
		return err
	}
	f.Commit(nts)
	return nil
}

// Prepare returns the filled transition buffers of batch j (nil with
// dedup none), the current ones (batch j-1's) left as they are: the rows
// they share copied from them, the others loaded from the host. It
// reads the current buffers and the host tier and writes only the new
// buffers, so it may run while batch j-1 computes (chunked's pass).
func (f *Feed) Prepare(j int) ([]*Transition, error) {
	if f.mode == DedupNone {
		return nil, nil
	}
	plan := f.env.Trans
	nts := make([]*Transition, len(plan.Rows[j]))
	for i, rows := range plan.Rows[j] {
		nt, err := f.fill(i, rows, plan.Prev, j)
		if err != nil {
			f.Drop(nts)
			return nil, err
		}
		nts[i] = nt
	}
	return nts, nil
}

// fill returns device i's new transition buffer of rows, batch j's: the
// rows its current buffer holds (reuse: prev[j][i]) copied, the others
// loaded from the host.
func (f *Feed) fill(i int, rows []int32, prev [][][]int32, j int) (*Transition, error) {
	tier := f.env.Tiers[i]
	nt := &Transition{rows: rows}
	var err error
	// Every row is kept or loaded: with host row copies (no ScatterAdd
	// into it) the buffer needs no clearing.
	alloc := f.env.Zeroed
	if f.env.Rows != nil {
		alloc = f.env.Scratch
	}
	if nt.t, err = alloc([]int{len(rows), f.src.Width()}, tier); err != nil {
		return nil, fmt.Errorf("transition buffer: %w", err)
	}
	// Rows from the current buffer (reuse) and from the host.
	var keepFrom, keepTo, load, loadTo []int32
	old := f.trans[i]
	var in []int32 // reuse: position + 1 in old, 0: from the host
	if prev != nil && old != nil {
		in = prev[j][i]
	}
	for k, u := range rows {
		if in != nil && in[k] > 0 {
			keepFrom, keepTo = append(keepFrom, in[k]-1), append(keepTo, int32(k))
		} else {
			load, loadTo = append(load, u), append(loadTo, int32(k))
		}
	}
	if len(keepFrom) > 0 {
		err = f.place(tier, old.t, keepFrom, nt.t, keepTo, false)
	}
	if err == nil && len(load) > 0 {
		err = f.upload(tier, load, nt.t, loadTo)
	}
	if err != nil {
		f.env.Be.Release(nt.t)
		return nil, err
	}
	return nt, nil
}

// Commit makes the prepared buffers nts the current ones, releasing the
// buffers they replace.
func (f *Feed) Commit(nts []*Transition) {
	for i, nt := range nts {
		old := f.trans[i]
		idx := f.indexOf(i)
		setIndex(idx, old, nt.rows)
		nt.pos = idx
		if old != nil {
			f.env.Be.Release(old.t)
		}
		f.trans[i] = nt
	}
}

// Drop releases prepared buffers that will not be committed.
func (f *Feed) Drop(nts []*Transition) {
	for _, nt := range nts {
		if nt != nil {
			f.env.Be.Release(nt.t)
		}
	}
}

func (t *Transition) lookup(u int32) (int32, bool) {
	if t == nil {
		return 0, false
	}
	p := t.pos[u]
	return p - 1, p > 0
}

// upload copies the host rows ids into rows to of dst (on tier; nil to,
// with host row copies only: row i).
func (f *Feed) upload(tier tensor.Tier, ids []int32, dst *tensor.Tensor, to []int32) error {
	e := f.env
	if rc := e.Rows; rc != nil {
		// A host backend: the rows go straight into dst's storage.
		data, err := rc.HostData(dst)
		if err != nil {
			return err
		}
		return f.src.GatherTo(ids, data, to)
	}
	tmp, err := e.Scratch([]int{len(ids), f.src.Width()}, tier)
	if err != nil {
		return err
	}
	defer e.Be.Release(tmp)
	rows, err := f.src.Gather(ids, f.host)
	if err != nil {
		return err
	}
	f.host = rows
	if err := f.be.Upload(tmp, rows); err != nil {
		return err
	}
	return e.Scatter(tier, tmp, dst, to)
}

// place adds rows from of src into rows to of dst, both on tier: a copy
// where dst is zero, or with add unset where the run copies rows on the
// host (Env.Rows: then dst's rows to are overwritten, whatever
// they held). nil from or to is the identity (host row copies only).
func (f *Feed) place(tier tensor.Tier, src *tensor.Tensor, from []int32, dst *tensor.Tensor, to []int32, add bool) error {
	e := f.env
	if rc := e.Rows; rc != nil {
		if add {
			return rc.AddRows(src, from, dst, to)
		}
		return rc.CopyRows(src, from, dst, to)
	}
	tmp, err := e.Scratch([]int{len(from), f.src.Width()}, tier)
	if err != nil {
		return err
	}
	defer e.Be.Release(tmp)
	if err := e.gather(tier, src, from, tmp); err != nil {
		return err
	}
	return e.Scatter(tier, tmp, dst, to)
}

// gather copies rows from of src into into, both on tier.
func (e *Env) gather(tier tensor.Tier, src *tensor.Tensor, from []int32, into *tensor.Tensor) error {
	it, err := train.UploadInt32s(backend.ForPurpose(e.Be, PurposeIndex), from, tier)
	if err != nil {
		return err
	}
	defer e.Be.Release(it)
	return e.Be.Gather(src, it, into)
}

// Scatter adds the rows of src into rows to of dst (zero there: a copy),
// both on tier, the indices uploaded under PurposeIndex.
func (e *Env) Scatter(tier tensor.Tier, src, dst *tensor.Tensor, to []int32) error {
	it, err := train.UploadInt32s(backend.ForPurpose(e.Be, PurposeIndex), to, tier)
	if err != nil {
		return err
	}
	defer e.Be.Release(it)
	return e.Be.ScatterAdd(src, it, dst)
}

// Input returns the input rows of chunk c on device k: from the host,
// or from the transition buffers of the batch, its own and (p2p) the
// other devices'. When the chunk reads exactly its device's transition
// buffer, in order (one device), the buffer itself is the input; owned
// says whether the caller must release the returned tensor.
func (f *Feed) Input(k int, c *chunkplan.Chunk) (x *tensor.Tensor, owned bool, err error) {
	e := f.env
	tier := e.Tiers[k]
	if f.mode == DedupNone {
		if x, err = e.Scratch([]int{len(c.Src), f.src.Width()}, tier); err != nil {
			return nil, false, err
		}
		if e.Rows != nil {
			err = f.upload(tier, c.Src, x, nil)
		} else {
			var rows any
			if rows, err = f.src.Gather(c.Src, f.host); err == nil {
				f.host = rows
				err = f.be.Upload(x, rows)
			}
		}
		if err != nil {
			e.Be.Release(x)
			return nil, false, err
		}
		return x, true, nil
	}
	if slices.Equal(f.trans[k].rows, c.Src) {
		return f.trans[k].t, false, nil // its own buffer's rows, in order
	}
	from := make([][]int32, len(f.trans)) // per owner: positions in its buffer
	to := make([][]int32, len(f.trans))   // and rows of x
	same := len(f.trans[k].rows) == len(c.Src)
	for j, u := range c.Src {
		o := e.Owner[u]
		p, ok := f.trans[o].lookup(u)
		if !ok {
			return nil, false, fmt.Errorf("chunk %d: row %d is in no transition buffer", c.Id, u)
		}
		same = same && o == int32(k) && p == int32(j)
		from[o], to[o] = append(from[o], p), append(to[o], int32(j))
	}
	if same {
		return f.trans[k].t, false, nil
	}
	if x, err = e.Zeroed([]int{len(c.Src), f.src.Width()}, tier); err != nil {
		return nil, false, err
	}
	fail := func(err error) (*tensor.Tensor, bool, error) {
		e.Be.Release(x)
		return nil, false, err
	}
	for o := range from {
		if len(from[o]) == 0 {
			continue
		}
		if o == k {
			if err := f.place(tier, f.trans[o].t, from[o], x, to[o], false); err != nil {
				return fail(err)
			}
			continue
		}
		// A p2p fetch: gathered on the owner, copied over the link.
		if err := f.moveRows(e.Tiers[o], f.trans[o].t, from[o], tier, x, to[o]); err != nil {
			return fail(err)
		}
	}
	return x, true, nil
}

// Sink collects the gradients of a backward pass's input rows (HongTu
// Alg. 3): every chunk adds its rows' gradients into the transition
// gradient buffer of the device that owns them (p2p for the other
// devices' rows); when a batch is done, the rows the next batch also
// reads stay on the device to accumulate further (with reuse), and the
// others are moved to the host and added to its vertex gradients.
type Sink struct {
	f *Feed // the buffers and helpers, over the gradients' host rows
}

// NewSink returns a sink that adds the input rows' gradients into the
// host rows grads, its transfers to the host filed under
// PurposeVertGrad.
func NewSink(env *Env, grads hosttier.Rows) *Sink {
	return &Sink{&Feed{env: env, src: grads, be: backend.ForPurpose(env.Be, PurposeVertGrad), mode: env.Dedup, trans: make([]*Transition, len(env.Tiers))}}
}

// Release frees the gradient buffers.
func (s *Sink) Release() { s.f.Release() }

// Open makes sure every device has a zero gradient buffer for the rows
// of batch j (one carried over from the batch before keeps its rows).
func (s *Sink) Open(j int) error {
	f := s.f
	for i, rows := range f.env.Trans.Rows[j] {
		if f.trans[i] != nil {
			continue
		}
		nt := &Transition{rows: rows, pos: f.indexOf(i)}
		setIndex(nt.pos, nil, rows)
		var err error
		if nt.t, err = f.env.Zeroed([]int{len(rows), f.src.Width()}, f.env.Tiers[i]); err != nil {
			return fmt.Errorf("gradient transition buffer: %w", err)
		}
		f.trans[i] = nt
	}
	return nil
}

// Push adds the input-row gradients g of chunk c (on device k) into the
// owners' buffers.
func (s *Sink) Push(k int, c *chunkplan.Chunk, g *tensor.Tensor) error {
	f, e := s.f, s.f.env
	if e.Rows != nil && slices.Equal(f.trans[k].rows, c.Src) {
		return e.Rows.AddRows(g, nil, f.trans[k].t, nil) // row j into row j
	}
	from := make([][]int32, len(f.trans)) // per owner: rows of g
	to := make([][]int32, len(f.trans))   // and positions in its buffer
	for j, u := range c.Src {
		o := e.Owner[u]
		p, ok := f.trans[o].lookup(u)
		if !ok {
			return fmt.Errorf("chunk %d: row %d is in no gradient buffer", c.Id, u)
		}
		from[o], to[o] = append(from[o], int32(j)), append(to[o], p)
	}
	tier := e.Tiers[k]
	for o := range from {
		if len(from[o]) == 0 {
			continue
		}
		if o == k {
			if err := f.place(tier, g, from[o], f.trans[o].t, to[o], true); err != nil {
				return err
			}
			continue
		}
		if err := f.moveRows(tier, g, from[o], e.Tiers[o], f.trans[o].t, to[o]); err != nil {
			return err
		}
	}
	return nil
}

// Close ends a batch: with reuse, the rows that batch next (the number
// of batches: none) also reads move into next's buffers on their
// devices; every other row's gradient goes to the host.
func (s *Sink) Close(next int) error {
	f, e := s.f, s.f.env
	var sets [][]int32
	if next < len(e.Trans.Rows) && f.mode == DedupReuse {
		sets = e.Trans.Rows[next]
	}
	for i, old := range f.trans {
		tier := e.Tiers[i]
		var nt *Transition
		var keepFrom, keepTo, out, outPos []int32
		var next []int32
		if sets != nil {
			next = sets[i]
			nt = &Transition{rows: next, pos: f.indexOf(i)}
		}
		setIndex(f.indexOf(i), old, next)
		for p, u := range old.rows {
			if q, ok := nt.lookup(u); ok {
				keepFrom, keepTo = append(keepFrom, int32(p)), append(keepTo, q)
			} else {
				out, outPos = append(out, u), append(outPos, int32(p))
			}
		}
		if len(out) > 0 {
			if err := s.toHost(tier, old.t, out, outPos); err != nil {
				return err
			}
		}
		if nt != nil {
			var err error
			if nt.t, err = e.Zeroed([]int{len(nt.rows), f.src.Width()}, tier); err != nil {
				return err
			}
			if len(keepFrom) > 0 {
				if err := f.place(tier, old.t, keepFrom, nt.t, keepTo, false); err != nil {
					e.Be.Release(nt.t)
					return err
				}
			}
		}
		e.Be.Release(old.t)
		f.trans[i] = nt
	}
	return nil
}

// toHost adds the rows at of the device buffer t (on tier), the
// gradients of the nodes out, into the host's vertex gradients.
func (s *Sink) toHost(tier tensor.Tier, t *tensor.Tensor, out, at []int32) error {
	f, e := s.f, s.f.env
	buf := f.src.Buf(len(out), f.host)
	f.host = buf
	if rc := e.Rows; rc != nil {
		if err := rc.DownloadRows(t, at, buf); err != nil {
			return err
		}
		return f.src.Add(out, buf)
	}
	tmp, err := e.Scratch([]int{len(out), f.src.Width()}, tier)
	if err != nil {
		return err
	}
	err = e.gather(tier, t, at, tmp)
	if err == nil {
		err = f.be.Download(tmp, buf)
	}
	e.Be.Release(tmp)
	if err != nil {
		return err
	}
	return f.src.Add(out, buf)
}

// moveRows adds rows from of src (on tier at) into rows to of dst (on
// tier dt, zero there for a copy): gathered where they are, copied over
// the link between the devices (p2p), scattered into place.
func (f *Feed) moveRows(at tensor.Tier, src *tensor.Tensor, from []int32, dt tensor.Tier, dst *tensor.Tensor, to []int32) error {
	e := f.env
	here, err := e.Scratch([]int{len(from), f.src.Width()}, at)
	if err != nil {
		return err
	}
	defer e.Be.Release(here)
	if err := e.gather(at, src, from, here); err != nil {
		return err
	}
	there, err := e.Scratch(here.Shape(), dt)
	if err != nil {
		return err
	}
	defer e.Be.Release(there)
	if err := backend.ForPurpose(e.Be, PurposeP2P).Copy(there, here); err != nil {
		return fmt.Errorf("p2p rows %s -> %s: %w", at, dt, err)
	}
	return e.Scatter(dt, there, dst, to)
}

// Zeroed allocates a zero-filled chunk buffer (the destination of
// accumulations: ScatterAdd), with recycled storage where the run's
// buffers come from a pool (Env.Bufs).
func (e *Env) Zeroed(shape []int, tier tensor.Tier) (*tensor.Tensor, error) {
	if rc, ok := e.Bufs.(backend.Recycler); ok {
		return rc.AllocRecycled(e.DT, shape, tier)
	}
	return e.Bufs.Alloc(e.DT, shape, tier)
}

// Scratch allocates a chunk buffer that the caller overwrites entirely
// before reading it (a Gather, Upload or Copy destination): from the
// pool without clearing, where the run's buffers come from one.
func (e *Env) Scratch(shape []int, tier tensor.Tier) (*tensor.Tensor, error) {
	return backend.AllocScratch(e.Bufs, e.DT, shape, tier)
}
