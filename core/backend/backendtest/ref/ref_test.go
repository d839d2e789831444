package ref

import (
	"testing"

	"strata/core/ir"
	"strata/internal/floattol"
)

// TestUnaryModels checks that every unary op of the op table has an error
// model and every binary op a reference, so that a new op cannot enter the
// suite without its bounds.
func TestUnaryModels(t *testing.T) {
	ar := Arith{U: floattol.UFloat32}
	for _, s := range ir.Ops {
		switch s.Class {
		case ir.ClassUnary:
			if _, err := UnaryModel(s); err != nil {
				t.Error(err)
			}
		case ir.ClassBinary:
			if _, err := Binary(ar, s.Name, []float64{1}, []float64{2}); err != nil {
				t.Error(err)
			}
		}
	}
	if _, err := UnaryModel(ir.OpSpec{Name: "Brand new"}); err == nil {
		t.Error("an op without a model was accepted")
	}
}
