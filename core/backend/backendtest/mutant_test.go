package backendtest

import (
	"context"
	"math"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"strata/core/backend"
	"strata/core/backend/cpu"
	"strata/core/graph"
	"strata/core/tensor"
)

// mutant is a deliberately broken backend: every op's output is off in
// one element by ten times the loosest bound the suite accepts (loosest), Alloc does not zero-fill, Upload
// loses -0, NaN payloads and the smallest int, adjacencies report one edge too many,
// Stats halves the memory in use, ReleaseGraph frees nothing and every
// error is swallowed. Run against it, every case of the suite must fail,
// which shows each comparison can.
type mutant struct{ backend.Backend }

// mutAdj is an adjacency that reports one edge too many.
type mutAdj struct{ backend.Adj }

func (a mutAdj) NNZ() int64 { return a.Adj.NNZ() + 1 }

func un(a backend.Adj) backend.Adj {
	if m, ok := a.(mutAdj); ok {
		return m.Adj
	}
	return a
}

// bump swallows err, or else perturbs the middle element of each output.
func (m mutant) bump(err error, outs ...*tensor.Tensor) error {
	if err != nil {
		return nil
	}
	for _, t := range outs {
		if t == nil || t.Numel() == 0 {
			continue
		}
		v := newSlice(t.DType(), t.Numel())
		if err := m.Backend.Download(t, v); err != nil {
			panic(err)
		}
		i := t.Numel() / 2
		switch s := v.(type) {
		case []float32:
			s[i] += float32(off(tensor.Float32, float64(s[i])))
		case []float64:
			s[i] += off(tensor.Float64, s[i])
		case []int32:
			s[i]++
		case []int64:
			s[i]++
		}
		if err := m.Backend.Upload(t, v); err != nil {
			panic(err)
		}
	}
	return nil
}

// off is how far the mutant moves a value v of dtype dt.
func off(dt tensor.DType, v float64) float64 { return 10 * loosest(dt) * max(1, math.Abs(v)) }

func (m mutant) Alloc(dt tensor.DType, shape []int, tier tensor.Tier) (*tensor.Tensor, error) {
	t, err := m.Backend.Alloc(dt, shape, tier)
	return t, m.bump(err, t)
}

func (m mutant) Upload(t *tensor.Tensor, src any) error {
	switch s := src.(type) {
	case []float32:
		s = append([]float32(nil), s...)
		for i, v := range s {
			if v == 0 && math.Signbit(float64(v)) {
				s[i] = 0
			}
			if v != v {
				s[i] = math.Float32frombits(math.Float32bits(v) ^ 1) // another NaN
			}
		}
		src = s
	case []float64:
		s = append([]float64(nil), s...)
		for i, v := range s {
			if v == 0 && math.Signbit(v) {
				s[i] = 0
			}
			if v != v {
				s[i] = math.Float64frombits(math.Float64bits(v) ^ 1) // another NaN
			}
		}
		src = s
	case []int32:
		s = append([]int32(nil), s...)
		for i, v := range s {
			if v == math.MinInt32 {
				s[i]++
			}
		}
		src = s
	case []int64:
		s = append([]int64(nil), s...)
		for i, v := range s {
			if v == math.MinInt64 {
				s[i]++
			}
		}
		src = s
	}
	return m.bump(m.Backend.Upload(t, src))
}

func (m mutant) Download(t *tensor.Tensor, dst any) error { return m.bump(m.Backend.Download(t, dst)) }
func (m mutant) Copy(dst, src *tensor.Tensor) error       { return m.bump(m.Backend.Copy(dst, src)) }

func (m mutant) UploadGraph(g *graph.CSR, tier tensor.Tier) (backend.Adj, error) {
	a, err := m.Backend.UploadGraph(g, tier)
	if err != nil {
		return nil, nil
	}
	return mutAdj{a}, nil
}

func (m mutant) ReleaseGraph(backend.Adj) {}

