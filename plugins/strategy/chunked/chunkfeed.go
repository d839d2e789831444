package chunked

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

// Purposes of chunked training's own transfers: the row indices of the
// transition buffers (HongTu computes them once, in preprocessing), the
// rows devices fetch from each other's transition buffers, and the layer
// outputs written back to the host, and the input rows' gradients moved
// to the host. Neighbour rows from the host are "features" (layer 0) and
// "activations".
const (
	purposeIndex    = "index"
	purposeP2P      = "p2p"
	purposeOutputs  = "outputs"
	purposeVertGrad = "vertex_gradients" // input-row gradients to the host
)

// dedupNone, dedupP2P and dedupReuse are the values of chunked.dedup.
const (
	dedupNone  = "none"
	dedupP2P   = "p2p"
	dedupReuse = "p2p_reuse"
)

// rowFeed delivers the input rows of one pass over a layer, batch by
// batch, by chunked.dedup.
type rowFeed struct {
	r     *chunkedRun
	src   hosttier.Rows
	be    backend.Backend // filed under the rows' purpose
	mode  string
	trans []*transition // per device, the current batch's buffer
	index [][]int32     // per device, per node: position + 1 in its current buffer (0: absent)
	host  any           // the host rows of the last Gather or Buf, reused by the next
}

// transition is a device's transition buffer: the rows of its partition
// that the current batch reads.
type transition struct {
	rows []int32 // global ids
	pos  []int32 // per node: position + 1 in rows (the device's index, while t is its current buffer)
	t    *tensor.Tensor
}

// indexOf returns device i's node index, all zeros at first.
func (f *rowFeed) indexOf(i int) []int32 {
	if f.index == nil {
		f.index = make([][]int32, len(f.trans))
	}
	if f.index[i] == nil {
		f.index[i] = make([]int32, len(f.r.plan.Owner))
	}
	return f.index[i]
}

// setIndex makes idx the index of rows after it was old's (nil: none).
func setIndex(idx []int32, old *transition, rows []int32) {
	if old != nil {
		for _, u := range old.rows {
			idx[u] = 0
		}
	}
	for k, u := range rows {
		idx[u] = int32(k + 1)
	}
}

func (r *chunkedRun) newFeed(l int) *rowFeed {
	purpose := backend.PurposeActivations
	if l == 0 && !r.isPre(l) {
		purpose = backend.PurposeFeatures
	}
	src, _ := r.chunkIn(l)
	return &rowFeed{r: r, src: src, be: backend.ForPurpose(r.e.Be, purpose), mode: r.dedup, trans: make([]*transition, len(r.devs))}
}

// release frees the transition buffers.
func (f *rowFeed) release() {
	for i, t := range f.trans {
		if t != nil {
			f.r.e.Be.Release(t.t)
			f.trans[i] = nil
		}
	}
}

// next fills the transition buffers of batch j of the schedule from the
// run's deduplication plan (chunkedRun.trans): each device's set of rows,
// and with reuse those its buffer held for batch j-1 (the pass runs the
// batches in order).
func (f *rowFeed) next(j int) error {
	nts, err := f.prepare(j)
	if err != nil {
		return err
	}
	f.commit(nts)
	return nil
}

// prepare returns the filled transition buffers of batch j (nil with
// dedup none), the current ones (batch j-1's) left as they are: the rows
// they share copied from them, the others loaded from the host. It
// reads the current buffers and the host tier and writes only the new
// buffers, so it may run while batch j-1 computes (chunkedRun.pass).
func (f *rowFeed) prepare(j int) ([]*transition, error) {
	if f.mode == dedupNone {
		return nil, nil
	}
	plan := f.r.trans
	nts := make([]*transition, len(plan.Rows[j]))
	for i, rows := range plan.Rows[j] {
		nt, err := f.fill(i, rows, plan.Prev, j)
		if err != nil {
			f.drop(nts)
			return nil, err
		}
		nts[i] = nt
	}
	return nts, nil
}

