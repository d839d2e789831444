package argcheck

import (
	"fmt"
	"strings"
	"testing"

	"strata/core/backend"
	"strata/core/tensor"
)

// dead marks the tensors the test checker treats as not live.
type deadBuf struct{ buf }

// checker is a Checker for the test: tensors on a *deadBuf are not live,
// adjacencies must be adj values.
var checker = Checker[*adj]{
	Name: "be",
	Live: func(op, name string, t *tensor.Tensor) error {
		if t == nil {
			return fmt.Errorf("be: %s: %s is nil", op, name)
		}
		if _, ok := t.Buffer().(*deadBuf); ok {
			return fmt.Errorf("be: %s: %s was released", op, name)
		}
		return nil
	},
	Graph: func(op string, a backend.Adj) (*adj, error) {
		g, ok := a.(*adj)
		if !ok {
			return nil, fmt.Errorf("be: %s: adjacency %T is not ours", op, a)
		}
		return g, nil
	},
}

func dead(shape ...int) *tensor.Tensor { return tensor.New(tensor.Float32, shape, &deadBuf{}) }

func TestField(t *testing.T) {
	for i, want := range []string{"x", "y", "mask", ""} {
		if got := field("x y  mask", i); got != want {
			t.Errorf("field(%d) = %q, want %q", i, got, want)
		}
	}
}

func TestChecker(t *testing.T) {
	a := &adj{rows: 4, cols: 6, nnz: 10}
	x6, y4 := f32(6, 8), f32(4, 8)
	i32 := func(shape ...int) *tensor.Tensor { return tt(tensor.Int32, shape...) }
	tests := []struct {
		name string
		err  error
		want string // "" = no error
	}{
		{"gemm ok", last5(checker.GEMM(false, false, f32(3, 4), f32(4, 5), f32(3, 5))), ""},
		{"gemm dead", last5(checker.GEMM(false, false, f32(3, 4), dead(4, 5), f32(3, 5))), "be: GEMM: b was released"},
		{"gemm dtype", last5(checker.GEMM(false, false, f32(3, 4), tt(tensor.Float64, 4, 5), f32(3, 5))), "be: GEMM: b is float64 but a is float32"},
		{"gemm inner", last5(checker.GEMM(false, false, f32(3, 4), f32(3, 5), f32(3, 5))), "be: GEMM: op(a) is 3×4 but op(b) is 3×5"},
		{"apply fn", second(checker.Apply(backend.LastUnary+1, f32(2), f32(2))), "be: Apply: unknown function 17"},
		{"apply nil", second(checker.Apply(backend.ReLU, f32(2), nil)), "be: Apply: y is nil"},
		{"applybwd x", last4(checker.ApplyBackward(backend.ReLU, f32(3), nil, f32(2), f32(2))), "be: ApplyBackward: x has shape [3] (3 elements), want 2 elements"},
		{"applybwd no x", last4(checker.ApplyBackward(backend.Tanh, nil, f32(2), f32(2), f32(2))), ""},
		{"elementwise op", third(checker.Elementwise(backend.LastBinary+1, f32(2), f32(2), f32(2))), "be: Elementwise: unknown operator"},
		{"copy", checker.Copy(f32(2), tt(tensor.Float64, 2)), "be: Copy: dst"},
		{"headdotbwd nil", fourth(checker.HeadDotBackward(f32(5, 6), f32(2, 3), f32(5, 2), nil, nil)), ""},
		{"headdotbwd da", fourth(checker.HeadDotBackward(f32(5, 6), f32(2, 3), f32(5, 2), nil, f32(3, 2))), "be: HeadDotBackward: da has shape [3 2], want [2,3]"},
		{"dropout p", second(checker.DropoutApply(nil, 1.5, f32(4), nil, f32(4))), "be: DropoutApply: probability 1.5 outside [0,1]"},
		{"dropout mask", second(checker.DropoutApply(nil, 0.5, f32(4), f32(3), f32(4))), "be: DropoutApply: mask has shape [3] (3 elements), want 4 elements"},
		{"bn rows", second(checker.BatchNorm(f32(0, 2), f32(2), f32(2), f32(0, 2), f32(2), f32(2))), "be: BatchNorm: x has no rows"},
		{"bnbwd dy", second(checker.BatchNormBackward(f32(3, 2), f32(2), f32(3, 1), f32(2), f32(2), f32(3, 2), f32(2), f32(2))), "be: BatchNormBackward: dy has shape [3 1], want [3,2]"},
		{"argmax dtype", second(checker.ArgmaxRows(f32(4, 3), f32(4))), "be: ArgmaxRows: out is float32, want int32"},
		{"adam t", second(checker.AdamStep(f32(2), f32(2), f32(2), f32(2), 0)), "be: AdamStep: step 0, want t ≥ 1"},
		{"adam v", second(checker.AdamStep(f32(2), f32(2), f32(2), f32(3), 1)), "be: AdamStep: v has shape [3]"},
		{"gather dead idx", checker.Gather(f32(5, 2), dead(3), f32(3, 2)), "be: Gather: idx was released"},
		{"spmm graph", last4(checker.SpMM(nil, false, nil, x6, y4)), "be: SpMM: adjacency <nil> is not ours"},
		{"spmm dead w", last4(checker.SpMM(a, false, dead(10), x6, y4)), "be: SpMM: w was released"},
		{"spmm x", last4(checker.SpMM(a, false, nil, y4, y4)), "be: SpMM: x has 4 rows, adjacency has 6 columns"},
		{"spmmmax argmax", third(checker.SpMMMax(a, x6, y4, f32(4, 8))), "be: SpMMMax: argmax is float32, want int32 or int64"},
		{"spmmmax ok", third(checker.SpMMMax(a, x6, y4, i32(4, 8))), ""},
		{"edgesoftmax", last4(checker.EdgeSoftmax(a, f32(10, 2), f32(10, 3))), "be: EdgeSoftmax: out has shape [10 3], want [10,2]"},
		{"lstm ok", last5(checker.LSTMAggregate(a, f32(6, 12), f32(3, 12), f32(12), f32(4, 3), nil, nil, nil)), ""},
		{"lstm partial", last5(checker.LSTMAggregate(a, f32(6, 12), f32(3, 12), f32(12), f32(4, 3), f32(10, 12), nil, nil)),
			"be: LSTMAggregate: gates, cells and hprev must be all set (training) or all nil (inference)"},
		{"lstm alias", last5(checker.LSTMAggregate(a, f32(6, 12), f32(3, 12), f32(12), x6, nil, nil, nil)),
			"be: LSTMAggregate: out has shape [6 8], want [4,3]"},
		{"lstmbwd saved", last4(checker.LSTMAggregateBackward(a, f32(3, 12), f32(10, 12), f32(10, 3), tt(tensor.Float64, 10, 3), f32(4, 3), f32(6, 12), f32(3, 12))),
			"be: LSTMAggregateBackward: hprev is float64 but xw is float32"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			switch {
			case tc.want == "" && tc.err != nil:
				t.Fatalf("unexpected error %v", tc.err)
			case tc.want != "" && (tc.err == nil || !strings.HasPrefix(tc.err.Error(), tc.want)):
				t.Fatalf("error %v, want %q", tc.err, tc.want)
			}
		})
	}
}

