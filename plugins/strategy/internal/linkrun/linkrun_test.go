package linkrun

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"strata/core/backend/cpu"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/ir"
	"strata/core/tensor"
	"strata/core/train"
	"strata/internal/floattol"
)

// dotDecoder is decoder.dot recorded in Go: <h[dst], h[src]> per pair,
// with a learnt scale so that the decoder has a parameter.
func dotDecoder(t *testing.T, width int64) *ir.Graph {
	t.Helper()
	b := ir.NewBuilder()
	h := b.Input("x", width)
	g := b.Graph("adj")
	s := b.UDotV(g, h, h, 1)
	b.OutputScores(b.Binary(ir.OpMul, s, b.Param("scale", []int64{1}, "ones")))
	dg, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return dg
}

func TestPairGraph(t *testing.T) {
	p := graph.Pairs{Src: []int32{3, 0, 2, 2, 1}, Dst: []int32{1, 1, 0, 1, 3}}
	g, order := PairGraph(4, p)
	if g.NNZ() != 5 {
		t.Fatalf("%d entries, want 5", g.NNZ())
	}
	for e, i := range order {
		dst := 0
		for int64(e) >= g.Indptr[dst+1] {
			dst++
		}
		if int32(g.Col(int64(e))) != p.Src[i] || int32(dst) != p.Dst[i] {
			t.Fatalf("entry %d (%d -> %d) is not pair %d (%d -> %d)", e, g.Col(int64(e)), dst, i, p.Src[i], p.Dst[i])
		}
	}
	if want := []int32{2, 0, 1, 3, 4}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v (by destination, pair order within)", order, want)
	}
}

// hostLoss is the task's loss of scores (positives first), as the
// reference: mean BCE, or the mean margin loss of each positive against
// its own k negatives.
func hostLoss(loss string, margin float64, s []float64, nPos int) float64 {
	pos, neg := s[:nPos], s[nPos:]
	if loss == "margin" {
		k := len(neg) / nPos
		var sum float64
		for j, n := range neg {
			sum += max(0, margin-pos[j/k]+n)
		}
		return sum / float64(len(neg))
	}
	var sum float64
	for _, p := range pos {
		sum += math.Log1p(math.Exp(-p))
	}
	for _, n := range neg {
		sum += math.Log1p(math.Exp(n))
	}
	return sum / float64(len(s))
}

