package ir

import (
	"fmt"
	"slices"
)

// What the host composes around any layer module (model.residual,
// model.jk): ops appended to a layer's graph, or to the linked model,
// recorded through a Builder so that they are shape-checked like a
// module's own.

// JKModes are the jumping-knowledge combinations LinkJK accepts.
var JKModes = []string{"cat", "max", "lstm"}

// extend returns a builder holding g's ops (not its outputs), so that ops
// can be appended to a finished graph.
func extend(g *Graph) *Builder {
	b := NewBuilder()
	b.g.Ops = slices.Clone(g.Ops)
	for i, op := range g.Ops {
		switch op.Kind {
		case OpInput:
			b.inputs[op.Name] = int32(i)
		case OpGraph:
			b.inputs["graph:"+op.Name] = int32(i)
		case OpParam:
			b.params[op.Name] = true
			b.nparam += Numel(op.Shape)
		}
	}
	return b
}

// Residual adds a layer's input x to its output: out + x where the widths
// match, out + x·W otherwise, with W "residual.weight" [in,out] (glorot, no
// bias), as a skip connection with a linear shortcut.
func Residual(g *Graph) (*Graph, error) {
	if len(g.Outputs) != 1 {
		return nil, fmt.Errorf("residual: the layer has %d outputs, want 1", len(g.Outputs))
	}
	x := slices.IndexFunc(g.Ops, func(op Op) bool { return op.Kind == OpInput })
	if x < 0 {
		return nil, fmt.Errorf("residual: the layer does not read its input x")
	}
	b := extend(g)
	out, in := g.Outputs[0], g.Ops[x].Shape[1]
	short := int32(x)
	if w := g.Ops[out].Shape[1]; w != in {
		short = b.MatMul(short, b.Param("residual.weight", []int64{in, w}, "glorot"))
	}
	b.Output(b.Binary(OpAdd, out, short))
	res, err := b.Finish()
	if err != nil {
		return nil, fmt.Errorf("residual: %w", err)
	}
	return res, nil
}

// LinkJK links layers (each ending in its activation, none the
// classifier) and combines every layer's output h_0 .. h_{L-1} into the
// model output, as PyG's JumpingKnowledge followed by a Linear to classes:
// "cat" concatenates them, "max" takes their elementwise maximum, "lstm"
// weighs them by a bi-directional LSTM's attention over the layers
// (jkLSTM). The combination and the classifier ("jk.*" params) are ops of
// the last layer.
func LinkJK(layers []*Graph, mode string, classes int64) (*Graph, error) {
	g, outs, err := link(layers)
	if err != nil {
		return nil, err
	}
	b := extend(g)
	h := outs[0]
	switch mode {
	case "cat", "max":
		for _, o := range outs[1:] {
			if mode == "cat" {
				h = b.Concat(h, o)
			} else {
				h = b.Binary(OpMaximum, h, o)
			}
		}
	case "lstm":
		h = jkLSTM(b, outs)
	default:
		return nil, fmt.Errorf("jumping knowledge %q: unknown mode (allowed: %v)", mode, JKModes)
	}
	w := b.Shape(h)
	if w == nil {
		return nil, fmt.Errorf("jumping knowledge %s: %w", mode, b.Err())
	}
	b.Output(b.Bias(b.MatMul(h, b.Param("jk.lin.weight", []int64{w[1], classes}, "glorot")), b.Param("jk.lin.bias", []int64{classes}, "zeros")))
	out, err := b.Finish()
	if err != nil {
		return nil, fmt.Errorf("jumping knowledge %s: %w", mode, err)
	}
	last := int32(len(layers) - 1)
	for i := len(g.Ops); i < len(out.Ops); i++ {
		out.Ops[i].Layer = last
	}
	if err := checkModelParams(out); err != nil {
		return nil, err
	}
	return out, nil
}