// fill returns device i's new transition buffer of rows, batch j's: the
// rows its current buffer holds (reuse: prev[j][i]) copied, the others
// loaded from the host.
func (f *rowFeed) fill(i int, rows []int32, prev [][][]int32, j int) (*transition, error) {
	d := f.r.devs[i]
	nt := &transition{rows: rows}
	var err error
	// Every row is kept or loaded: with host row copies (no ScatterAdd
	// into it) the buffer needs no clearing.
	alloc := f.r.zeroed
	if f.r.rows != nil {
		alloc = f.r.scratch
	}
	if nt.t, err = alloc([]int{len(rows), f.src.Width()}, d.tier); err != nil {
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
		err = f.place(d.tier, old.t, keepFrom, nt.t, keepTo, false)
	}
	if err == nil && len(load) > 0 {
		err = f.upload(d.tier, load, nt.t, loadTo)
	}
	if err != nil {
		f.r.e.Be.Release(nt.t)
		return nil, err
	}
	return nt, nil
}

// commit makes the prepared buffers nts the current ones, releasing the
// buffers they replace.
func (f *rowFeed) commit(nts []*transition) {
	for i, nt := range nts {
		old := f.trans[i]
		idx := f.indexOf(i)
		setIndex(idx, old, nt.rows)
		nt.pos = idx
		if old != nil {
			f.r.e.Be.Release(old.t)
		}
		f.trans[i] = nt
	}
}

// drop releases prepared buffers that will not be committed.
func (f *rowFeed) drop(nts []*transition) {
	for _, nt := range nts {
		if nt != nil {
			f.r.e.Be.Release(nt.t)
		}
	}
}

func (t *transition) lookup(u int32) (int32, bool) {
	if t == nil {
		return 0, false
	}
	p := t.pos[u]
	return p - 1, p > 0
}

// upload copies the host rows ids into rows to of dst (on tier; nil to,
// with host row copies only: row i).
func (f *rowFeed) upload(tier tensor.Tier, ids []int32, dst *tensor.Tensor, to []int32) error {
	e := f.r.e
	if rc := f.r.rows; rc != nil {
		// A host backend: the rows go straight into dst's storage.
		data, err := rc.HostData(dst)
		if err != nil {
			return err
		}
		return f.src.GatherTo(ids, data, to)
	}
	tmp, err := f.r.scratch([]int{len(ids), f.src.Width()}, tier)
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
	return f.scatter(tier, tmp, dst, to)
}

// place adds rows from of src into rows to of dst, both on tier: a copy
// where dst is zero, or with add unset where the run copies rows on the
// host (chunkedRun.rows: then dst's rows to are overwritten, whatever
// they held). nil from or to is the identity (host row copies only).
func (f *rowFeed) place(tier tensor.Tier, src *tensor.Tensor, from []int32, dst *tensor.Tensor, to []int32, add bool) error {
	e := f.r.e
	if rc := f.r.rows; rc != nil {
		if add {
			return rc.AddRows(src, from, dst, to)
		}
		return rc.CopyRows(src, from, dst, to)
	}
	tmp, err := f.r.scratch([]int{len(from), f.src.Width()}, tier)
	if err != nil {
		return err
	}
	defer e.Be.Release(tmp)
	if err := f.gather(tier, src, from, tmp); err != nil {
		return err
	}
	return f.scatter(tier, tmp, dst, to)
}

func (f *rowFeed) gather(tier tensor.Tier, src *tensor.Tensor, from []int32, into *tensor.Tensor) error {
	e := f.r.e
	it, err := train.UploadInt32s(backend.ForPurpose(e.Be, purposeIndex), from, tier)
	if err != nil {
		return err
	}
	defer e.Be.Release(it)
	return e.Be.Gather(src, it, into)
}

