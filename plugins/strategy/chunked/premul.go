package chunked

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"strata/core/backend"
	"strata/core/engine"
	"strata/core/ir"
	"strata/core/tensor"
	"strata/plugins/strategy/internal/chunkfeed"
	"strata/plugins/strategy/internal/chunkplan"
	"strata/plugins/strategy/internal/hosttier"
)

// Node passes (chunked.premultiply, issue 35). A layer that multiplies
// its input by W before it aggregates, Â·(X·W), has every chunk compute
// X·W over all of its source rows: each node's row a few times a pass
// (once per chunk that reads it), with the input's width. Since every row
// of X·W depends on the same row of X alone, the layer's row-wise prefix
// (ir.Graph.RowCut: the ops from the input up to the one value the rest
// of the layer reads) can run once per node instead, over ranges of
// node ids, writing z = X·W to the host tier; the chunks then run the
// rest of the layer over z's rows, which are narrower (GCN 2×128 at 16
// classes: 16 rather than 128 wide). Backward mirrors it: the chunks add
// their dz rows into the host tier, and one more pass over the node
// ranges reruns the prefix, takes dz and accumulates dW = Xᵀ·dz and
// writes dX = dz·Wᵀ (above layer 0). Dropout masks are drawn from the
// rows' ids (engine.Env.NodeIDs), so the node pass draws what the chunks
// drew.

// preLayer is a layer's row-wise prefix that runs once per node: its
// graph (input → cut), the cut's op in the layer and its width, and the
// host tier's rows of the cut (z) and of its gradient (dz).
type preLayer struct {
	g     *ir.Graph
	op    ir.Kind
	width int
	z, dz hosttier.Rows
}

// premulOn reports whether the run cuts layers' row-wise prefixes where
// that moves fewer bytes: chunked.premultiply = "bytes", or by default
// on a host backend (the cpu).
func (r *chunkedRun) premulOn() bool { return r.hostDefault(r.opts.Premultiply, "bytes") }

// hostDefault reports whether a key of the cpu's schedule is on: set to
// on, or left "" on a host backend (simulated devices keep HongTu's
// schedule unless the key asks; "off" is off everywhere).
func (r *chunkedRun) hostDefault(value, on string) bool {
	return value == on || value == "" && r.rows != nil
}

// passRows is the rows a layer pass loads from the host under the run's
// chunked.dedup (the plan's V_ori, V_+p2p or V_+ru).
func (r *chunkedRun) passRows() int64 {
	switch r.dedup {
	case chunkfeed.DedupNone:
		return r.comm.Ori
	case chunkfeed.DedupP2P:
		return r.comm.P2p
	}
	return r.comm.Ru
}

// premulBytes returns the host-tier bytes of layer l's rows over an
// epoch, of input width w, as the chunks run it whole and with its
// prefix cut at a value of width wz. Whole, the chunks load R input rows
// in forward and again in backward and, above layer 0, send R gradient
// rows back: (2 + [l>0])·R·w. Cut, a node pass reads the N input rows
// and writes z in forward, and in backward reads them and dz and, above
// layer 0, writes dX: (2 + [l>0])·N·w + 2·N·wz; the chunks move z's rows
// as they moved the input's and send dz back at every layer: 3·R·wz. R
// is passRows, N the nodes. The cut wins only where chunks share rows
// (R above N) and z is narrower.
func (r *chunkedRun) premulBytes(l, w, wz int) (whole, cut int64) {
	rows, n := r.passRows(), int64(r.e.DS.NumNodes)
	g := int64(2)
	if l > 0 {
		g = 3
	}
	return g * rows * int64(w), g*n*int64(w) + 2*n*int64(wz) + 3*rows*int64(wz)
}

// planPremul cuts, where premulOn and premulBytes say it moves fewer
// bytes, each layer's row-wise prefix off into a node pass: r.layers[l]
// becomes the rest of the layer, over the cut's rows. It returns whether
// any layer was cut (the plans made from the layers must then be made
// again).
func (r *chunkedRun) planPremul() (bool, error) {
	r.pre = make([]*preLayer, len(r.layers))
	if !r.premulOn() {
		return false, nil
	}
	anyCut := false
	for l, lg := range r.layers {
		cut, ok := lg.RowCut()
		if !ok || l == 0 && r.fixed != nil {
			continue
		}
		wz := int(lg.Ops[cut].Shape[1])
		if whole, c := r.premulBytes(l, r.widths[l], wz); c >= whole {
			continue
		}
		pre, post, err := lg.CutRows(cut)
		if err != nil {
			return false, fmt.Errorf("chunked: layer %d: %w", l, err)
		}
		r.layers[l], r.needIn[l] = post, backwardReadsInput(post)
		r.pre[l] = &preLayer{g: pre, op: lg.Ops[cut].Kind, width: wz}
		anyCut = true
	}
	return anyCut, nil
}

