package optim_test

import (
	"math"
	"testing"

	"strata/core/backend/cpu"
	"strata/core/config"
	"strata/core/engine"
	"strata/core/optim"
	"strata/core/optim/optimtest"
	"strata/internal/floattol"
)

var (
	param  = optimtest.Param
	values = optimtest.Values
)

// adamRef is Adam or AdamW unrolled by hand, element by element, in the
// order of torch.optim's single-tensor code: for AdamW param.mul_(1 -
// lr·wd) first; for Adam grad += wd·param; then the moments, the bias
// corrections and param -= lr/bc1 · m / (sqrt(v)/sqrt(bc2) + eps).
func adamRef(p float64, grads []float64, lr, wd float64, decoupled bool) float64 {
	const b1, b2, eps = 0.9, 0.999, 1e-8
	var m, v float64
	for i, g := range grads {
		step := float64(i + 1)
		if decoupled {
			p *= 1 - lr*wd
		} else {
			g += wd * p
		}
		m = b1*m + (1-b1)*g
		v = b2*v + (1-b2)*g*g
		bc1, bc2 := 1-math.Pow(b1, step), 1-math.Pow(b2, step)
		p -= lr / bc1 * m / (math.Sqrt(v)/math.Sqrt(bc2) + eps)
	}
	return p
}

// TestAdamTwoSteps checks two steps of adam and adamw against the hand
// unrolled reference, and that their weight decays differ.
func TestAdamTwoSteps(t *testing.T) {
	p0 := []float64{1, -2, 0.5}
	g := [][]float64{{0.5, -1, 0}, {0.1, 0.3, -0.2}}
	const lr, wd = 0.1, 0.05
	for _, name := range []string{"adam", "adamw"} {
		t.Run(name, func(t *testing.T) {
			be := cpu.New(cpu.Options{})
			opt, err := optim.New(name, be, optim.Hyper{LR: lr, WeightDecay: wd})
			if err != nil {
				t.Fatal(err)
			}
			p := param(t, be, "w", p0, g[0])
			for _, gs := range g {
				if err := engine.UploadFloats(be, p.Grad, gs); err != nil {
					t.Fatal(err)
				}
				if err := opt.Step([]*engine.Param{p}); err != nil {
					t.Fatal(err)
				}
			}
			got := values(t, be, p.Value)
			for i := range p0 {
				want := adamRef(p0[i], []float64{g[0][i], g[1][i]}, lr, wd, name == "adamw")
				other := adamRef(p0[i], []float64{g[0][i], g[1][i]}, lr, wd, name != "adamw")
				// Two steps of ~20 float64 roundings (sqrt and pow within
				// FuncULPs) on terms no larger than |p|+lr·2.
				bound := floattol.Gamma(2*(20+floattol.FuncULPs), floattol.UFloat64) * (math.Abs(p0[i]) + 2*lr)
				if math.Abs(got[i]-want) > bound {
					t.Errorf("p[%d] = %.17g, want %.17g", i, got[i], want)
				}
				if math.Abs(want-other) <= bound {
					t.Errorf("p[%d]: the two weight decays agree (%.17g), the test cannot tell them apart", i, want)
				}
			}
		})
	}
}