// jkLSTM is PyG's JumpingKnowledge("lstm"): a bi-directional LSTM of
// hidden width H = L·C/2 (zero initial state, gates i, f, g, o as
// PyTorch) reads the layer outputs xs (each [N,C]) as a sequence, a
// linear "jk.att" scores every step from both directions' hidden states,
// and the result is Σ_t softmax_t(score)·x_t [N,C]. A [N,1] weight is
// spread over C columns by a product with the buffer "jk.ones" [1,C].
func jkLSTM(b *Builder, xs []int32) int32 {
	c := b.Shape(xs[0])
	if c == nil {
		return -1
	}
	hid := max(int64(len(xs))*c[1]/2, 1)
	fwd := lstmRun(b, "jk.lstm.fwd", xs, c[1], hid)
	rev := slices.Clone(xs)
	slices.Reverse(rev)
	bwd := lstmRun(b, "jk.lstm.bwd", rev, c[1], hid)
	slices.Reverse(bwd)
	af, ab := b.Param("jk.att.weight_fwd", []int64{hid, 1}, "glorot"), b.Param("jk.att.weight_bwd", []int64{hid, 1}, "glorot")
	ba := b.Param("jk.att.bias", []int64{1}, "zeros")
	scores := make([]int32, len(xs))
	top := int32(-1)
	for t := range xs {
		scores[t] = b.Binary(OpAdd, b.Binary(OpAdd, b.MatMul(fwd[t], af), b.MatMul(bwd[t], ab)), ba)
		top = accumulateOp(b, OpMaximum, top, scores[t])
	}
	ones := b.Buffer("jk.ones", []int64{1, c[1]}, "ones")
	sum, out := int32(-1), int32(-1)
	for t := range xs {
		scores[t] = b.Unary(OpExp, b.Binary(OpSub, scores[t], top), 0) // stable: softmax(s) = softmax(s - max s)
		sum = accumulateOp(b, OpAdd, sum, scores[t])
	}
	for t, x := range xs {
		out = accumulateOp(b, OpAdd, out, b.Binary(OpMul, x, b.MatMul(b.Binary(OpDiv, scores[t], sum), ones)))
	}
	return out
}

// accumulateOp is acc kind v, or v when acc is unset (-1 before the
// first term; a poisoned builder has failed already).
func accumulateOp(b *Builder, kind Kind, acc, v int32) int32 {
	if acc < 0 {
		return v
	}
	return b.Binary(kind, acc, v)
}

// lstmRun runs one direction of an LSTM (input width in, hidden hid) over
// xs from a zero state and returns its hidden state after every step.
func lstmRun(b *Builder, name string, xs []int32, in, hid int64) []int32 {
	type gate struct{ w, u, bias int32 }
	gates := make([]gate, 4)
	for k, g := range []string{"i", "f", "g", "o"} {
		gates[k] = gate{b.Param(name+".weight_i"+g, []int64{in, hid}, "uniform"),
			b.Param(name+".weight_h"+g, []int64{hid, hid}, "uniform"), b.Param(name+".bias_"+g, []int64{hid}, "zeros")}
	}
	pre := func(k int, x, h int32) int32 {
		v := b.Bias(b.MatMul(x, gates[k].w), gates[k].bias)
		if h >= 0 {
			v = b.Binary(OpAdd, v, b.MatMul(h, gates[k].u))
		}
		return v
	}
	hs := make([]int32, len(xs))
	h, cell := int32(-1), int32(-1)
	for t, x := range xs {
		i, g := b.Unary(OpSigmoid, pre(0, x, h), 0), b.Unary(OpTanh, pre(2, x, h), 0)
		o := b.Unary(OpSigmoid, pre(3, x, h), 0)
		ig := b.Binary(OpMul, i, g)
		if cell >= 0 { // the forget gate has nothing to forget at the first step
			ig = b.Binary(OpAdd, b.Binary(OpMul, b.Unary(OpSigmoid, pre(1, x, h), 0), cell), ig)
		}
		cell = ig
		h = b.Binary(OpMul, o, b.Unary(OpTanh, cell, 0))
		hs[t] = h
	}
	return hs
}