// isPre reports whether layer l's prefix runs once per node.
func (r *chunkedRun) isPre(l int) bool { return r.pre != nil && r.pre[l] != nil }

// inWidth is the width of the rows layer l's chunks read: the layer's
// input, or the cut of a node pass.
func (r *chunkedRun) inWidth(l int) int {
	if r.isPre(l) {
		return r.pre[l].width
	}
	return r.widths[l]
}

// chunkIn returns the host rows layer l's chunks read (the layer's input
// or z) and those their input gradients are added into (dh[l] or dz).
func (r *chunkedRun) chunkIn(l int) (rows, grads hosttier.Rows) {
	if r.isPre(l) {
		return r.pre[l].z, r.pre[l].dz
	}
	return r.h[l], r.dh[l]
}

// inputGrad reports whether layer l's chunks compute their input rows'
// gradient: above layer 0, or into dz.
func (r *chunkedRun) inputGrad(l int) bool { return l > 0 || r.isPre(l) }

// layerUsage is how layer l's training program over a chunk runs.
func (r *chunkedRun) layerUsage(l int) engine.Usage {
	return engine.Usage{AccumulateGrads: true, InputGrad: r.inputGrad(l), Resumable: true}
}

// preWidths returns the widths of the host tier's matrices of the node
// passes: z and dz of each, in allocPre's order.
func (r *chunkedRun) preWidths() []int {
	var out []int
	for l := range r.layers {
		if r.isPre(l) {
			out = append(out, r.pre[l].width, r.pre[l].width)
		}
	}
	return out
}

// preRAMShare is the share of the memory budget (--max-memory) that the
// node passes' z and dz may take in RAM beside a host file: 1/preRAMShare.
// The chunks gather their rows at random, a few per node; from the file
// that was one pread per row of 64 bytes (GCN's 16-wide z at R-MAT 2^24:
// 122 M rows a pass, most of the epoch's 489 s of system time).
const preRAMShare = 8

