package engine

import (
	"context"
	"math"
	"slices"
	"testing"

	"strata/core/tensor"
)

// TestInputGrad checks the input's gradient (Env.InputGrad) against
// central finite differences, for every op case (batch norm aside: its
// statistics couple the rows), in float64.
func TestInputGrad(t *testing.T) {
	for _, c := range gradCases() {
		if c.name == "batchnorm" || c.name == "lstm_aggregate" {
			continue // statistics over the rows; sequence state (checked by the strategy)
		}
		t.Run(c.name, func(t *testing.T) {
			gr := buildCase(t, c)
			h := newHarness(t, gr, tensor.Float64)
			env := h.prog.env
			env.InputGrad = true
			p, err := Bind(gr, env, h.prog.ParamSet())
			if err != nil {
				t.Fatal(err)
			}
			h.prog = p
			h.loss(t, true)
			g, err := p.InputGrad()
			if err != nil {
				t.Fatal(err)
			}
			analytic := make([]float64, g.Numel())
			if err := h.be.Download(g, analytic); err != nil {
				t.Fatal(err)
			}
			h.checkFD(t, "input gradient", env.Input, analytic)
		})
	}
}

// TestSavedResume keeps a training forward's saved state elsewhere, wipes
// it, restores it and runs Backward after Resume: the gradients equal
// those of Forward and Backward, bitwise.
func TestSavedResume(t *testing.T) {
	ctx := context.Background()
	for _, c := range gradCases() {
		t.Run(c.name, func(t *testing.T) {
			gr := buildCase(t, c)
			h := newHarness(t, gr, tensor.Float64)
			grads := func() []float64 {
				var out []float64
				for _, p := range h.prog.Params() {
					v := make([]float64, p.Grad.Numel())
					if err := h.be.Download(p.Grad, v); err != nil {
						t.Fatal(err)
					}
					out = append(out, v...)
				}
				return out
			}
			h.loss(t, true)
			want := grads()
			mode := Mode{Train: true, Seed: 99}
			if err := h.prog.Forward(ctx, mode); err != nil {
				t.Fatal(err)
			}
			saved := h.prog.Saved()
			kept := make([]any, len(saved))
			// Copy every saved buffer out first (buffers of values whose
			// lifetimes do not overlap share storage, as the chunked
			// strategy's host cache copies them), then wipe them all.
			for i, s := range saved {
				switch s.DType() {
				case tensor.Float64:
					v := make([]float64, s.Numel())
					if err := h.be.Download(s, v); err != nil {
						t.Fatal(err)
					}
					kept[i] = v
				case tensor.Int32:
					v := make([]int32, s.Numel())
					if err := h.be.Download(s, v); err != nil {
						t.Fatal(err)
					}
					kept[i] = v
				default:
					t.Fatalf("saved buffer of dtype %s", s.DType())
				}
			}
			for _, s := range saved {
				switch s.DType() {
				case tensor.Float64:
					wipe := make([]float64, s.Numel())
					for j := range wipe {
						wipe[j] = math.NaN()
					}
					h.upload(t, s, wipe)
				case tensor.Int32:
					if err := h.be.Upload(s, make([]int32, s.Numel())); err != nil {
						t.Fatal(err)
					}
				}
			}
			for i, s := range saved {
				if err := h.be.Upload(s, kept[i]); err != nil {
					t.Fatal(err)
				}
			}
			if err := h.prog.Resume(mode); err != nil {
				t.Fatal(err)
			}
			if _, err := h.be.SoftmaxCrossEntropy(h.prog.Output(), h.labels, h.idx, h.prog.OutputGrad()); err != nil {
				t.Fatal(err)
			}
			if err := h.prog.Backward(ctx); err != nil {
				t.Fatal(err)
			}
			if got := grads(); !slices.Equal(got, want) {
				t.Errorf("gradients after Resume differ from Forward's")
			}
		})
	}
}