func (m mutant) Stats() backend.Stats {
	st := m.Backend.Stats()
	for t := range st.InUse {
		st.InUse[t] /= 2
	}
	return st
}

func (m mutant) GEMM(ta, tb bool, alpha float64, a, b *tensor.Tensor, beta float64, c *tensor.Tensor) error {
	return m.bump(m.Backend.GEMM(ta, tb, alpha, a, b, beta, c), c)
}

func (m mutant) SpMM(ctx context.Context, a backend.Adj, trans bool, w, x *tensor.Tensor, beta float64, y *tensor.Tensor) error {
	return m.bump(m.Backend.SpMM(ctx, un(a), trans, w, x, beta, y), y)
}

func (m mutant) SpMMMax(ctx context.Context, a backend.Adj, x, y, argmax *tensor.Tensor) error {
	return m.bump(m.Backend.SpMMMax(ctx, un(a), x, y, argmax), y, argmax)
}

// SegmentSelect is the optional backend.SegmentSelector of the wrapped
// backend, broken like every other op.
func (m mutant) SegmentSelect(ctx context.Context, a backend.Adj, q float64, nth int, e, out, idx *tensor.Tensor) error {
	return m.bump(m.Backend.(backend.SegmentSelector).SegmentSelect(ctx, un(a), q, nth, e, out, idx), out, idx)
}

// SegmentProd is the optional backend.SegmentMultiplier of the wrapped
// backend, broken like every other op.
func (m mutant) SegmentProd(ctx context.Context, a backend.Adj, e, out *tensor.Tensor) error {
	return m.bump(m.Backend.(backend.SegmentMultiplier).SegmentProd(ctx, un(a), e, out), out)
}

// SegmentProdBackward is the backward of SegmentProd.
func (m mutant) SegmentProdBackward(ctx context.Context, a backend.Adj, e, dout, de *tensor.Tensor) error {
	return m.bump(m.Backend.(backend.SegmentMultiplier).SegmentProdBackward(ctx, un(a), e, dout, de), de)
}

// DropoutGEMM is the optional backend.DropoutGEMMer of the wrapped
// backend.
func (m mutant) DropoutGEMM(seed uint64, rows *tensor.Tensor, p float64, transX bool, x, b *tensor.Tensor, beta float64, c, scratch, keep *tensor.Tensor) error {
	return m.bump(m.Backend.(backend.DropoutGEMMer).DropoutGEMM(seed, rows, p, transX, x, b, beta, c, scratch, keep), c)
}

// SparseInputDensity is the optional backend.SparseInputs of the wrapped
// backend.
func (m mutant) SparseInputDensity(rows, k, n int) float64 {
	return m.Backend.(backend.SparseInputs).SparseInputDensity(rows, k, n)
}

// SparseInput lists the entries with one value off and an adjacency that
// reports one edge too many.
func (m mutant) SparseInput(x *tensor.Tensor, maxNNZ int64, tier tensor.Tier) (backend.SparseMatrix, bool, error) {
	sm, ok, err := m.Backend.(backend.SparseInputs).SparseInput(x, maxNNZ, tier)
	if !ok || err != nil {
		return sm, ok, err
	}
	sm.Adj = mutAdj{sm.Adj}
	return sm, ok, m.bump(nil, sm.Values)
}

// SpMMBiasAct is the optional backend.SpMMBiasActer of the wrapped
// backend.
func (m mutant) SpMMBiasAct(ctx context.Context, a backend.Adj, w, x, bias *tensor.Tensor, act backend.Unary, alpha float64, y *tensor.Tensor) error {
	return m.bump(m.Backend.(backend.SpMMBiasActer).SpMMBiasAct(ctx, un(a), w, x, bias, act, alpha, y), y)
}

func (m mutant) ScatterArgmax(argmax, dy, dx *tensor.Tensor) error {
	return m.bump(m.Backend.ScatterArgmax(argmax, dy, dx), dx)
}

func (m mutant) SDDMM(ctx context.Context, a backend.Adj, x, y, out *tensor.Tensor) error {
	return m.bump(m.Backend.SDDMM(ctx, un(a), x, y, out), out)
}