// allocPre gives every node pass its z and dz matrices in arena, or in
// RAM (preInRAM).
func (r *chunkedRun) allocPre(arena *hosttier.Arena) error {
	for l := range r.layers {
		if !r.isPre(l) {
			continue
		}
		for _, m := range []*hosttier.Rows{&r.pre[l].z, &r.pre[l].dz} {
			var err error
			if r.preInRAM {
				*m, err = arena.RAMMatrix(r.e.DS.NumNodes, r.pre[l].width)
			} else {
				*m, err = arena.Matrix(r.e.DS.NumNodes, r.pre[l].width)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// rangeRows is the rows of a node pass's range: about a chunk's
// destinations.
func (r *chunkedRun) rangeRows(plan *chunkplan.Plan) int {
	return max(1, (r.e.DS.NumNodes+len(plan.Chunks)-1)/len(plan.Chunks))
}

// prePeak is the device peak of layer l's node pass over plan's ranges
// above the resident memory (0 without one).
func (r *chunkedRun) prePeak(plan *chunkplan.Plan, l int) (int64, error) {
	if !r.isPre(l) || r.inFused(l) {
		return 0, nil
	}
	return r.nodePassPeak(plan, l, r.pre[l].g, r.widths[l], l > 0)
}

// nodePassPeak is the device peak of a node pass of layer l running g
// over plan's ranges, its input width wide, above the resident memory:
// the range's input rows and g's training program (no chunk buffer is
// held between passes).
func (r *chunkedRun) nodePassPeak(plan *chunkplan.Plan, l int, g *ir.Graph, width int, inputGrad bool) (int64, error) {
	sz, err := engine.NewSizer(g, r.e.DT)
	if err != nil {
		return 0, err
	}
	rows := r.rangeRows(plan)
	// The sizer binds blocks, each with a graph: an empty one, unread.
	shape := engine.BlockShape{Dst: rows, Src: rows, Edges: map[string]int64{"adj": 0}, Degrees: map[string]engine.Degrees{}}
	fp, err := sz.Blocks([]engine.BlockShape{shape}, rows, engine.Usage{AccumulateGrads: true, InputGrad: inputGrad})
	if err != nil {
		return 0, fmt.Errorf("chunked: sizing layer %d's node pass: %w", l, err)
	}
	return int64(rows)*int64(width)*int64(r.e.DT.Size()) + fp.Bytes(), nil
}

// nodeRanges calls fn with the node ids in ranges of rangeRows, in order
// (ids is reused from call to call).
func (r *chunkedRun) nodeRanges(fn func(ids []int32) error) error {
	n := r.e.DS.NumNodes
	step := r.rangeRows(r.plan)
	ids := make([]int32, 0, step)
	for a := 0; a < n; a += step {
		ids = ids[:0]
		for v := a; v < min(a+step, n); v++ {
			ids = append(ids, int32(v))
		}
		if err := fn(ids); err != nil {
			return fmt.Errorf("nodes %d to %d: %w", a, a+len(ids)-1, err)
		}
	}
	return nil
}

// nodePass is a pass of a layer's row-wise part over node ranges: its
// graph, the host rows it reads (of width), those it writes, those its
// output's gradient is read from and (nil: none) those its input's
// gradient is written to, and the traffic purpose of its input rows.
type nodePass struct {
	g         *ir.Graph
	in        hosttier.Rows
	width     int
	out, dout hosttier.Rows
	inGrad    hosttier.Rows
	purpose   string
}

// preNode is layer l's prefix as a node pass: h[l] → z, dz → dh[l]
// above layer 0.
func (r *chunkedRun) preNode(l int) nodePass {
	np := nodePass{g: r.pre[l].g, in: r.h[l], width: r.widths[l], out: r.pre[l].z, dout: r.pre[l].dz, purpose: backend.PurposeActivations}
	if l == 0 {
		np.purpose = backend.PurposeFeatures
	} else {
		np.inGrad = r.dh[l]
	}
	return np
}

// nodeProgs binds a node pass's program on device 0, whose parameters
// (and gradients) it uses, once per range length (a pass has at most
// two: its ranges' and the shorter last one's, bound after the first is
// released) and rebinds it to each range's rows: a program bound afresh
// for every range cleared all its buffers each time, a fifth of an
// R-MAT 2^20 epoch.
type nodeProgs struct {
	r     *chunkedRun
	np    nodePass
	infer bool
	bound *boundNode
}

// boundNode is a node pass's program over ranges of len(ids) rows, its
// input rows x and the ids it is bound to.
type boundNode struct {
	p   *engine.Program
	x   *tensor.Tensor
	ids []int32
}

// nodeProgs starts the bindings of node pass np (infer: inference
// programs); release them when the pass ends.
func (r *chunkedRun) nodeProgs(np nodePass, infer bool) *nodeProgs {
	return &nodeProgs{r: r, np: np, infer: infer}
}

// bind returns the pass's program over the nodes ids, their input rows
// loaded.
func (b *nodeProgs) bind(ids []int32) (*engine.Program, error) {
	r, np := b.r, b.np
	bn := b.bound
	if bn != nil && len(bn.ids) != len(ids) {
		b.release()
		bn = nil
	}
	if bn == nil {
		d := r.devs[0]
		x, err := r.feed.Scratch([]int{len(ids), np.width}, d.tier)
		if err != nil {
			return nil, err
		}
		bn = &boundNode{x: x, ids: slices.Clone(ids)}
		env := engine.Env{Backend: r.e.Be, DType: r.e.DT, Tier: d.tier, Graphs: map[string]*engine.Graph{}, Input: x,
			NodeIDs: [][]int32{bn.ids}, Inference: b.infer, InputGrad: np.inGrad != nil && !b.infer}
		if bn.p, err = engine.Bind(np.g, env, d.ps); err != nil {
			r.e.Be.Release(x)
			return nil, err
		}
		b.bound = bn
	} else {
		copy(bn.ids, ids)
		if err := bn.p.SetNodeIDs(bn.ids); err != nil {
			return nil, err
		}
	}
	if err := r.loadRows(np.purpose, np.in, bn.ids, bn.x); err != nil {
		return nil, fmt.Errorf("input rows: %w", err)
	}
	return bn.p, nil
}

// release releases the program and its input rows.
func (b *nodeProgs) release() {
	if bn := b.bound; bn != nil {
		bn.p.Release()
		b.r.e.Be.Release(bn.x)
		b.bound = nil
	}
}

// preForward runs layer l's prefix over every node (training: with the
// step's dropout) and writes z to the host tier.
func (r *chunkedRun) preForward(ctx context.Context, l int, seed uint64, training bool) error {
	if err := r.nodeForward(ctx, r.preNode(l), seed, training); err != nil {
		return fmt.Errorf("layer %d node pass: %w", l, err)
	}
	return nil
}

// nodeForward runs np over every node (training: with the step's
// dropout) and writes its output rows.
func (r *chunkedRun) nodeForward(ctx context.Context, np nodePass, seed uint64, training bool) error {
	progs := r.nodeProgs(np, !training)
	defer progs.release()
	return r.nodeRanges(func(ids []int32) error {
		p, err := progs.bind(ids)
		if err != nil {
			return err
		}
		if err := p.Forward(ctx, engine.Mode{Train: training, Seed: seed}); err != nil {
			return err
		}
		out, err := r.hostView(purposeOutputs, np.out, p.Output())
		if err != nil {
			return err
		}
		return np.out.Put(ids, out)
	})
}

// preBackward runs layer l's prefix backward over every node once the
// chunks have added dz: the prefix rerun, its parameters' gradients
// accumulated on device 0 and, above layer 0, the input's gradient
// written to dh[l] (each row once: no addition).
func (r *chunkedRun) preBackward(ctx context.Context, l int, seed uint64) error {
	if err := r.nodeBackward(ctx, r.preNode(l), seed); err != nil {
		return fmt.Errorf("layer %d node pass: %w", l, err)
	}
	return nil
}

// nodeBackward runs np backward over every node once its output's
// gradient is complete: np rerun, its parameters' gradients accumulated
// on device 0 and, where np has one, its input's gradient written (each
// row once: no addition).
func (r *chunkedRun) nodeBackward(ctx context.Context, np nodePass, seed uint64) error {
	progs := r.nodeProgs(np, false)
	defer progs.release()
	return r.nodeRanges(func(ids []int32) error {
		p, err := progs.bind(ids)
		if err != nil {
			return err
		}
		if err := p.Forward(ctx, engine.Mode{Train: true, Seed: seed, AccumulateGrads: true}); err != nil {
			return err
		}
		if err := r.loadRows(backend.PurposeGradients, np.dout, ids, p.OutputGrad()); err != nil {
			return err
		}
		if err := p.Backward(ctx); err != nil || np.inGrad == nil {
			return err
		}
		g, err := p.InputGrad()
		if err != nil {
			return err
		}
		buf, err := r.hostView(chunkfeed.PurposeVertGrad, np.inGrad, g)
		if err != nil {
			return err
		}
		return np.inGrad.Put(ids, buf)
	})
}

// preAnnouncement names the layers whose prefix runs once per node ("":
// none).
func (r *chunkedRun) preAnnouncement() string {
	var parts []string
	for l := range r.layers {
		if r.isPre(l) {
			parts = append(parts, fmt.Sprintf("layer %d computes its %s once per node (%d → %d wide) and its chunks aggregate that", l, r.pre[l].op, r.widths[l], r.pre[l].width))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; node passes: " + strings.Join(parts, "; ")
}

// preFigure returns, per layer, the width of the rows its node pass
// writes (0: none), nil when no layer has one (the result keeps its
// fields).
func (r *chunkedRun) preFigure() []int {
	out := make([]int, len(r.layers))
	cut := false
	for l := range r.layers {
		if r.isPre(l) {
			out[l], cut = r.pre[l].width, true
		}
	}
	if !cut {
		return nil
	}
	return out
}

// replanPremul decides the node passes once the plan's rows per pass are
// known (planPremul) and, where a layer was cut, makes again what was
// planned from the whole layers: each layer's split and, with a device
// capacity, the peak estimate of the chosen chunks.
func (r *chunkedRun) replanPremul() error {
	cut, err := r.planPremul()
	if err == nil {
		err = r.planFuse()
	}
	if err != nil || !cut {
		return err
	}
	if r.canSplit != nil {
		if err := r.planSplit(); err != nil {
			return err
		}
	}
	if r.estPeak > 0 {
		r.estPeak, err = r.estimatePeak(r.plan, r.cfg.Train.Optimizer, r.cfg.Train.Momentum)
	}
	return err
}
