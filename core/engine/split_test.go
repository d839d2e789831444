package engine

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"strata/core/ir"
	"strata/core/tensor"
)

// splitLayer records a layer on b: x [N,8] in, its output out.
type splitLayer func(b *ir.Builder, x, g, gs int32) int32

// TestSplitPlans sizes the split of layer shapes on a block of 5
// destinations, 9 sources and 20 edges (float64, the input's gradient
// taken, dropout on): which layers split, which input rows their
// backward reads, the bytes kept, the aggregations' outputs (5 rows
// of 8 values; a max aggregation's winners as int32 too), and the work
// the backward reruns, counted by hand: the values the rerun ops write
// and Σ K·M of the rerun products with a weight.
func TestSplitPlans(t *testing.T) {
	w := func(b *ir.Builder, name string, in, out int64) int32 {
		return b.Param(name, []int64{in, out}, "glorot")
	}
	cases := []struct {
		name   string
		layer  splitLayer
		input  string // none, dst, all, or "" when it does not split
		kept   int64
		rerun  int64 // values the rerun ops write
		dense  int64 // Σ K·M of the rerun products with a weight
		reason string
	}{
		{"gcn aggregate first", func(b *ir.Builder, x, _, gs int32) int32 {
			h := b.MatMul(b.Aggregate(gs, b.Dropout(x, 0.5), "gcn"), w(b, "W", 8, 16))
			return b.Unary(ir.OpReLU, b.Bias(h, b.Param("b", []int64{16}, "zeros")), 0)
		}, "none", 5 * 8 * 8, 2 * 5 * 16, 8 * 16, ""}, // a·W and its bias (the ReLU's backward reads the bias's output)
		{"gcn weight first", func(b *ir.Builder, x, _, gs int32) int32 {
			return b.Aggregate(gs, b.MatMul(b.Dropout(x, 0.5), w(b, "W", 8, 4)), "gcn")
		}, "all", 5 * 4 * 8, 9 * 8, 0, ""}, // the dropout, which dW = xᵀ·dz reads
		{"sage root term", func(b *ir.Builder, x, g, _ int32) int32 {
			d := b.Dropout(x, 0.5)
			root := b.Bias(b.MatMul(d, w(b, "Wr", 8, 4)), b.Param("br", []int64{4}, "zeros"))
			return b.Binary(ir.OpAdd, root, b.MatMul(b.Aggregate(g, d, "mean"), w(b, "Wn", 8, 4)))
		}, "dst", 5 * 8 * 8, 9 * 8, 0, ""}, // the dropout, which dW_r reads
		{"root term through log", func(b *ir.Builder, x, g, _ int32) int32 {
			root := b.MatMul(b.Unary(ir.OpLog, b.Unary(ir.OpSigmoid, x, 0), 0), w(b, "Wr", 8, 4))
			return b.Binary(ir.OpAdd, root, b.MatMul(b.Aggregate(g, x, "sum"), w(b, "Wn", 8, 4)))
		}, "dst", 5 * 8 * 8, 2 * 5 * 8, 0, ""}, // the sigmoid (log's backward reads it) and the log (dW_r reads it), on the destinations (pushNarrows)
		{"max aggregation", func(b *ir.Builder, x, g, _ int32) int32 {
			return b.MatMul(b.Aggregate(g, x, "max"), w(b, "W", 8, 4))
		}, "none", 5*8*8 + 5*8*4, 0, 0, ""},
		{"edge messages", func(b *ir.Builder, x, g, _ int32) int32 {
			return b.MatMul(b.Table(ir.OpSegmentSum, g, b.Table(ir.OpGatherSrc, g, x, 0), 0), w(b, "W", 8, 4))
		}, "none", 5 * 8 * 8, 0, 0, ""},
		{"attention", func(b *ir.Builder, x, _, gs int32) int32 {
			h := b.MatMul(x, w(b, "W", 8, 4))
			s := b.UAddV(gs, b.HeadDot(h, b.Param("as", []int64{1, 4}, "glorot")), b.HeadDot(h, b.Param("ad", []int64{1, 4}, "glorot")))
			return b.SpMMEdge(gs, b.EdgeSoftmax(gs, b.Unary(ir.OpLeakyReLU, s, 0.2)), h)
		}, "", 0, 0, 0, "edge values"},
		{"lstm aggregation", func(b *ir.Builder, x, g, _ int32) int32 {
			return b.LSTMAggregate(g, x, w(b, "Wih", 8, 16), w(b, "Whh", 4, 16), b.Param("bl", []int64{16}, "zeros"))
		}, "", 0, 0, 0, "edge-sized state"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := ir.NewBuilder()
			x := b.Input("x", 8)
			b.Output(c.layer(b, x, b.Graph("adj"), b.Graph("adj_self")))
			g, err := b.Finish()
			if err != nil {
				t.Fatal(err)
			}
			sz, err := NewSizer(g, tensor.Float64)
			if err != nil {
				t.Fatal(err)
			}
			shape := BlockShape{Dst: 5, Src: 9, Edges: map[string]int64{"adj": 20, "adj_self": 25},
				Degrees: map[string]Degrees{"adj": {Rows1: 5, Rows2: 5, Max: 6}, "adj_self": {Rows1: 5, Rows2: 5, Max: 7}}}
			sp, size, err := sz.Split(shape, Usage{AccumulateGrads: true, InputGrad: true, Resumable: true})
			kept := size.Kept
			if err != nil {
				t.Fatal(err)
			}
			input := ""
			switch {
			case !sp.Applies:
			case sp.NeedsInput:
				input = "all"
			case sp.DstRows:
				input = "dst"
			default:
				input = "none"
			}
			if input != c.input || kept != c.kept || !strings.Contains(sp.Reason, c.reason) {
				t.Errorf("input rows %q, kept %d bytes, reason %q; want %q, %d, %q", input, kept, sp.Reason, c.input, c.kept, c.reason)
			}
			if size.RerunValues != c.rerun || size.RerunDense != c.dense {
				t.Errorf("reruns %d values and products of Σ K·M %d; want %d, %d", size.RerunValues, size.RerunDense, c.rerun, c.dense)
			}
		})
	}
}

