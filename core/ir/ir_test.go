package ir

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestBuilderErrors records small bad layers; each must report the first
// bad op by number and kind.
func TestBuilderErrors(t *testing.T) {
	cases := []struct {
		name  string
		build func(b *Builder)
		want  string
	}{
		{"matmul inner dims", func(b *Builder) {
			x := b.Input("x", 4)
			b.Output(b.MatMul(x, b.Param("w", []int64{5, 3}, "glorot")))
		}, "op #2 matmul: inner dims mismatch: a=[N,4] b=[5,3]"},
		{"unknown graph", func(b *Builder) {
			b.Graph("adj2")
		}, `op #0 graph: unknown graph "adj2"`},
		{"bad reducer", func(b *Builder) {
			x := b.Input("x", 4)
			b.Output(b.Aggregate(b.Graph("adj"), x, "median"))
		}, `op #2 aggregate: unknown reducer "median"`},
		{"bad init", func(b *Builder) {
			b.Param("w", []int64{2, 2}, "he")
		}, `op #0 param: "w": unknown init "he"`},
		{"bias width", func(b *Builder) {
			x := b.Input("x", 4)
			b.Output(b.Bias(x, b.Param("b", []int64{3}, "zeros")))
		}, "op #2 bias"},
		{"concat rows", func(b *Builder) {
			x := b.Input("x", 4)
			w := b.Param("w", []int64{4, 4}, "glorot")
			b.Output(b.Concat(x, w))
		}, "op #2 concat"},
		{"dropout rate", func(b *Builder) {
			b.Output(b.Unary(OpDropout, b.Input("x", 4), 1.5))
		}, "op #1 dropout: drop probability 1.5 outside [0,1)"},
		{"lstm shapes", func(b *Builder) {
			x := b.Input("x", 4)
			wih := b.Param("wih", []int64{4, 12}, "uniform")
			whh := b.Param("whh", []int64{3, 12}, "uniform")
			b.Output(b.LSTMAggregate(b.Graph("adj"), x, wih, whh, b.Param("b", []int64{8}, "zeros")))
		}, "op #5 lstm_aggregate: want x [N,C], w_ih [C,4H], w_hh [H,4H] and b [4H], got x=[N,4] w_ih=[4,12] w_hh=[3,12] b=[8]"},
		{"lstm graph", func(b *Builder) {
			x := b.Input("x", 4)
			w := b.Param("w", []int64{4, 4}, "uniform")
			b.Output(b.LSTMAggregate(x, x, w, w, w))
		}, "op #2 lstm_aggregate: argument 0 must be a graph, got input"},
		{"no output", func(b *Builder) {
			b.Input("x", 4)
		}, "layer recorded no output"},
		{"scores of nodes", func(b *Builder) {
			b.OutputScores(b.MatMul(b.Input("x", 4), b.Param("w", []int64{4, 1}, "glorot")))
		}, `op #3 output: a decoder's output must be one score per pair of "adj", [E,1], got [N,1]`},
		{"two scores a pair", func(b *Builder) {
			x := b.Input("x", 2)
			b.OutputScores(b.Table(OpGatherSrc, b.Graph("adj"), x, 0))
		}, `op #3 output: a decoder's output must be one score per pair of "adj", [E,1], got [E_adj,2]`},
		{"scores of adj_self", func(b *Builder) {
			x := b.Input("x", 1)
			b.OutputScores(b.Table(OpGatherSrc, b.Graph("adj_self"), x, 0))
		}, `got [E_adj_self,1]`},
		{"poisoned argument", func(b *Builder) {
			x := b.Input("x", 0)
			b.Output(b.Unary(OpReLU, x, 0))
		}, `op #0 input: input "x" needs a positive width, got 0`},
		{"param overflow wraps negative", func(b *Builder) {
			b.Param("w", []int64{3, 3074457345618258603}, "zeros")
		}, `op #0 param: "w": shape [3,3074457345618258603] has more than 2^63 elements, more than the limit of 268435456 per parameter`},
		{"param overflow wraps to zero", func(b *Builder) {
			b.Param("w", []int64{1 << 32, 1 << 32}, "zeros")
		}, `op #0 param: "w": shape [4294967296,4294967296] has more than 2^63 elements`},
		{"param total budget", func(b *Builder) {
			for i := range 3 {
				b.Param(fmt.Sprintf("w%d", i), []int64{1 << 14, 1 << 14}, "zeros")
			}
		}, `op #2 param: "w2": the layer's parameters would hold 805306368 elements, more than the limit of 536870912`},
		{"input too wide", func(b *Builder) {
			b.Input("x", 1<<40)
		}, `op #0 input: input "x" is 1099511627776 wide, more than the limit of 268435456`},
		{"concat overflow", func(b *Builder) {
			x := b.Input("x", 1<<27)
			y := b.Concat(x, x)
			b.Output(b.Concat(y, y))
		}, `op #2 concat: result would have 536870912 columns, more than the limit of 268435456`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := NewBuilder()
			c.build(b)
			_, err := b.Finish()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func layer(t *testing.T, in, out int64) *Graph {
	t.Helper()
	b := NewBuilder()
	x := b.Input("x", in)
	h := b.Aggregate(b.Graph("adj_self"), x, "gcn")
	h = b.MatMul(h, b.Param("weight", []int64{in, out}, "glorot"))
	b.Output(b.Bias(h, b.Param("bias", []int64{out}, "zeros")))
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestLink(t *testing.T) {
	g, err := Link([]*Graph{layer(t, 8, 4), layer(t, 4, 2)})
	if err != nil {
		t.Fatal(err)
	}
	if n := g.NumParams(); n != 8*4+4+4*2+2 {
		t.Errorf("NumParams = %d", n)
	}
	var names []string
	graphs, inputs := 0, 0
	for _, op := range g.Ops {
		switch op.Kind {
		case OpParam:
			names = append(names, op.Name)
		case OpGraph:
			graphs++
		case OpInput:
			inputs++
		}
	}
	if want := []string{"l0.weight", "l0.bias", "l1.weight", "l1.bias"}; !slices.Equal(names, want) {
		t.Errorf("params %v, want %v", names, want)
	}
	if graphs != 2 || inputs != 1 {
		t.Errorf("%d graph ops and %d inputs after linking, want 2 (one per layer) and 1", graphs, inputs)
	}
	first := len(layer(t, 8, 4).Ops) // layer 1's ops follow layer 0's
	for i, op := range g.Ops {
		want := int32(0)
		if i >= first {
			want = 1
		}
		if op.Layer != want {
			t.Errorf("op %d (%s) has layer %d, want %d", i, op.Kind, op.Layer, want)
		}
	}
	if s := g.Ops[g.Outputs[0]].Shape; !slices.Equal(s, []int64{N, 2}) {
		t.Errorf("output shape %s", ShapeString(s))
	}
	for i, op := range g.Ops {
		for _, a := range op.Args {
			if a < 0 || int(a) >= i {
				t.Fatalf("op %d (%s) refers to %d: not topologically ordered", i, op.Kind, a)
			}
		}
	}
}

func TestLinkErrors(t *testing.T) {
	cases := []struct {
		layers []*Graph
		want   string
	}{
		{nil, "model has no layers"},
		{[]*Graph{layer(t, 8, 4), layer(t, 5, 2)}, "layer 1 takes input width 5 but layer 0 produces 4"},
	}
	for _, c := range cases {
		_, err := Link(c.layers)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}

func TestNumelSaturates(t *testing.T) {
	cases := []struct {
		shape []int64
		want  int64
	}{
		{[]int64{3, 4}, 12},
		{[]int64{3, 3074457345618258603}, math.MaxInt64},
		{[]int64{1 << 32, 1 << 32}, math.MaxInt64},
		{[]int64{1 << 62, 2}, math.MaxInt64},
		{[]int64{1 << 31, 1 << 31, 1}, 1 << 62},
		{[]int64{5, 0, 1 << 62}, 0},
		{nil, 1},
	}
	for _, c := range cases {
		if got := Numel(c.shape); got != c.want {
			t.Errorf("Numel(%v) = %d, want %d", c.shape, got, c.want)
		}
	}
}

func TestLinkParamBudget(t *testing.T) {
	var layers []*Graph
	for range 3 {
		b := NewBuilder()
		x := b.Input("x", 1<<14)
		b.Output(b.MatMul(x, b.Param("w", []int64{1 << 14, 1 << 14}, "zeros")))
		g, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		layers = append(layers, g)
	}
	_, err := Link(layers)
	if err == nil || !strings.Contains(err.Error(), "more than the limit of 536870912") {
		t.Fatalf("err = %v", err)
	}
}

// TestLastHidden finds the input of the last layer: layer 0's output in a
// two-layer model, nothing in a one-layer one.
func TestLastHidden(t *testing.T) {
	l0 := layer(t, 8, 4)
	g, err := Link([]*Graph{l0, layer(t, 4, 2)})
	if err != nil {
		t.Fatal(err)
	}
	h, ok := g.LastHidden()
	if !ok || h != l0.Outputs[0] || g.Ops[h].Shape[1] != 4 {
		t.Errorf("LastHidden = %d, %v; want layer 0's output %d (width 4)", h, ok, l0.Outputs[0])
	}
	one, err := Link([]*Graph{layer(t, 8, 2)})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := one.LastHidden(); ok {
		t.Error("a one-layer model has a last hidden layer")
	}
}
