package ir

import (
	"strings"
	"testing"
)

// TestStructuralEntries checks that every entry of the op table is
// complete for its class: a structural op has a shape rule, operands, an
// implementation name, a cost, sides that match its operands, and reads
// only operands it has; every op kind has exactly one entry.
func TestStructuralEntries(t *testing.T) {
	seen := map[Kind]bool{}
	for _, s := range Ops {
		if s.Kind == "" {
			continue
		}
		if seen[s.Kind] {
			t.Errorf("%s: two entries", s.Kind)
		}
		seen[s.Kind] = true
		for _, k := range s.ReadsArgs {
			if k < 0 || k >= len(s.Operands) {
				t.Errorf("%s: reads operand %d of %d", s.Kind, k, len(s.Operands))
			}
		}
		if s.Sides != "" && len(s.Sides) != len(s.Operands)+1 {
			t.Errorf("%s: sides %q for %d operands", s.Kind, s.Sides, len(s.Operands))
		}
		if GraphOp(s.Kind) != (s.Sides != "") {
			t.Errorf("%s: a graph operand needs sides and sides a graph operand", s.Kind)
		}
		if s.Class != ClassStructural {
			continue
		}
		if s.Infer == nil || s.Impl == "" || s.Cost == nil || s.CostDoc == "" || len(s.Operands) == 0 || len(s.Checks) == 0 {
			t.Errorf("%s: incomplete structural entry (Infer, Impl, Cost, CostDoc, Operands, Checks)", s.Kind)
		}
		if (s.Attr == "") != (s.AttrType == AttrNone) {
			t.Errorf("%s: attribute %q with type %d", s.Kind, s.Attr, s.AttrType)
		}
		for k, o := range s.Operands {
			if o == "g" && k != 0 {
				t.Errorf("%s: a graph operand must come first", s.Kind)
			}
		}
	}
	for _, k := range []Kind{OpInput, OpGraph, OpParam, OpAggregate, OpSpMMEdge, OpMatMul, OpBias, OpAdd, OpSub, OpMul,
		OpScale, OpReLU, OpLeakyReLU, OpELU, OpSigmoid, OpTanh, OpConcat, OpDropout, OpBatchNorm, OpHeadDot, OpUAddV,
		OpUDotV, OpEdgeSoftmax, OpHeadMean, OpLSTMAggregate} {
		if Spec(k) == nil {
			t.Errorf("%s has no entry in the op table", k)
		}
	}
}

// TestRecordErrors checks the generic checks of Record: the arity, a
// graph where one belongs, and an op that is not structural.
func TestRecordErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		rec  func(b *Builder, x, g int32) int32
		want string
	}{
		{"arity", func(b *Builder, x, _ int32) int32 { return b.Record(OpMatMul, Attrs{}, x) }, "takes 2 operands"},
		{"graph operand", func(b *Builder, x, _ int32) int32 { return b.Record(OpAggregate, Attrs{Reducer: "sum"}, x, x) }, "argument 0 must be a graph"},
		{"graph as tensor", func(b *Builder, x, g int32) int32 { return b.MatMul(g, x) }, "argument 0 is the graph"},
		{"not structural", func(b *Builder, x, _ int32) int32 { return b.Record(OpReLU, Attrs{}, x) }, "not a structural op"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := NewBuilder()
			x, g := b.Input("x", 4), b.Graph("adj")
			if h := c.rec(b, x, g); h >= 0 {
				t.Fatalf("recorded %d", h)
			}
			if err := b.Err(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

// TestOpCost checks the cost of a matmul on concrete and symbolic shapes.
func TestOpCost(t *testing.T) {
	b := NewBuilder()
	x := b.Input("x", 5)
	b.Output(b.MatMul(x, b.Param("w", []int64{5, 3}, "glorot")))
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	f, m := OpCost(g, 2, func(d int64) int64 { return map[int64]int64{N: 10}[d] })
	if f != 2*10*5*3 || m != 10*5+5*3+10*3 {
		t.Fatalf("flops %v, values %v", f, m)
	}
}