// TestSplitResume keeps only what the split keeps of a training forward
// (every op case of the gradient checks, the input's gradient taken),
// overwrites every other value and forward state with NaN (and the
// input too when the split reads none of it), restores the kept buffers
// and runs Backward after ResumeSplit: the parameters' and the input's
// gradients equal those of Forward and Backward, bitwise.
func TestSplitResume(t *testing.T) {
	applied := 0
	for _, inputGrad := range []bool{true, false} {
		for _, c := range gradCases() {
			name := c.name + "/buffers-shared"
			if inputGrad {
				name = c.name + "/input-gradient"
			}
			t.Run(name, func(t *testing.T) {
				if checkSplitResume(t, c, inputGrad) {
					applied++
				}
			})
		}
	}
	if applied == 0 {
		t.Fatal("no case splits")
	}
}

// checkSplitResume is TestSplitResume's check of one case, with the
// input's gradient (every value a buffer of its own) or without (values
// sharing buffers by lifetime, in place); it reports whether the case
// splits.
func checkSplitResume(t *testing.T, c gradCase, inputGrad bool) bool {
	ctx := context.Background()
	gr := buildCase(t, c)
	h := newHarness(t, gr, tensor.Float64)
	env := h.prog.env
	env.InputGrad, env.Resumable, env.Split = inputGrad, true, true
	p, err := Bind(gr, env, h.prog.ParamSet())
	if err != nil {
		t.Fatal(err)
	}
	h.prog = p
	sp := p.Split()
	if !sp.Applies {
		t.Logf("does not split: %s", sp.Reason)
		return false
	}
	grads := func() []float64 {
		var out []float64
		gs := paramGrads(p)
		if inputGrad {
			in, err := p.InputGrad()
			if err != nil {
				t.Fatal(err)
			}
			gs = append(gs, in)
		}
		for _, g := range gs {
			out = append(out, download(t, h, g)...)
		}
		return out
	}
	h.loss(t, true)
	want := grads()
	mode := Mode{Train: true, Seed: 99}
	if err := p.Forward(ctx, mode); err != nil {
		t.Fatal(err)
	}
	// The loss gradient, from the output the forward computed
	// (the split does not recompute the output).
	if _, err := h.be.SoftmaxCrossEntropy(p.Output(), h.labels, h.idx, p.OutputGrad()); err != nil {
		t.Fatal(err)
	}
	saved := p.SplitSaved(sp)
	kept, err := downloadAny(h, saved)
	if err != nil {
		t.Fatal(err)
	}
	input := download(t, h, env.Input)
	wipeSplit(t, h, p, !sp.NeedsInput && !sp.DstRows)
	restore := func(k int, s *tensor.Tensor) error { return h.be.Upload(s, kept[k]) }
	if err := p.ResumeSplit(ctx, sp, mode, restore); err != nil {
		t.Fatal(err)
	}
	if err := p.Backward(ctx); err != nil {
		t.Fatal(err)
	}
	h.upload(t, env.Input, input)
	if got := grads(); !slices.Equal(got, want) {
		t.Errorf("gradients after ResumeSplit differ from Forward's")
	}
	return true
}

// paramGrads returns the gradients of a program's parameters.
func paramGrads(p *Program) []*tensor.Tensor {
	var out []*tensor.Tensor
	for _, q := range p.Params() {
		out = append(out, q.Grad)
	}
	return out
}

// downloadAny copies float64 and int32 tensors to host slices.
func downloadAny(h *harness, ts []*tensor.Tensor) ([]any, error) {
	out := make([]any, len(ts))
	for i, s := range ts {
		if s.DType() == tensor.Int32 {
			v := make([]int32, s.Numel())
			out[i] = v
			if err := h.be.Download(s, v); err != nil {
				return nil, err
			}
			continue
		}
		v := make([]float64, s.Numel())
		out[i] = v
		if err := h.be.Download(s, v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// wipeSplit overwrites every op value but the parameters' and the
// input's (and the input too with input), and every forward state, with
// NaN (int32 state with zeros).
func wipeSplit(t *testing.T, h *harness, p *Program, input bool) {
	t.Helper()
	nan := func(s *tensor.Tensor) {
		if s == nil {
			return
		}
		if s.DType() == tensor.Int32 {
			if err := h.be.Upload(s, make([]int32, s.Numel())); err != nil {
				t.Fatal(err)
			}
			return
		}
		v := make([]float64, s.Numel())
		for j := range v {
			v[j] = math.NaN()
		}
		h.upload(t, s, v)
	}
	for i, op := range p.g.Ops {
		if op.Kind == ir.OpParam || op.Kind == ir.OpGraph || op.Kind == ir.OpInput && !input {
			continue
		}
		nan(p.vals[i])
		a := &p.aux[i]
		for _, s := range []*tensor.Tensor{a.mask, a.argmax, a.mean, a.invStd, a.gates, a.cells, a.hprev, a.normed} {
			nan(s)
		}
	}
}
