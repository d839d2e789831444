package chunked

import (
	"context"
	"fmt"

	"strata/core/backend"
	"strata/core/engine"
	"strata/core/ir"
	"strata/plugins/strategy/internal/chunkfeed"
	"strata/plugins/strategy/internal/chunkplan"
	"strata/plugins/strategy/internal/hosttier"
)

// A fixed first aggregation (chunked.precompute, issue 35). The first
// layer reads the features, which no step changes; when it aggregates
// them before anything learned or random touches them (GCN's Â·X·W with
// no input dropout: ir.Graph.ConstCut), that aggregation is the same
// every epoch. The run computes it once, over the chunks before the
// first epoch, into the host tier, and the rest of the layer, row-wise,
// runs as a node pass over it: each node's row once a pass rather than
// the chunks loading every neighbour's features in forward and again
// in backward (SGC's precomputation, Wu et al. 2019, applied to the one
// layer whose input is fixed). The chunks of the precomputation are the
// layer's, so each row is the sum the layer's chunk would compute.

// fixedAgg is layer 0's fixed aggregation: its graph (input → cut), the
// rest of the layer over the cut's rows, the cut's width and its rows
// for every node.
type fixedAgg struct {
	g, rest *ir.Graph
	width   int
	rows    hosttier.Rows
}

// precomputeOn reports whether the run computes a fixed first
// aggregation once: chunked.precompute = "input", or by default on a
// host backend (the cpu).
func (r *chunkedRun) precomputeOn() bool { return r.hostDefault(r.opts.Precompute, "input") }

// planFixed decides whether layer 0's aggregation is computed once: the
// key allows it, the model has a layer after it (the last layer's
// chunks compute the loss) and the layer has a fixed aggregation that
// its rest reads row by row (ir.Graph.ConstCut).
func (r *chunkedRun) planFixed() error {
	if !r.precomputeOn() {
		return nil
	}
	if len(r.layers) < 2 {
		r.fixedWhy = "a one-layer model's chunks compute the loss"
		return nil
	}
	cut, ok := r.layers[0].ConstCut()
	if !ok {
		r.fixedWhy = "layer 0 drops out, multiplies or otherwise changes its input before it aggregates (model.input_dropout, W first), reads the input beside the aggregation (GraphSAGE's root product) or aggregates again after a learned op"
		return nil
	}
	pre, rest, err := r.layers[0].CutConst(cut)
	if err != nil {
		return fmt.Errorf("chunked: layer 0: %w", err)
	}
	r.fixed = &fixedAgg{g: pre, rest: rest, width: int(r.layers[0].Ops[cut].Shape[1])}
	return nil
}

// fixedNode is layer 0's rest as a node pass: the fixed aggregation's
// rows → h[1], dh[1] → no input gradient (the features have none).
func (r *chunkedRun) fixedNode() nodePass {
	return nodePass{g: r.fixed.rest, in: r.fixed.rows, width: r.fixed.width, out: r.h[1], dout: r.dh[1], purpose: backend.PurposeFeatures}
}

// fixedPeak is the device peak of layer 0's node pass over plan's ranges
// (0 without a fixed aggregation).
func (r *chunkedRun) fixedPeak(plan *chunkplan.Plan) (int64, error) {
	if r.fixed == nil {
		return 0, nil
	}
	g := r.fixed.rest
	if r.fused != nil {
		g = r.fused
	}
	return r.nodePassPeak(plan, 0, g, r.fixed.width, false)
}

// allocFixed gives the fixed aggregation its matrix in arena.
func (r *chunkedRun) allocFixed(arena *hosttier.Arena) error {
	if r.fixed == nil {
		return nil
	}
	var err error
	r.fixed.rows, err = arena.Matrix(r.e.DS.NumNodes, r.fixed.width)
	return err
}

// fixedWidths returns the width of the host tier's matrix of the fixed
// aggregation (none without one).
func (r *chunkedRun) fixedWidths() []int {
	if r.fixed == nil {
		return nil
	}
	return []int{r.fixed.width}
}

// precompute runs the fixed aggregation over every chunk, in inference
// (nothing in it is random or learned), and writes each chunk's
// destination rows to the host tier.
func (r *chunkedRun) precompute(ctx context.Context) error {
	if r.fixed == nil {
		return nil
	}
	rows := r.fixed.rows
	err := r.pass("precompute", 0, true, nil, func(k int, c *chunkplan.Chunk, feed *chunkfeed.Feed) error {
		b, err := r.bindGraph(r.fixed.g, 0, k, c, true, feed)
		if err != nil {
			return err
		}
		defer b.release(r.e.Be)
		if err := b.prog.Forward(ctx, engine.Mode{}); err != nil {
			return err
		}
		out, err := r.hostView(purposeOutputs, rows, b.prog.Output())
		if err != nil {
			return err
		}
		return rows.Put(c.Dst, out)
	})
	if err != nil {
		return fmt.Errorf("chunked: precomputing layer 0's aggregation: %w", err)
	}
	return nil
}

// fixedForward runs layer 0's rest over every node from the fixed
// aggregation, writing h[1].
func (r *chunkedRun) fixedForward(ctx context.Context, seed uint64, training bool) error {
	if err := r.nodeForward(ctx, r.fixedNode(), seed, training); err != nil {
		return fmt.Errorf("layer 0 node pass: %w", err)
	}
	return nil
}

// fixedBackward runs layer 0's rest backward over every node once dh[1]
// is complete, accumulating its parameters' gradients on device 0.
func (r *chunkedRun) fixedBackward(ctx context.Context, seed uint64) error {
	if err := r.nodeBackward(ctx, r.fixedNode(), seed); err != nil {
		return fmt.Errorf("layer 0 node pass: %w", err)
	}
	return nil
}

// fixedAnnouncement says that layer 0's aggregation is computed once (""
// when it is not).
func (r *chunkedRun) fixedAnnouncement() string {
	if r.fixed == nil {
		if r.opts.Precompute == "input" {
			return "; chunked.precompute = \"input\": no fixed first aggregation to compute once (" + r.fixedWhy + "), so layer 0's chunks aggregate every pass"
		}
		return ""
	}
	return fmt.Sprintf("; layer 0 aggregates its input once before the first epoch (%d wide) and runs the rest of the layer once per node", r.fixed.width)
}

// fixedFigure is the width of the fixed aggregation (0: none).
func (r *chunkedRun) fixedFigure() int {
	if r.fixed == nil {
		return 0
	}
	return r.fixed.width
}

// dropFixedChoice keeps nothing of layer 0's chunk passes where its
// aggregation is computed once: they do not run, so the layer neither
// caches nor splits (and takes no matrix of kept rows in the host file).
func (r *chunkedRun) dropFixedChoice() {
	if r.fixed == nil {
		return
	}
	r.cache[0] = false
	if r.split != nil {
		r.split[0] = nil
	}
	if r.splitWhy != nil {
		r.splitWhy[0] = "its aggregation is computed once (chunked.precompute)"
	}
}
