package steprun

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"strata/core/backend"
	"strata/core/config"
	"strata/core/engine"
	"strata/core/ir"
	"strata/core/sampling"
	"strata/core/tensor"
	"strata/plugins/strategy/internal/options"
)

// Layer-wise inference, as DGL's and PyG's full-neighbourhood
// evaluation: every chunk of nodes goes through layer l over one full hop,
// reading layer l-1's rows of its in-neighbours from the host, where the
// whole layer's rows are kept. A chunk's device memory is then one hop's
// block, where an L-hop block of a skewed graph holds most of the graph,
// and each edge is aggregated once per layer instead of once per chunk
// that reaches it.

// layerwise is the model split into its layers.
type layerwise struct {
	layers []*ir.Graph
	widths []int       // each layer's input width, then the output's
	chunks [][][]int32 // each layer's chunks that fit the device (nil: r.Eval)
	// budget, when positive, replaces layerwiseBudget and rangeBudget;
	// sampled runs every chunk over its sampled block, never in place
	// (tests).
	budget  int64
	sampled bool
}

// purposeInference files every transfer of layer-wise inference (input
// rows, layer rows, outputs), so that a run's training traffic by purpose
// stays apart from its evaluation's.
const purposeInference = "inference"

// EnableLayerwise makes evaluation run layer by layer. It fails when the
// model does not split into layers that each read only the previous one
// (a skip connection across layers, jumping knowledge).
func (r *Runner) EnableLayerwise() error {
	layers, err := r.Env.Model.SplitLayers()
	if err != nil {
		return fmt.Errorf("layer-wise inference: %w", err)
	}
	lw := &layerwise{layers: layers, chunks: make([][][]int32, len(layers))}
	for _, lg := range layers {
		lw.widths = append(lw.widths, int(lg.Ops[0].Shape[1]))
	}
	last := layers[len(layers)-1]
	lw.widths = append(lw.widths, int(last.Ops[last.Outputs[0]].Shape[1]))
	r.lw = lw
	return nil
}

// layerRows is one layer's rows of every node on the host, in the
// precision of the compute dtype (float32 or float64), in memory mapped
// for them (hostRows) until release.
type layerRows struct {
	f32  []float32
	f64  []float64
	w    int
	free func()
}

func newLayerRows(dt tensor.DType, n, w int) (*layerRows, error) {
	if dt != tensor.Float32 && dt != tensor.Float64 {
		return nil, fmt.Errorf("layer-wise inference keeps layer rows in float32 or float64, not %v", dt)
	}
	mem, free, err := hostRows(n * w * dt.Size())
	if err != nil {
		return nil, fmt.Errorf("layer-wise inference: %d rows of %d values: %w", n, w, err)
	}
	h := &layerRows{w: w, free: free}
	if n*w == 0 {
		return h, nil
	}
	p := unsafe.Pointer(unsafe.SliceData(mem))
	if dt == tensor.Float32 {
		h.f32 = unsafe.Slice((*float32)(p), n*w)
	} else {
		h.f64 = unsafe.Slice((*float64)(p), n*w)
	}
	return h, nil
}

// release gives the rows' memory back, once (nil: nothing).
func (h *layerRows) release() {
	if h != nil && h.free != nil {
		h.f32, h.f64 = nil, nil
		h.free()
		h.free = nil
	}
}

// upload gathers the rows of ids onto the device; consecutive float32
// ids (a chunk of every node reads the whole layer in order) are used in
// place where the backend can, as the features are (PlaceRows).
func (h *layerRows) upload(be backend.Backend, ids []int32, dt tensor.DType, tier tensor.Tier) (*tensor.Tensor, error) {
	if w, ok := be.(hostWrapper); ok && h.f32 != nil && dt == tensor.Float32 && tier == tensor.Host && consecutive(ids) {
		lo := int(ids[0]) * h.w
		return w.WrapHost(h.f32[lo:lo+len(ids)*h.w], []int{len(ids), h.w})
	}
	t, err := be.Alloc(dt, []int{len(ids), h.w}, tier)
	if err != nil {
		return nil, err
	}
	if h.f64 != nil {
		err = be.Upload(t, GatherRows(h.f64, h.w, ids))
	} else {
		err = be.Upload(t, GatherRows(h.f32, h.w, ids))
	}
	if err != nil {
		be.Release(t)
		return nil, err
	}
	return t, nil
}

// put downloads t, the rows of count nodes from first on: from host
// memory row by row in parallel where the backend can (RowCopier).
func (h *layerRows) put(be backend.Backend, t *tensor.Tensor, first, count int) error {
	lo, hi := first*h.w, (first+count)*h.w
	var dst any
	if h.f64 != nil {
		dst = h.f64[lo:hi]
	} else {
		dst = h.f32[lo:hi]
	}
	if rc, ok := be.(backend.RowCopier); ok && t.Tier() == tensor.Host {
		return rc.DownloadRows(t, nil, dst)
	}
	return be.Download(t, dst)
}

// UseInference applies the strategy's inference option to r; a model
// that does not split into layers is a KeyError on it.
func UseInference(cfg *config.Config, r *Runner) error {
	if !options.InferenceOf(cfg).Layerwise() {
		return nil
	}
	if err := r.EnableLayerwise(); err != nil {
		return cfg.KeyError(fmt.Sprintf("%v: model %s does not run layer by layer; use inference = \"blocks\"", err, cfg.Model.Name), options.InferenceKey(cfg)...)
	}
	return nil
}

