package strategy

import (
	"fmt"

	"strata/core/backend"
	"strata/core/tensor"
	"strata/core/train"
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
// outputs written back to the host. Neighbour rows from the host are
// "features" (layer 0) and "activations".
const (
	purposeIndex   = "index"
	purposeP2P     = "p2p"
	purposeOutputs = "outputs"
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
	r       *chunkedRun
	src     hostRows
	be      backend.Backend // filed under the rows' purpose
	mode    string
	trans   []*transition // per device, the current batch's buffer
	scratch []int32       // per node: position + 1 in a buffer being built
}

// transition is a device's transition buffer: the rows of its partition
// that the current batch reads.
type transition struct {
	rows []int32 // global ids
	pos  map[int32]int32
	t    *tensor.Tensor
}

func (r *chunkedRun) newFeed(l int) *rowFeed {
	purpose := backend.PurposeActivations
	if l == 0 {
		purpose = backend.PurposeFeatures
	}
	return &rowFeed{r: r, src: r.h[l], be: backend.ForPurpose(r.e.be, purpose), mode: r.dedup, trans: make([]*transition, len(r.devs))}
}

// release frees the transition buffers.
func (f *rowFeed) release() {
	for i, t := range f.trans {
		if t != nil {
			f.r.e.be.Release(t.t)
			f.trans[i] = nil
		}
	}
}

// batchRows returns, per device, the rows of its partition that batch
// reads (its transition set), in order of first use.
func (p *chunkPlan) batchRows(batch []int) [][]int32 {
	out := make([][]int32, p.m)
	seen := map[int32]bool{}
	for _, c := range batch {
		for _, u := range p.chunks[c].src {
			if !seen[u] {
				seen[u] = true
				o := p.owner[u]
				out[o] = append(out[o], u)
			}
		}
	}
	return out
}

// aliased reports whether chunk c reads exactly the transition set rows
// of its own device k, in order: the buffer is then its input.
func (p *chunkPlan) aliased(k int, rows []int32, c *chunk) bool {
	if len(rows) != len(c.src) {
		return false
	}
	for j, u := range c.src {
		if p.owner[u] != int32(k) || rows[j] != u {
			return false
		}
	}
	return true
}

// next fills the transition buffers of a batch (with p2p and reuse).
func (f *rowFeed) next(batch []int) error {
	if f.mode == dedupNone {
		return nil
	}
	e := f.r.e
	for i, rows := range f.r.plan.batchRows(batch) {
		d := f.r.devs[i]
		nt := &transition{rows: rows, pos: make(map[int32]int32, len(rows))}
		for k, u := range rows {
			nt.pos[u] = int32(k)
		}
		var err error
		if nt.t, err = e.be.Alloc(e.dt, []int{len(rows), f.src.width()}, d.tier); err != nil {
			return fmt.Errorf("transition buffer: %w", err)
		}
		// Rows from the previous buffer (reuse) and from the host.
		var keepFrom, keepTo, loadTo []int32
		var load []int32
		old := f.trans[i]
		for k, u := range rows {
			if p, ok := old.lookup(u); ok && f.mode == dedupReuse {
				keepFrom, keepTo = append(keepFrom, p), append(keepTo, int32(k))
			} else {
				load, loadTo = append(load, u), append(loadTo, int32(k))
			}
		}
		if len(keepFrom) > 0 {
			if err := f.place(d.tier, old.t, keepFrom, nt.t, keepTo); err != nil {
				e.be.Release(nt.t)
				return err
			}
		}
		if old != nil {
			e.be.Release(old.t)
			f.trans[i] = nil
		}
		if len(load) > 0 {
			if err := f.upload(d.tier, load, nt.t, loadTo); err != nil {
				e.be.Release(nt.t)
				return err
			}
		}
		f.trans[i] = nt
	}
	return nil
}

func (t *transition) lookup(u int32) (int32, bool) {
	if t == nil {
		return 0, false
	}
	p, ok := t.pos[u]
	return p, ok
}

// upload copies the host rows ids into rows to of dst (on tier).
func (f *rowFeed) upload(tier tensor.Tier, ids []int32, dst *tensor.Tensor, to []int32) error {
	e := f.r.e
	tmp, err := e.be.Alloc(e.dt, []int{len(ids), f.src.width()}, tier)
	if err != nil {
		return err
	}
	defer e.be.Release(tmp)
	if err := f.be.Upload(tmp, f.src.gather(ids)); err != nil {
		return err
	}
	return f.scatter(tier, tmp, dst, to)
}

// place copies rows from of src into rows to of dst, both on tier.
func (f *rowFeed) place(tier tensor.Tier, src *tensor.Tensor, from []int32, dst *tensor.Tensor, to []int32) error {
	e := f.r.e
	tmp, err := e.be.Alloc(e.dt, []int{len(from), f.src.width()}, tier)
	if err != nil {
		return err
	}
	defer e.be.Release(tmp)
	if err := f.gather(tier, src, from, tmp); err != nil {
		return err
	}
	return f.scatter(tier, tmp, dst, to)
}

func (f *rowFeed) gather(tier tensor.Tier, src *tensor.Tensor, from []int32, into *tensor.Tensor) error {
	e := f.r.e
	it, err := train.UploadInt32s(backend.ForPurpose(e.be, purposeIndex), from, tier)
	if err != nil {
		return err
	}
	defer e.be.Release(it)
	return e.be.Gather(src, it, into)
}

// scatter adds the rows of src into rows to of dst (zero there: a copy).
func (f *rowFeed) scatter(tier tensor.Tier, src, dst *tensor.Tensor, to []int32) error {
	e := f.r.e
	it, err := train.UploadInt32s(backend.ForPurpose(e.be, purposeIndex), to, tier)
	if err != nil {
		return err
	}
	defer e.be.Release(it)
	return e.be.ScatterAdd(src, it, dst)
}

// input returns the input rows of chunk c on device k: from the host,
// or from the transition buffers of the batch, its own and (p2p) the
// other devices'. When the chunk reads exactly its device's transition
// buffer, in order (one device), the buffer itself is the input; owned
// says whether the caller must release the returned tensor.
func (f *rowFeed) input(k int, c *chunk) (x *tensor.Tensor, owned bool, err error) {
	e := f.r.e
	tier := f.r.devs[k].tier
	if f.mode == dedupNone {
		if x, err = e.be.Alloc(e.dt, []int{len(c.src), f.src.width()}, tier); err != nil {
			return nil, false, err
		}
		if err := f.be.Upload(x, f.src.gather(c.src)); err != nil {
			e.be.Release(x)
			return nil, false, err
		}
		return x, true, nil
	}
	from := make([][]int32, len(f.trans)) // per owner: positions in its buffer
	to := make([][]int32, len(f.trans))   // and rows of x
	same := len(f.trans[k].rows) == len(c.src)
	for j, u := range c.src {
		o := f.r.plan.owner[u]
		p, ok := f.trans[o].lookup(u)
		if !ok {
			return nil, false, fmt.Errorf("chunk %d: row %d is in no transition buffer", c.id, u)
		}
		same = same && o == int32(k) && p == int32(j)
		from[o], to[o] = append(from[o], p), append(to[o], int32(j))
	}
	if same {
		return f.trans[k].t, false, nil
	}
	if x, err = e.be.Alloc(e.dt, []int{len(c.src), f.src.width()}, tier); err != nil {
		return nil, false, err
	}
	fail := func(err error) (*tensor.Tensor, bool, error) {
		e.be.Release(x)
		return nil, false, err
	}
	for o := range from {
		if len(from[o]) == 0 {
			continue
		}
		if o == k {
			if err := f.place(tier, f.trans[o].t, from[o], x, to[o]); err != nil {
				return fail(err)
			}
			continue
		}
		// A p2p fetch: gathered on the owner, copied over the link.
		otier := f.r.devs[o].tier
		remote, err := e.be.Alloc(e.dt, []int{len(from[o]), f.src.width()}, otier)
		if err != nil {
			return fail(err)
		}
		err = f.gather(otier, f.trans[o].t, from[o], remote)
		var local *tensor.Tensor
		if err == nil {
			local, err = e.be.Alloc(e.dt, remote.Shape(), tier)
		}
		if err == nil {
			err = backend.ForPurpose(e.be, purposeP2P).Copy(local, remote)
		}
		e.be.Release(remote)
		if err == nil {
			err = f.scatter(tier, local, x, to[o])
		}
		if local != nil {
			e.be.Release(local)
		}
		if err != nil {
			return fail(fmt.Errorf("p2p rows from %s: %w", otier, err))
		}
	}
	return x, true, nil
}
