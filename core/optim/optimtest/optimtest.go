// Package optimtest is the conformance suite of the optimizer modules
// (registry namespace "optimizer") and the learning-rate schedules
// ("lrschedule"): plugins/all runs every registered one through it.
package optimtest

import (
	"math"
	"reflect"
	"testing"

	"strata/core/backend"
	"strata/core/backend/cpu"
	"strata/core/engine"
	"strata/core/optim"
	"strata/core/registry"
	"strata/core/tensor"
)

// TestOptimizer checks an optimizer module: its steps descend on ½|p|²,
// SetLR sets the rate, a learning rate of 0 leaves the parameters as
// they are, its state restores into a fresh optimizer that then steps as
// the original does (bit for bit), it refuses another optimizer's state,
// and it keeps Slots buffers per parameter.
func TestOptimizer(t *testing.T, info registry.ModuleInfo) {
	m, ok := info.New().(optim.Module)
	if !ok {
		t.Fatalf("%s (%T) is not an optim.Module", info.ID, info.New())
	}
	h := optim.Hyper{LR: 0.01, WeightDecay: 0.01, Momentum: 0.9}
	be := cpu.New(cpu.Options{Threads: 1})
	p0 := []float64{1, -2, 0.5, 3}
	t.Run("Descends", func(t *testing.T) {
		opt, p := m.NewOptimizer(be, h), newParam(t, be, p0)
		steps(t, be, opt, p, 3)
		for i, v := range Values(t, be, p.Value) {
			if !(math.Abs(v) < math.Abs(p0[i])) {
				t.Errorf("p[%d]: %v after 3 steps on ½|p|² from %v: not closer to 0", i, v, p0[i])
			}
		}
	})
	t.Run("SetLR", func(t *testing.T) {
		a, pa := m.NewOptimizer(be, h), newParam(t, be, p0)
		b, pb := m.NewOptimizer(be, optim.Hyper{LR: 2 * h.LR, WeightDecay: h.WeightDecay, Momentum: h.Momentum}), newParam(t, be, p0)
		b.SetLR(h.LR)
		steps(t, be, a, pa, 2)
		steps(t, be, b, pb, 2)
		equal(t, Values(t, be, pb.Value), Values(t, be, pa.Value), "SetLR(lr) after building with 2·lr")
		z, pz := m.NewOptimizer(be, h), newParam(t, be, p0)
		z.SetLR(0)
		steps(t, be, z, pz, 2)
		equal(t, Values(t, be, pz.Value), p0, "learning rate 0")
	})
	t.Run("StateResume", func(t *testing.T) { stateResume(t, m, be, h, p0) })
}

// stateResume checks the state round trip and Slots.
func stateResume(t *testing.T, m optim.Module, be backend.Backend, h optim.Hyper, p0 []float64) {
	a, pa := m.NewOptimizer(be, h), newParam(t, be, p0)
	steps(t, be, a, pa, 2)
	st, err := a.State()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Bufs) != m.Slots(h) {
		t.Errorf("the state holds %d buffers for one parameter, Slots says %d", len(st.Bufs), m.Slots(h))
	}
	b, pb := m.NewOptimizer(be, h), newParam(t, be, Values(t, be, pa.Value))
	if err := b.SetState([]*engine.Param{pb}, st); err != nil {
		t.Fatal(err)
	}
	steps(t, be, a, pa, 1)
	steps(t, be, b, pb, 1)
	equal(t, Values(t, be, pb.Value), Values(t, be, pa.Value), "a step after SetState(State())")
	other := st
	other.Name += "-other"
	if err := m.NewOptimizer(be, h).SetState([]*engine.Param{pb}, other); err == nil {
		t.Errorf("state of optimizer %q accepted", other.Name)
	}
}

// TestSchedule checks a schedule module with its defaults and with a
// warm-up: the first rate is train.lr, every rate of the run is finite,
// positive and no higher than train.lr; a warm-up starts at its start
// factor, rises, and hands over to the schedule at its first epoch.
func TestSchedule(t *testing.T, info registry.ModuleInfo) {
	s, ok := info.New().(optim.Schedule)
	if !ok {
		t.Fatalf("%s (%T) is not an optim.Schedule", info.ID, info.New())
	}
	const base = 0.1
	for _, epochs := range []int{1, 7, 100} {
		if got := optim.LR(s, base, 0, epochs); got != base {
			t.Errorf("%d epochs: the first rate is %v, want train.lr = %v", epochs, got, base)
		}
		for e := range epochs {
			if r := optim.LR(s, base, e, epochs); !(r > 0 && r <= base) {
				t.Errorf("%d epochs: epoch %d's rate is %v, want in (0, %v]", epochs, e, r, base)
			}
		}
	}
	w, ok := info.New().(optim.Schedule)
	f := reflect.ValueOf(w)
	if f.Kind() == reflect.Pointer {
		f = f.Elem()
	}
	wf := f.FieldByName("Warmup")
	if !ok || !wf.CanSet() || wf.Type() != reflect.TypeFor[optim.Warmup]() {
		t.Fatalf("%T does not embed optim.Warmup (warmup_epochs, warmup_start_factor)", w)
	}
	wf.Set(reflect.ValueOf(optim.Warmup{Epochs: 4, StartFactor: 0.25}))
	const epochs = 20
	if got := optim.LR(w, base, 0, epochs); math.Abs(got-0.25*base) > 1e-15 {
		t.Errorf("the warm-up starts at %v, want 0.25·%v", got, base)
	}
	for e := 1; e < 4; e++ {
		if optim.LR(w, base, e, epochs) <= optim.LR(w, base, e-1, epochs) {
			t.Errorf("the warm-up does not rise at epoch %d", e)
		}
	}
	for e := 4; e < epochs; e++ {
		if got, want := optim.LR(w, base, e, epochs), optim.LR(s, base, e-4, epochs-4); got != want {
			t.Errorf("epoch %d after a 4-epoch warm-up: rate %v, want the schedule's epoch %d of %d, %v", e, got, e-4, epochs-4, want)
		}
	}
}

// Param returns a float64 parameter on be's host tier with the given
// values and gradient.
func Param(t *testing.T, be backend.Backend, name string, val, grad []float64) *engine.Param {
	t.Helper()
	p := &engine.Param{Name: name}
	for _, x := range []struct {
		dst **tensor.Tensor
		v   []float64
	}{{&p.Value, val}, {&p.Grad, grad}} {
		tt, err := be.Alloc(tensor.Float64, []int{len(x.v)}, tensor.Host)
		if err != nil {
			t.Fatal(err)
		}
		if err := engine.UploadFloats(be, tt, x.v); err != nil {
			t.Fatal(err)
		}
		*x.dst = tt
	}
	return p
}

func newParam(t *testing.T, be backend.Backend, v []float64) *engine.Param {
	t.Helper()
	return Param(t, be, "w", v, v)
}

// steps runs n steps on ½|p|², whose gradient is p.
func steps(t *testing.T, be backend.Backend, opt optim.Optimizer, p *engine.Param, n int) {
	t.Helper()
	for range n {
		if err := be.Copy(p.Grad, p.Value); err != nil {
			t.Fatal(err)
		}
		if err := opt.Step([]*engine.Param{p}); err != nil {
			t.Fatal(err)
		}
	}
}

// Values downloads x as float64s.
func Values(t *testing.T, be backend.Backend, x *tensor.Tensor) []float64 {
	t.Helper()
	v, err := engine.DownloadFloats(be, x)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func equal(t *testing.T, got, want []float64, what string) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s: p[%d] = %.17g, want %.17g", what, i, got[i], want[i])
		}
	}
}