// scatter adds the rows of src into rows to of dst (zero there: a copy).
func (f *rowFeed) scatter(tier tensor.Tier, src, dst *tensor.Tensor, to []int32) error {
	e := f.r.e
	it, err := train.UploadInt32s(backend.ForPurpose(e.Be, purposeIndex), to, tier)
	if err != nil {
		return err
	}
	defer e.Be.Release(it)
	return e.Be.ScatterAdd(src, it, dst)
}

// input returns the input rows of chunk c on device k: from the host,
// or from the transition buffers of the batch, its own and (p2p) the
// other devices'. When the chunk reads exactly its device's transition
// buffer, in order (one device), the buffer itself is the input; owned
// says whether the caller must release the returned tensor.
func (f *rowFeed) input(k int, c *chunkplan.Chunk) (x *tensor.Tensor, owned bool, err error) {
	e := f.r.e
	tier := f.r.devs[k].tier
	if f.mode == dedupNone {
		if x, err = f.r.scratch([]int{len(c.Src), f.src.Width()}, tier); err != nil {
			return nil, false, err
		}
		if f.r.rows != nil {
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
		o := f.r.plan.Owner[u]
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
	if x, err = f.r.zeroed([]int{len(c.Src), f.src.Width()}, tier); err != nil {
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
		if err := f.moveRows(f.r.devs[o].tier, f.trans[o].t, from[o], tier, x, to[o]); err != nil {
			return fail(err)
		}
	}
	return x, true, nil
}

// gradSink collects the gradients of a backward pass's input rows (HongTu
// Alg. 3): every chunk adds its rows' gradients into the transition
// gradient buffer of the device that owns them (p2p for the other
// devices' rows); when a batch is done, the rows the next batch also
// reads stay on the device to accumulate further (with reuse), and the
// others are moved to the host and added to its vertex gradients.
type gradSink struct {
	*rowFeed // the buffers and helpers, over dh[l]
}

func (r *chunkedRun) newSink(l int) *gradSink {
	_, grads := r.chunkIn(l)
	return &gradSink{&rowFeed{r: r, src: grads, be: backend.ForPurpose(r.e.Be, purposeVertGrad), mode: r.dedup, trans: make([]*transition, len(r.devs))}}
}

// open makes sure every device has a zero gradient buffer for the rows
// of batch j (one carried over from the batch before keeps its rows).
func (s *gradSink) open(j int) error {
	for i, rows := range s.r.trans.Rows[j] {
		if s.trans[i] != nil {
			continue
		}
		nt := &transition{rows: rows, pos: s.indexOf(i)}
		setIndex(nt.pos, nil, rows)
		var err error
		if nt.t, err = s.r.zeroed([]int{len(rows), s.src.Width()}, s.r.devs[i].tier); err != nil {
			return fmt.Errorf("gradient transition buffer: %w", err)
		}
		s.trans[i] = nt
	}
	return nil
}

// push adds the input-row gradients g of chunk c (on device k) into the
// owners' buffers.
func (s *gradSink) push(k int, c *chunkplan.Chunk, g *tensor.Tensor) error {
	if s.r.rows != nil && slices.Equal(s.trans[k].rows, c.Src) {
		return s.r.rows.AddRows(g, nil, s.trans[k].t, nil) // row j into row j
	}
	from := make([][]int32, len(s.trans)) // per owner: rows of g
	to := make([][]int32, len(s.trans))   // and positions in its buffer
	for j, u := range c.Src {
		o := s.r.plan.Owner[u]
		p, ok := s.trans[o].lookup(u)
		if !ok {
			return fmt.Errorf("chunk %d: row %d is in no gradient buffer", c.Id, u)
		}
		from[o], to[o] = append(from[o], int32(j)), append(to[o], p)
	}
	tier := s.r.devs[k].tier
	for o := range from {
		if len(from[o]) == 0 {
			continue
		}
		if o == k {
			if err := s.place(tier, g, from[o], s.trans[o].t, to[o], true); err != nil {
				return err
			}
			continue
		}
		if err := s.moveRows(tier, g, from[o], s.r.devs[o].tier, s.trans[o].t, to[o]); err != nil {
			return err
		}
	}
	return nil
}

// close ends a batch: with reuse, the rows that batch next (len(sched):
// none) also reads move into next's buffers on their devices; every
// other row's gradient goes to the host.
func (s *gradSink) close(next int) error {
	var sets [][]int32
	if next < len(s.r.trans.Rows) && s.mode == dedupReuse {
		sets = s.r.trans.Rows[next]
	}
	e := s.r.e
	for i, old := range s.trans {
		tier := s.r.devs[i].tier
		var nt *transition
		var keepFrom, keepTo, out, outPos []int32
		var next []int32
		if sets != nil {
			next = sets[i]
			nt = &transition{rows: next, pos: s.indexOf(i)}
		}
		setIndex(s.indexOf(i), old, next)
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
			if nt.t, err = s.r.zeroed([]int{len(nt.rows), s.src.Width()}, tier); err != nil {
				return err
			}
			if len(keepFrom) > 0 {
				if err := s.place(tier, old.t, keepFrom, nt.t, keepTo, false); err != nil {
					e.Be.Release(nt.t)
					return err
				}
			}
		}
		e.Be.Release(old.t)
		s.trans[i] = nt
	}
	return nil
}

// toHost adds the rows at of the device buffer t (on tier), the
// gradients of the nodes out, into the host's vertex gradients.
func (s *gradSink) toHost(tier tensor.Tier, t *tensor.Tensor, out, at []int32) error {
	buf := s.src.Buf(len(out), s.host)
	s.host = buf
	if rc := s.r.rows; rc != nil {
		if err := rc.DownloadRows(t, at, buf); err != nil {
			return err
		}
		return s.src.Add(out, buf)
	}
	tmp, err := s.r.scratch([]int{len(out), s.src.Width()}, tier)
	if err != nil {
		return err
	}
	err = s.gather(tier, t, at, tmp)
	if err == nil {
		err = s.be.Download(tmp, buf)
	}
	s.r.e.Be.Release(tmp)
	if err != nil {
		return err
	}
	return s.src.Add(out, buf)
}

// moveRows adds rows from of src (on tier at) into rows to of dst (on
// tier dt, zero there for a copy): gathered where they are, copied over
// the link between the devices (p2p), scattered into place.
func (f *rowFeed) moveRows(at tensor.Tier, src *tensor.Tensor, from []int32, dt tensor.Tier, dst *tensor.Tensor, to []int32) error {
	e := f.r.e
	here, err := f.r.scratch([]int{len(from), f.src.Width()}, at)
	if err != nil {
		return err
	}
	defer e.Be.Release(here)
	if err := f.gather(at, src, from, here); err != nil {
		return err
	}
	there, err := f.r.scratch(here.Shape(), dt)
	if err != nil {
		return err
	}
	defer e.Be.Release(there)
	if err := backend.ForPurpose(e.Be, purposeP2P).Copy(there, here); err != nil {
		return fmt.Errorf("p2p rows %s -> %s: %w", at, dt, err)
	}
	return f.scatter(dt, there, dst, to)
}

// zeroed allocates a zero-filled chunk buffer (the destination of
// accumulations: ScatterAdd), with recycled storage where the run's
// buffers come from a pool (chunkedRun.bufs).
func (r *chunkedRun) zeroed(shape []int, tier tensor.Tier) (*tensor.Tensor, error) {
	if rc, ok := r.bufs.(backend.Recycler); ok {
		return rc.AllocRecycled(r.e.DT, shape, tier)
	}
	return r.bufs.Alloc(r.e.DT, shape, tier)
}

// scratch allocates a chunk buffer that the caller overwrites entirely
// before reading it (a Gather, Upload or Copy destination): from the
// pool without clearing, where the run's buffers come from one.
func (r *chunkedRun) scratch(shape []int, tier tensor.Tier) (*tensor.Tensor, error) {
	return backend.AllocScratch(r.bufs, r.e.DT, shape, tier)
}