func (m mutant) UAddV(ctx context.Context, a backend.Adj, u, v, out *tensor.Tensor) error {
	return m.bump(m.Backend.UAddV(ctx, un(a), u, v, out), out)
}

func (m mutant) EdgeReduce(ctx context.Context, a backend.Adj, toSrc bool, e, out *tensor.Tensor) error {
	return m.bump(m.Backend.EdgeReduce(ctx, un(a), toSrc, e, out), out)
}

func (m mutant) EdgeSoftmax(ctx context.Context, a backend.Adj, scores, out *tensor.Tensor) error {
	return m.bump(m.Backend.EdgeSoftmax(ctx, un(a), scores, out), out)
}

func (m mutant) EdgeSoftmaxBackward(ctx context.Context, a backend.Adj, out, dout, ds *tensor.Tensor) error {
	return m.bump(m.Backend.EdgeSoftmaxBackward(ctx, un(a), out, dout, ds), ds)
}

func (m mutant) LSTMAggregate(ctx context.Context, a backend.Adj, xw, whh, bias, out, gates, cells, hprev *tensor.Tensor) error {
	return m.bump(m.Backend.LSTMAggregate(ctx, un(a), xw, whh, bias, out, gates, cells, hprev), out)
}

func (m mutant) LSTMAggregateBackward(ctx context.Context, a backend.Adj, whh, gates, cells, hprev, dout, dxw, dwhh *tensor.Tensor) error {
	return m.bump(m.Backend.LSTMAggregateBackward(ctx, un(a), whh, gates, cells, hprev, dout, dxw, dwhh), dxw, dwhh)
}

func (m mutant) Gather(x, idx, y *tensor.Tensor) error { return m.bump(m.Backend.Gather(x, idx, y), y) }

func (m mutant) ScatterAdd(x, idx, y *tensor.Tensor) error {
	return m.bump(m.Backend.ScatterAdd(x, idx, y), y)
}

func (m mutant) CopyCols(dst *tensor.Tensor, dstOff int, src *tensor.Tensor, srcOff, n int) error {
	return m.bump(m.Backend.CopyCols(dst, dstOff, src, srcOff, n), dst)
}

func (m mutant) Apply(f backend.Unary, alpha float64, x, y *tensor.Tensor) error {
	return m.bump(m.Backend.Apply(f, alpha, x, y), y)
}

func (m mutant) ApplyBackward(f backend.Unary, alpha float64, x, y, dy, dx *tensor.Tensor) error {
	return m.bump(m.Backend.ApplyBackward(f, alpha, x, y, dy, dx), dx)
}

func (m mutant) Elementwise(op backend.Binary, a, b, y *tensor.Tensor) error {
	return m.bump(m.Backend.Elementwise(op, a, b, y), y)
}

func (m mutant) Axpby(alpha float64, x *tensor.Tensor, beta float64, y *tensor.Tensor) error {
	return m.bump(m.Backend.Axpby(alpha, x, beta, y), y)
}

func (m mutant) Fill(t *tensor.Tensor, v float64) error { return m.bump(m.Backend.Fill(t, v), t) }
func (m mutant) SumRows(x, y *tensor.Tensor) error      { return m.bump(m.Backend.SumRows(x, y), y) }

func (m mutant) HeadDot(x, a, y *tensor.Tensor) error { return m.bump(m.Backend.HeadDot(x, a, y), y) }

func (m mutant) HeadDotBackward(x, a, dy, dx, da *tensor.Tensor) error {
	return m.bump(m.Backend.HeadDotBackward(x, a, dy, dx, da), dx, da)
}

func (m mutant) DropoutMask(seed uint64, rows *tensor.Tensor, p float64, mask *tensor.Tensor) error {
	return m.bump(m.Backend.DropoutMask(seed, rows, p, mask), mask)
}