// TestClipGradNorm checks clipping against a hand computation: the
// gradients (3, 4) and (12) have the global norm 13.
func TestClipGradNorm(t *testing.T) {
	for _, c := range []struct {
		max  float64
		coef float64
	}{{6.5, 6.5 / (13 + 1e-6)}, {13, 13 / (13 + 1e-6)}, {20, 1}} {
		be := cpu.New(cpu.Options{})
		a := param(t, be, "a", []float64{0, 0}, []float64{3, 4})
		b := param(t, be, "b", []float64{0}, []float64{12})
		norm, err := optim.ClipGradNorm(be, []*engine.Param{a, b}, c.max)
		if err != nil {
			t.Fatal(err)
		}
		if norm != 13 {
			t.Errorf("max %g: norm %v, want 13", c.max, norm)
		}
		got := append(values(t, be, a.Grad), values(t, be, b.Grad)...)
		for i, g := range []float64{3, 4, 12} {
			// The coefficient's sum and quotient, then the product: three
			// roundings (the constants here are exact).
			if want := g * c.coef; math.Abs(got[i]-want) > floattol.Gamma(3, floattol.UFloat64)*math.Abs(want) {
				t.Errorf("max %g: grad %d = %.17g, want %.17g", c.max, i, got[i], want)
			}
		}
	}
	be := cpu.New(cpu.Options{})
	nan := param(t, be, "n", []float64{0}, []float64{math.NaN()})
	if _, err := optim.ClipGradNorm(be, []*engine.Param{nan}, 1); err == nil {
		t.Error("a NaN gradient was clipped without an error")
	}
}

// TestStateResume checks that an optimizer restored from another's state
// steps as the original does, bit for bit, and refuses another's state.
func TestStateResume(t *testing.T) {
	for _, name := range []string{"adam", "adamw", "sgd"} {
		h := optim.Hyper{LR: 0.1, WeightDecay: 0.01, Momentum: 0.9}
		be := cpu.New(cpu.Options{})
		run := func(opt optim.Optimizer, p *engine.Param, grads ...[]float64) {
			for _, g := range grads {
				if err := engine.UploadFloats(be, p.Grad, g); err != nil {
					t.Fatal(err)
				}
				if err := opt.Step([]*engine.Param{p}); err != nil {
					t.Fatal(err)
				}
			}
		}
		a, _ := optim.New(name, be, h)
		pa := param(t, be, "w", []float64{1, 2}, []float64{0, 0})
		run(a, pa, []float64{0.5, -1}, []float64{0.25, 0.5})
		st, err := a.State()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := optim.New(name, be, h)
		pb := param(t, be, "w", values(t, be, pa.Value), []float64{0, 0})
		if err := b.SetState([]*engine.Param{pb}, st); err != nil {
			t.Fatal(err)
		}
		run(a, pa, []float64{-0.3, 0.7})
		run(b, pb, []float64{-0.3, 0.7})
		if va, vb := values(t, be, pa.Value), values(t, be, pb.Value); va[0] != vb[0] || va[1] != vb[1] {
			t.Errorf("%s: resumed %v, uninterrupted %v", name, vb, va)
		}
		other := map[string]string{"adam": "adamw", "adamw": "sgd", "sgd": "adam"}[name]
		c, _ := optim.New(other, be, h)
		if err := c.SetState([]*engine.Param{pb}, st); err == nil {
			t.Errorf("%s state restored into %s", name, other)
		}
	}
}

// TestWeightDecayDefault checks that adamw takes PyTorch's weight_decay
// 0.01 when the config sets none, and the config's value otherwise.
func TestWeightDecayDefault(t *testing.T) {
	for _, c := range []struct {
		set  string
		want float64
	}{{"optimizer = \"adamw\"\n", 0.01}, {"optimizer = \"adamw\"\nweight_decay = 0.2\n", 0.2}, {"optimizer = \"adam\"\n", 5e-4}, {"", 5e-4}} {
		cfg, err := config.Parse("w.toml", []byte("[data]\ndataset = \"embedded:cora\"\n[train]\n"+c.set))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Train.WeightDecay != c.want {
			t.Errorf("%q: weight_decay %g, want %g", c.set, cfg.Train.WeightDecay, c.want)
		}
	}
	cfg, err := config.Parse("w.toml", []byte("[data]\ndataset = \"embedded:cora\"\n"), "train.optimizer=adamw", "train.weight_decay=0")
	if err != nil || cfg.Train.WeightDecay != 0 {
		t.Errorf("--set train.weight_decay=0 with adamw: %v, %v", cfg.Train.WeightDecay, err)
	}
}
