package optim_test

import (
	"math"
	"strings"
	"testing"

	"strata/core/backend/cpu"
	"strata/core/engine"
	"strata/core/optim"
	"strata/internal/floattol"
)

// TestDecayBy checks train.weight_decay_by on two parameters through
// every optimizer: the matched one steps with its pattern's decay, the
// other with train.weight_decay, each against the hand reference of one
// step (adamRef, or p - lr·(g + wd·p) for sgd without momentum).
func TestDecayBy(t *testing.T) {
	const lr, wd, wdBy = 0.1, 0.001, 0.5
	p0, g := []float64{1, -2}, []float64{0.3, 0.4}
	for _, name := range []string{"adam", "adamw", "sgd"} {
		t.Run(name, func(t *testing.T) {
			be := cpu.New(cpu.Options{})
			h := optim.Hyper{LR: lr, WeightDecay: wd, DecayBy: map[string]float64{"l*.weight": wdBy}}
			opt, err := optim.New(name, be, h)
			if err != nil {
				t.Fatal(err)
			}
			ps := []*engine.Param{param(t, be, "l1.weight", p0, g), param(t, be, "l1.lin.weight", p0, g)}
			if err := opt.Step(ps); err != nil {
				t.Fatal(err)
			}
			for k, decay := range []float64{wdBy, wd} {
				got := values(t, be, ps[k].Value)
				for i := range p0 {
					want := p0[i] - lr*(g[i]+decay*p0[i])
					if name != "sgd" {
						want = adamRef(p0[i], []float64{g[i]}, lr, decay, name == "adamw")
					}
					bound := floattol.Gamma(2*(20+floattol.FuncULPs), floattol.UFloat64) * (math.Abs(p0[i]) + 2*lr)
					if math.Abs(got[i]-want) > bound {
						t.Errorf("%s[%d] = %.17g, want %.17g (weight decay %g)", ps[k].Name, i, got[i], want, decay)
					}
				}
			}
		})
	}
}

func TestMatchParam(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"l*.weight", "l3.weight", true},
		{"l*.weight", "l0.lin_in.weight", false},
		{"l*.*.weight", "l0.lin_in.weight", true},
		{"l?.weight", "l12.weight", false},
		{"l[0-4].bias", "l3.bias", true},
		{"jk.lin.weight", "jk.lin.weight", true},
		{"l[.weight", "l[.weight", false},
	} {
		if got := optim.MatchParam(c.pattern, c.name); got != c.want {
			t.Errorf("MatchParam(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}

func TestCheckDecayBy(t *testing.T) {
	names := []string{"l0.lin_in.weight", "l0.weight", "l1.weight", "l1.lin_out.bias"}
	for _, c := range []struct {
		by   map[string]float64
		want string // "" = no error
	}{
		{map[string]float64{"l*.weight": 0.01, "l*.*.*": 5e-4}, ""},
		{map[string]float64{"x*": 0.01}, `"x*" matches no parameter of the model; its parameters are l0.lin_in.weight`},
		{map[string]float64{"l*.weight": 0.01, "l0.*": 0}, `parameter l0.weight is matched by "l*.weight" and "l0.*"`},
		{map[string]float64{"l*.weight": -1}, "must be a finite number >= 0"},
		{map[string]float64{"l*.weight": math.NaN()}, "must be a finite number >= 0"},
		{map[string]float64{"l[.weight": 1}, `pattern "l[.weight" is malformed`},
	} {
		err := optim.CheckDecayBy(c.by, names)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.by, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: error %v, want one containing %q", c.by, err, c.want)
		}
	}
}