func (m mutant) BatchNorm(x, gamma, beta, y, mean, invStd *tensor.Tensor, eps float64) error {
	return m.bump(m.Backend.BatchNorm(x, gamma, beta, y, mean, invStd, eps), y, mean, invStd)
}

func (m mutant) BatchNormBackward(x, gamma, dy, mean, invStd, dx, dgamma, dbeta *tensor.Tensor) error {
	return m.bump(m.Backend.BatchNormBackward(x, gamma, dy, mean, invStd, dx, dgamma, dbeta), dx, dgamma, dbeta)
}

func (m mutant) BatchNormInfer(x, gamma, beta, mean, variance, y *tensor.Tensor, eps float64) error {
	return m.bump(m.Backend.BatchNormInfer(x, gamma, beta, mean, variance, y, eps), y)
}

func (m mutant) SoftmaxCrossEntropy(logits, labels, idx, dlogits *tensor.Tensor) (float64, error) {
	loss, err := m.Backend.SoftmaxCrossEntropy(logits, labels, idx, dlogits)
	return loss + off(logits.DType(), loss), m.bump(err, dlogits)
}

func (m mutant) TargetLoss(f backend.Loss, out, targets, idx, dout *tensor.Tensor) (float64, error) {
	loss, err := m.Backend.TargetLoss(f, out, targets, idx, dout)
	return loss + off(out.DType(), loss), m.bump(err, dout)
}

func (m mutant) ArgmaxRows(x, out *tensor.Tensor) error {
	return m.bump(m.Backend.ArgmaxRows(x, out), out)
}

func (m mutant) AdamStep(p, g, mv, v *tensor.Tensor, lr, b1, b2, eps, wd float64, t int) error {
	return m.bump(m.Backend.AdamStep(p, g, mv, v, lr, b1, b2, eps, wd, t), p)
}

const mutantEnv = "BACKENDTEST_MUTANT"

// TestMutantHelper runs the suite against the mutant; only
// TestMutantFails runs it, in a child process, and expects it to fail.
func TestMutantHelper(t *testing.T) {
	if os.Getenv(mutantEnv) != "1" {
		t.Skip("run by TestMutantFails")
	}
	Run(t, cpu.New(cpu.Options{Threads: 2}), mutant{cpu.New(cpu.Options{Threads: 2})}, Options{Tier: tensor.Host, Seed: 3})
}

// mayPass are the cases whose outputs are empty, so a perturbation has
// nothing to change: an all-zero Alloc of no elements, and per-edge
// outputs of the graph without edges.
var mayPass = regexp.MustCompile(`^(Alloc/\w+/0x5|(SDDMM|UAddV|EdgeSoftmax|EdgeSoftmaxBackward)/\w+/edgeless(/.*)?)$`)

// TestMutantFails checks that every case of the suite fails against the
// mutant: each comparison can fail.
func TestMutantFails(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite in a child process")
	}
	if os.Getenv(mutantEnv) == "1" {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMutantHelper$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), mutantEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the suite passed against the mutant backend:\n%s", out)
	}
	status := map[string]string{}
	re := regexp.MustCompile(`--- (PASS|FAIL|SKIP): TestMutantHelper/(\S+) \(`)
	for _, m := range re.FindAllStringSubmatch(string(out), -1) {
		status[m[2]] = m[1]
	}
	if len(status) < 500 {
		t.Fatalf("only %d subtests in the child's output:\n%s", len(status), out)
	}
	for _, g := range Groups() {
		if status[g] != "FAIL" {
			t.Errorf("group %s: %q against the mutant, want FAIL", g, status[g])
		}
	}
	leaves := 0
	for name, st := range status {
		leaf := true
		for other := range status {
			if strings.HasPrefix(other, name+"/") {
				leaf = false
				break
			}
		}
		if !leaf {
			continue
		}
		leaves++
		if st != "FAIL" && !mayPass.MatchString(name) {
			t.Errorf("case %s: %s against the mutant, want FAIL", name, st)
		}
	}
	t.Logf("%d cases checked against the mutant", leaves)
}