func TestCheckerAliases(t *testing.T) {
	a := &adj{rows: 4, cols: 6, nnz: 10}
	out := f32(4, 3)
	alias := tensor.New(tensor.Float32, []int{10, 3}, out.Buffer())
	_, _, _, _, err := checker.LSTMAggregate(a, f32(6, 12), f32(3, 12), f32(12), out, f32(10, 12), f32(10, 3), alias)
	if want := "be: LSTMAggregate: out must not alias an input or the saved state"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

// The checks of the hot ops allocate nothing when the operands are good.
func TestCheckerAllocs(t *testing.T) {
	a := &adj{rows: 4, cols: 6, nnz: 10}
	x6, y4, w := f32(6, 8), f32(4, 8), f32(10, 2)
	am, bm, cm := f32(3, 4), f32(4, 5), f32(3, 5)
	n := testing.AllocsPerRun(100, func() {
		if _, _, _, err := checker.SpMM(a, false, w, x6, y4); err != nil {
			t.Fatal(err)
		}
		if _, _, _, _, err := checker.GEMM(false, false, am, bm, cm); err != nil {
			t.Fatal(err)
		}
		if _, err := checker.Axpby(y4, y4); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("%v allocations per run, want 0", n)
	}
}

func last4[A, B, C any](_ A, _ B, _ C, err error) error         { return err }
func last5[A, B, C, D any](_ A, _ B, _ C, _ D, err error) error { return err }