// layerwiseForward runs the model layer by layer over the chunks of
// r.Eval (contiguous node ranges) and hands each chunk's output to fn.
func (r *Runner) layerwiseForward(ctx context.Context, fn func(nodes []int32, out *tensor.Tensor) error) error {
	e := r.Env
	var prev *layerRows // the previous layer's rows of every node; nil: the features
	defer func() { prev.release() }()
	for l := range r.lw.layers {
		var next *layerRows
		if l < len(r.lw.layers)-1 {
			var err error
			if next, err = newLayerRows(e.DT, e.DS.NumNodes, r.lw.widths[l+1]); err != nil {
				return err
			}
		}
		chunks, err := r.layerChunks(ctx, l, prev, next, fn)
		prev.release()
		prev = next
		if err != nil {
			return fmt.Errorf("layer-wise inference, layer %d: %w", l, err)
		}
		r.lw.chunks[l] = chunks
	}
	return nil
}

// layerChunks runs layer l over its chunks (the last evaluation's, or
// r.Eval's; on the host, r.Eval's one piece of every node is split as
// hostChunks says), halving a chunk that runs the device out of memory (the
// results do not depend on the chunks), and returns the chunks that ran.
func (r *Runner) layerChunks(ctx context.Context, l int, prev, next *layerRows, fn func([]int32, *tensor.Tensor) error) ([][]int32, error) {
	queue := r.lw.chunks[l]
	if queue == nil {
		queue = r.Eval
		if len(queue) == 1 && r.Env.Tier == tensor.Host && len(queue[0]) == r.Env.DS.NumNodes {
			var err error
			if queue, err = r.hostChunks(ctx, l); err != nil { // all nodes in one piece: bound it
				return nil, err
			}
		}
	}
	queue = slices.Clone(queue)
	var ran [][]int32
	var all []int32 // every node's id, when the layer reads its rows in place
	if r.inPlace(l) {
		all = Iota32From(0, r.Env.DS.NumNodes)
	}
	for len(queue) > 0 {
		nodes := queue[0]
		queue = queue[1:]
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		err := r.runChunk(ctx, l, all, prev, next, nodes, fn)
		var oom *backend.OutOfMemoryError
		if errors.As(err, &oom) && len(nodes) > 1 {
			h := len(nodes) / 2
			queue = append([][]int32{nodes[:h], nodes[h:]}, queue...)
			continue
		}
		if err != nil {
			return nil, err
		}
		ran = append(ran, nodes)
	}
	return ran, nil
}

// runChunk runs layer l over the destinations nodes: in place when all
// is set and nodes are a range (rangeChunk), else over their sampled
// one-hop block.
func (r *Runner) runChunk(ctx context.Context, l int, all []int32, prev, next *layerRows, nodes []int32, fn func([]int32, *tensor.Tensor) error) error {
	if all != nil && consecutive(nodes) {
		return r.rangeChunk(ctx, l, all, prev, next, int(nodes[0]), int(nodes[0])+len(nodes), fn)
	}
	blocks, err := sampling.Full{Hops: 1}.Sample(ctx, r.Env.Adjs.Adj, nodes, 0)
	if err != nil {
		return err
	}
	return r.layerChunk(ctx, l, blocks, prev, next, nodes, fn)
}

// rangeOf returns the feature rows of ids without a copy when ids are
// consecutive (a chunk of every node reads itself in order).
func (e Env) rangeOf(ids []int32) (FeatRows, bool) {
	if !consecutive(ids) {
		return FeatRows{}, false
	}
	return e.RowRange(int(ids[0]), int(ids[0])+len(ids))
}

// consecutive reports whether ids are a non-empty run of consecutive
// node ids.
func consecutive(ids []int32) bool {
	for i, v := range ids {
		if v != ids[0]+int32(i) {
			return false
		}
	}
	return len(ids) > 0
}

// layerChunk runs layer l over one chunk's block: its input rows from
// prev (or the features), its output rows into next, or at the last layer
// (next nil) to fn.
func (r *Runner) layerChunk(ctx context.Context, l int, blocks []sampling.Block, prev, next *layerRows, nodes []int32, fn func([]int32, *tensor.Tensor) error) error {
	e := r.Env
	be := backend.ForPurpose(e.Be, purposeInference)
	src := blocks[0].Src
	var input *tensor.Tensor
	var err error
	var x FeatRows
	switch {
	case prev != nil:
		input, err = prev.upload(be, src, e.DT, e.Tier)
	case e.Entries != nil: // bound as entries (entries.go)
		x, err = e.GatherInput(src)
	default:
		input, err = r.firstInput(be, src)
	}
	if err != nil {
		return err
	}
	bb, err := r.bind(r.lw.layers[l], l, blocks, x, input, true) // bind owns input
	if err != nil {
		return err
	}
	defer bb.Release(e)
	if err := bb.Prog.Forward(ctx, engine.Mode{}); err != nil {
		return err
	}
	if next == nil {
		return fn(nodes, bb.Prog.Output())
	}
	return next.put(be, bb.Prog.Output(), int(nodes[0]), len(nodes))
}

// firstInput places the feature rows of src for the first layer: in
// place where they are consecutive and the backend can, else gathered.
func (r *Runner) firstInput(be backend.Backend, src []int32) (*tensor.Tensor, error) {
	e := r.Env
	if x, ok := e.rangeOf(src); ok {
		return PlaceRows(be, x, e.Half, []int{len(src), e.Dim}, e.DT, e.Tier)
	}
	x, err := e.GatherInput(src)
	if err != nil {
		return nil, err
	}
	return uploadRows(be, x, e.Half, []int{len(src), e.Dim}, e.DT, e.Tier)
}