// TestStepGradient checks Step against the loss computed from Score on
// the host: the loss itself, and the gradient with respect to the
// embeddings against central finite differences, in float64, for both
// losses, on pairs with a repeat and a self pair.
func TestStepGradient(t *testing.T) {
	const n, w = 6, 3
	pos := graph.Pairs{Src: []int32{0, 1, 2, 0}, Dst: []int32{1, 2, 3, 1}} // (0,1) twice
	neg := graph.Pairs{Src: []int32{4, 5, 5, 3, 0, 2, 1, 1}, Dst: []int32{0, 5, 1, 2, 4, 2, 5, 3}}
	rng := rand.New(rand.NewPCG(1, 2))
	hv := make([]float64, n*w)
	for i := range hv {
		hv[i] = rng.NormFloat64()
	}
	ctx := context.Background()
	be := cpu.New(cpu.Options{Threads: 1})
	for _, loss := range []string{"bce", "margin"} {
		t.Run(loss, func(t *testing.T) {
			task := &train.LinkTask{Decoder: dotDecoder(t, w), DecoderName: "dot-test", Loss: loss, Margin: 0.7}
			d, err := New(task, be, tensor.Float64, tensor.Host, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Release()
			h, _ := be.Alloc(tensor.Float64, []int{n, w}, tensor.Host)
			dh, _ := be.Alloc(tensor.Float64, []int{n, w}, tensor.Host)
			defer be.Release(h)
			defer be.Release(dh)
			score := func(v []float64) float64 {
				if err := engine.UploadFloats(be, h, v); err != nil {
					t.Fatal(err)
				}
				all := pos.Append(neg)
				s := make([]float64, all.Len())
				if err := d.Score(ctx, h, all, s); err != nil {
					t.Fatal(err)
				}
				return hostLoss(loss, task.Margin, s, pos.Len())
			}
			want := score(hv)
			got, err := d.Step(ctx, h, dh, pos, neg, 7)
			if err != nil {
				t.Fatal(err)
			}
			// Each score is a dot product of w terms, each loss term one
			// or two elementary functions, and the mean a sum of 12.
			eps := (floattol.Gamma(w+12, floattol.UFloat64) + 4*floattol.FuncULPs*floattol.UFloat64) * 4
			if math.Abs(got-want) > eps*math.Max(1, math.Abs(want)) {
				t.Fatalf("loss %v, host reference %v", got, want)
			}
			grad, _ := engine.DownloadFloats(be, dh)
			num, bound := floattol.Gradient(len(hv), func(i int, dx float64) float64 {
				x := hv[i]
				hv[i] = x + dx
				defer func() { hv[i] = x }()
				return score(hv)
			}, floattol.CentralStep(eps, 1), eps)
			if i, r := floattol.Exceeds(grad, num, bound); i >= 0 {
				t.Fatalf("d loss / d h[%d] = %v, finite differences %v ± %v (%.1f× the bound)", i, grad[i], num[i], bound[i], r)
			}
		})
	}
}

// TestStepShareParts checks that a step split into parts, each weighed by
// its share of the positives and accumulated, is the whole step: the same
// loss, the same gradient into the embeddings (summed over the parts) and
// the same gradient of the decoder's parameter, for both losses.
func TestStepShareParts(t *testing.T) {
	const n, w, k = 6, 3, 2
	pos := graph.Pairs{Src: []int32{0, 1, 2, 0, 5}, Dst: []int32{1, 2, 3, 1, 4}}
	neg := graph.Pairs{Src: []int32{4, 5, 5, 3, 0, 2, 1, 1, 3, 0}, Dst: []int32{0, 5, 1, 2, 4, 2, 5, 3, 3, 2}}
	rng := rand.New(rand.NewPCG(3, 4))
	hv := make([]float64, n*w)
	for i := range hv {
		hv[i] = rng.NormFloat64()
	}
	ctx := context.Background()
	be := cpu.New(cpu.Options{Threads: 1})
	parts := [][]int{{0, 3}, {1}, {2, 4}} // positives of each part
	for _, loss := range []string{"bce", "margin"} {
		t.Run(loss, func(t *testing.T) {
			task := &train.LinkTask{Decoder: dotDecoder(t, w), DecoderName: "dot-test", Loss: loss, Margin: 0.7}
			d, err := New(task, be, tensor.Float64, tensor.Host, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Release()
			h, _ := be.Alloc(tensor.Float64, []int{n, w}, tensor.Host)
			dh, _ := be.Alloc(tensor.Float64, []int{n, w}, tensor.Host)
			defer be.Release(h)
			defer be.Release(dh)
			if err := engine.UploadFloats(be, h, hv); err != nil {
				t.Fatal(err)
			}
			grads := func() (dhv, dp []float64) {
				dhv, _ = engine.DownloadFloats(be, dh)
				dp, _ = engine.DownloadFloats(be, d.Params().List()[0].Grad)
				return dhv, dp
			}
			wantLoss, err := d.Step(ctx, h, dh, pos, neg, 7)
			if err != nil {
				t.Fatal(err)
			}
			wantH, wantP := grads()
			var gotLoss float64
			gotH, gotP := make([]float64, n*w), []float64(nil)
			for j, part := range parts {
				var p, q graph.Pairs
				for _, i := range part {
					p.Src, p.Dst = append(p.Src, pos.Src[i]), append(p.Dst, pos.Dst[i])
					q.Src, q.Dst = append(q.Src, neg.Src[i*k:(i+1)*k]...), append(q.Dst, neg.Dst[i*k:(i+1)*k]...)
				}
				sh := Share{Weight: float64(len(part)) / float64(pos.Len()), Accumulate: j > 0}
				l, err := d.StepShare(ctx, h, dh, p, q, 7, sh)
				if err != nil {
					t.Fatal(err)
				}
				gotLoss += l
				dhv, dp := grads()
				for i := range dhv {
					gotH[i] += dhv[i]
				}
				gotP = dp
			}
			// Sums of at most 15 terms of unit-size products, regrouped.
			eps := 4 * floattol.Gamma(w+15, floattol.UFloat64)
			near := func(what string, got, want []float64) {
				for i := range want {
					if math.Abs(got[i]-want[i]) > eps*math.Max(1, math.Abs(want[i])) {
						t.Fatalf("%s[%d]: parts %v, whole step %v", what, i, got[i], want[i])
					}
				}
			}
			near("loss", []float64{gotLoss}, []float64{wantLoss})
			near("d loss / d h", gotH, wantH)
			near("d loss / d scale", gotP, wantP)
		})
	}
}
