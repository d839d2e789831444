package chunked

import (
	"context"
	"fmt"

	"strata/core/backend"
	"strata/core/ir"
)

// Fused node passes. Where layer 0's aggregation is computed once
// (precompute.go) and layer 1 multiplies before it aggregates
// (premul.go), nothing between layer 0's rest and layer 1's prefix is a
// chunk pass: both are row-wise over the same node ranges. They run as
// one node pass (ir.Chain), so that h_1 = layer 0's output and its
// gradient dh_1 never reach the host tier: the forward reads the fixed
// aggregation a_0 and writes z_1; the backward reruns both from a_0,
// reads dz_1 and accumulates both layers' parameter gradients. At R-MAT
// 2^20 (GCN 2×128) that drops h_1 and dh_1's 2 GB of host-file traffic
// an epoch (written once each, h_1 read twice and dh_1 once) for no
// more compute: the backward reran both products before as well.

// planFuse chains layer 0's rest and layer 1's prefix when both are
// node passes.
func (r *chunkedRun) planFuse() error {
	r.fused = nil
	if r.fixed == nil || len(r.layers) < 2 || !r.isPre(1) {
		return nil
	}
	g, err := ir.Chain(r.fixed.rest, r.pre[1].g)
	if err != nil {
		return fmt.Errorf("chunked: fusing layer 0's node pass with layer 1's: %w", err)
	}
	r.fused = g
	return nil
}

// inFused reports whether h_l, the input of layer l, lives only inside
// the fused node pass (never on the host tier).
func (r *chunkedRun) inFused(l int) bool { return l == 1 && r.fused != nil }

// fusedNode is the fused pass: the fixed aggregation's rows → z_1, dz_1
// → no input gradient (the features have none).
func (r *chunkedRun) fusedNode() nodePass {
	return nodePass{g: r.fused, in: r.fixed.rows, width: r.fixed.width, out: r.pre[1].z, dout: r.pre[1].dz, purpose: backend.PurposeFeatures}
}

// nodeForwardAt runs the node pass that starts layer l's forward, if
// any: the fixed layer 0's rest (or, fused, nothing: layer 1 runs it),
// or layer l's prefix (fused: with layer 0's rest before it).
func (r *chunkedRun) nodeForwardAt(ctx context.Context, l int, seed uint64, training bool) error {
	switch {
	case l == 0 && r.fixed != nil && r.fused == nil:
		return r.fixedForward(ctx, seed, training)
	case r.inFused(l):
		if err := r.nodeForward(ctx, r.fusedNode(), seed, training); err != nil {
			return fmt.Errorf("layers 0 and 1 node pass: %w", err)
		}
	case r.isPre(l):
		return r.preForward(ctx, l, seed, training)
	}
	return nil
}

// nodeBackwardAt runs the node pass that ends layer l's backward, if
// any, as nodeForwardAt chooses.
func (r *chunkedRun) nodeBackwardAt(ctx context.Context, l int, seed uint64) error {
	switch {
	case l == 0 && r.fixed != nil && r.fused == nil:
		return r.fixedBackward(ctx, seed)
	case r.inFused(l):
		if err := r.nodeBackward(ctx, r.fusedNode(), seed); err != nil {
			return fmt.Errorf("layers 0 and 1 node pass: %w", err)
		}
	case r.isPre(l):
		return r.preBackward(ctx, l, seed)
	}
	return nil
}

// fusedAnnouncement says that the two node passes run as one ("" when
// they do not).
func (r *chunkedRun) fusedAnnouncement() string {
	if r.fused == nil {
		return ""
	}
	return "; layer 0's rest and layer 1's product run as one node pass (h_1 and its gradient stay off the host tier)"
}
