package argcheck

import (
	"strings"
	"testing"

	"strata/core/backend"
	"strata/core/graph"
	"strata/core/tensor"
)

type buf struct{ _ byte } // not zero-sized: distinct buffers have distinct addresses

func (*buf) Tier() tensor.Tier { return tensor.Host }

// tt returns a tensor handle with its own storage.
func tt(dt tensor.DType, shape ...int) *tensor.Tensor { return tensor.New(dt, shape, &buf{}) }

func f32(shape ...int) *tensor.Tensor { return tt(tensor.Float32, shape...) }

// adj is a rows×cols adjacency with nnz edges.
type adj struct {
	rows, cols int
	nnz        int64
}

func (a adj) Rows() int         { return a.rows }
func (a adj) Cols() int         { return a.cols }
func (a adj) NNZ() int64        { return a.nnz }
func (a adj) Tier() tensor.Tier { return tensor.Host }

func TestChecks(t *testing.T) {
	a := adj{rows: 4, cols: 6, nnz: 10}
	x6, y4 := f32(6, 8), f32(4, 8)
	c := f32(3, 5)
	tests := []struct {
		name string
		err  error
		want string // "" = no error
	}{
		{"floats ok", second(Floats("Op", "a b", f32(2), f32(3))), ""},
		{"floats int", second(Floats("Op", "a b", f32(2), tt(tensor.Int32, 2))), "Op: b is int32, want float32 or float64"},
		{"floats mixed", second(Floats("Op", "a b", f32(2), tt(tensor.Float64, 2))), "Op: b is float64 but a is float32"},
		{"int", Int("Op", "idx", f32(2)), "Op: idx is float32, want int32 or int64"},
		{"dims", Dims("Op", "y", f32(2, 3), 3, 2), "Op: y has shape [2 3], want [3,2]"},
		{"numel", Numel("Op", "v", f32(5), 4), "Op: v has shape [5] (5 elements), want 4 elements"},
		{"gemm ok", fourth(GEMM(true, false, f32(4, 3), f32(4, 5), c)), ""},
		{"gemm inner", fourth(GEMM(false, false, f32(3, 4), f32(3, 5), c)), "GEMM: op(a) is 3×4 but op(b) is 3×5"},
		{"gemm c", fourth(GEMM(false, false, f32(3, 4), f32(4, 5), f32(5, 3))), "GEMM: c has shape [5 3], want [3,5]"},
		{"gemm alias", fourth(GEMM(false, false, c, f32(5, 5), c)), "GEMM: c must not alias a or b"},
		{"spmm ok", second(SpMM(a, false, f32(10, 2), x6, y4)), ""},
		{"spmm trans x", second(SpMM(a, true, nil, x6, y4)), "SpMM: x has 6 rows, transposed adjacency has 4 columns"},
		{"spmm y", second(SpMM(a, false, nil, x6, f32(4, 7))), "SpMM: y has shape [4 7], want [4,8]"},
		{"spmm heads", second(SpMM(a, false, f32(10, 3), x6, y4)), "SpMM: x has 8 columns, not a multiple of the 3 heads of w"},
		{"spmm w rows", second(SpMM(a, false, f32(9), x6, y4)), "SpMM: w has 9 rows, adjacency has 10 edges"},
		{"spmm alias", second(SpMM(adj{6, 6, 1}, false, nil, x6, x6)), "SpMM: y must not alias x or w"},
		{"spmmmax", SpMMMax(a, x6, y4, tt(tensor.Int32, 4, 7)), "SpMMMax: argmax has shape [4 7], want [4,8]"},
		{"sddmm ok", second(SDDMM(a, y4, x6, f32(10, 2))), ""},
		{"sddmm heads", second(SDDMM(a, y4, x6, f32(10, 3))), "SDDMM: x has 8 columns, not a multiple of the 3 heads of out"},
		{"uaddv", UAddV(a, f32(6, 2), f32(4, 2), f32(9, 2)), "UAddV: out has shape [9 2], want [10,2]"},
		{"edgereduce toSrc", EdgeReduce(a, true, f32(10, 2), f32(4, 2)), "EdgeReduce: out has shape [4 2], want [6,2]"},
		{"edges", second(Edges("EdgeSoftmax", "scores out", a, f32(10, 2), f32(10, 3))), "EdgeSoftmax: out has shape [10 3], want [10,2]"},
		{"lstm ok", second(LSTM("L", a, f32(6, 12), f32(3, 12), f32(12))), ""},
		{"lstm xw", second(LSTM("L", a, f32(5, 12), f32(3, 12), f32(12))), "L: xw has shape [5 12], want [6,12]"},
		{"lstm saved", LSTMSaved("L", a, 3, f32(10, 12), f32(10, 3), f32(9, 3)), "L: hprev has shape [9 3], want [10,3]"},
		{"column vectors", ColumnVectors("BN", "gamma beta", f32(5, 4), nil, f32(4), f32(3)), "BN: beta has shape [3] (3 elements), want 4 elements"},
		{"softmax labels", SoftmaxCrossEntropy(f32(5, 3), tt(tensor.Int64, 5), tt(tensor.Int32, 2), nil), "SoftmaxCrossEntropy: labels is int64, want int32"},
		{"softmax dlogits", SoftmaxCrossEntropy(f32(5, 3), tt(tensor.Int32, 5), tt(tensor.Int32, 2), f32(5, 2)), "SoftmaxCrossEntropy: dlogits has shape [5 2], want [5,3]"},
		{"target loss kind", TargetLoss(backend.Loss(7), f32(5, 3), f32(5, 3), tt(tensor.Int32, 2), nil), "TargetLoss: unknown loss Loss(7), want bce or mse"},
		{"target loss targets", TargetLoss(backend.LossBCE, f32(5, 3), f32(5, 2), tt(tensor.Int32, 2), nil), "TargetLoss: targets has shape [5 2], want [5,3]"},
		{"target loss dout", TargetLoss(backend.LossMSE, f32(5, 3), f32(5, 3), tt(tensor.Int32, 2), f32(4, 3)), "TargetLoss: dout has shape [4 3], want [5,3]"},
		{"target loss idx", TargetLoss(backend.LossMSE, f32(5, 3), f32(5, 3), f32(2), nil), "TargetLoss: idx"},
		{"broadcast", second(Broadcast("E", f32(3, 4), f32(3))), "E: b has shape [3], want [3 4], [4] or [1]"},
		{"copycols", CopyCols(f32(3, 4), 2, f32(3, 4), 0, 3), "CopyCols: 3 columns from offset 0 of 4 into offset 2 of 4 are out of range"},
		{"heads", third(Heads("H", f32(2, 7), f32(2, 3))), "H: x has 7 columns, a is [2,3] (want H·C = 6)"},
		{"gather dtype", Gather(f32(5, 2), tt(tensor.Int32, 3), tt(tensor.Float64, 3, 2)), "Gather: x is float32 but y is float64"},
		{"scatteradd cols", ScatterAdd(f32(3, 2), tt(tensor.Int64, 3), f32(5, 3)), "ScatterAdd: y has 3 columns, x has 2"},
		{"scatterargmax", ScatterArgmax(tt(tensor.Int32, 3, 2), f32(3, 2), f32(5, 3)), "ScatterArgmax: dx has 3 columns, dy has 2"},
		{"csr nil", CSR(nil), "UploadGraph: graph is nil"},
		{"csr indptr", CSR(&graph.CSR{NumRows: 2, NumCols: 2, Indptr: []int64{1, 1, 1}, Idx32: []int32{0}}), "UploadGraph: indptr starts at 1, want 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			switch {
			case tc.want == "" && tc.err != nil:
				t.Fatalf("unexpected error %v", tc.err)
			case tc.want != "" && (tc.err == nil || !strings.Contains(tc.err.Error(), tc.want)):
				t.Fatalf("error %v, want %q", tc.err, tc.want)
			}
		})
	}
}

func second[A any](_ A, err error) error                 { return err }
func third[A, B any](_ A, _ B, err error) error          { return err }
func fourth[A, B, C any](_ A, _ B, _ C, err error) error { return err }

func TestLSTMBackward(t *testing.T) {
	a := adj{rows: 4, cols: 6, nnz: 10}
	for _, tc := range []struct {
		name      string
		dxw, dout *tensor.Tensor
		want      string
	}{
		{"ok", f32(6, 12), f32(4, 3), ""},
		{"dxw", f32(4, 12), f32(4, 3), "L: dxw has shape [4 12], want [6,12]"},
		{"dout", f32(6, 12), f32(6, 3), "L: dout has shape [6 3], want [4,3]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := LSTMBackward("L", a, f32(3, 12), tc.dout, tc.dxw, f32(3, 12))
			if tc.want == "" && (err != nil || h != 3) || tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)) {
				t.Errorf("LSTMBackward: h %d, err %v, want %q", h, err, tc.want)
			}
		})
	}
}
