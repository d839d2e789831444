package strategy

import (
	"context"
	"fmt"
	"math"

	"strata/core/backend"
	"strata/core/config"
	"strata/core/ir"
	"strata/core/modhost"
	"strata/core/tensor"
	"strata/core/topology"
	"strata/core/train"
)

// drmState is what dynamic resource management decides for a step: the
// CPU trainers' share of the batch and the threads of the CPU tasks.
type drmState struct {
	share               float64
	sample, load, train int
}

// initialState splits a thread budget: a quarter each to sampling and
// loading, the rest to CPU training, each at least one (on fewer than
// three cores the tasks share them).
func initialState(share float64, budget int) drmState {
	s := max(1, budget/4)
	return drmState{share: share, sample: s, load: s, train: max(1, budget-2*s)}
}

// stageTimes are one step's stage times (Alg. 1's inputs): sampling on
// the CPU, feature loading, data transfer and training on the devices
// (slowest device), training on the CPU (slowest CPU trainer), and the
// all-reduce.
type stageTimes struct {
	SC, Load, Tran, TA, TC, Sync float64
}

func (t *stageTimes) add(o stageTimes) {
	t.SC, t.Load, t.Tran, t.TA, t.TC, t.Sync = t.SC+o.SC, t.Load+o.Load, t.Tran+o.Tran, t.TA+o.TA, t.TC+o.TC, t.Sync+o.Sync
}

// Alg. 1's task names.
const (
	taskSC    = "sample"
	taskLoad  = "load"
	taskTC    = "cpu_train"
	taskAccel = "accel"
)

// drmDecide is HyScale's Alg. 1: it finds the bottleneck of the step's
// stage times and either moves work between the CPU trainers and the
// devices (balance work) or moves a thread from the fastest CPU task to
// the bottleneck (balance thread). When balance thread has no thread to
// move (every CPU task has one) it balances work instead, so that a
// CPU-bound start still converges. It returns the new state and a
// description of the change ("" for none).
//
// The times were measured under state at (the step's own); the change
// applies to cur, the latest decision, which in a pipeline may already
// differ: balance work aims at the share where both sides would take
// equally long if each side's time grows with its share (estimated at
// at), moving cur at most step towards it.
func drmDecide(cur, at drmState, t stageTimes, step float64) (drmState, string) {
	st := cur
	accel := max(t.Tran, t.TA)
	type task struct {
		name string
		s    float64
	}
	all := []task{{taskSC, t.SC}, {taskLoad, t.Load}, {taskTC, t.TC}, {taskAccel, accel}}
	// Sort by time, slowest first; ties keep the order above (stable).
	for i := 1; i < len(all); i++ {
		for j := i; j > 0 && all[j].s > all[j-1].s; j-- {
			all[j], all[j-1] = all[j-1], all[j]
		}
	}
	bottleneck, fastest := all[0].name, all[len(all)-1].name
	if all[0].s == 0 {
		return st, ""
	}
	threads := func(s *drmState, name string) *int {
		switch name {
		case taskSC:
			return &s.sample
		case taskLoad:
			return &s.load
		case taskTC:
			return &s.train
		}
		return nil
	}
	balanceThread := func() (drmState, string, bool) {
		// The fastest CPU task other than the bottleneck gives a thread.
		for i := len(all) - 1; i > 0; i-- {
			n := all[i].name
			if n == bottleneck || n == taskAccel {
				continue
			}
			out := st
			from, to := threads(&out, n), threads(&out, bottleneck)
			if *from <= 1 {
				return st, "", false
			}
			*from--
			*to++
			return out, fmt.Sprintf("thread %s->%s %d/%d/%d", n, bottleneck, out.sample, out.load, out.train), true
		}
		return st, "", false
	}
	balanceWork := func() (drmState, string) {
		// The share at which both sides would take equally long if each
		// side's time is proportional to its share, bounded by step.
		s, a := st.share, at.share
		var target float64
		switch {
		case t.TC == 0 && accel == 0:
			return st, ""
		case a <= 0 || t.TC == 0:
			target = a + step
		case a >= 1 || accel == 0:
			target = a - step
		default:
			cpuRate, devRate := a/t.TC, (1-a)/accel
			target = cpuRate / (cpuRate + devRate)
		}
		if math.Abs(t.TC-accel) <= 0.05*max(t.TC, accel) {
			return st, "" // balanced within 5%
		}
		target = min(max(target, s-step, 0), s+step, 1)
		target = math.Round(target*1000) / 1000
		if target == s {
			return st, ""
		}
		out := st
		out.share = target
		return out, fmt.Sprintf("work %.3f->%.3f", s, target)
	}
	switch bottleneck {
	case taskAccel:
		return balanceWork()
	case taskLoad:
		out, what, _ := balanceThread()
		return out, what
	case taskSC, taskTC:
		if bottleneck == taskTC && fastest == taskAccel {
			return balanceWork()
		}
		if out, what, ok := balanceThread(); ok {
			return out, what
		}
		if bottleneck == taskTC {
			return balanceWork()
		}
	}
	return st, ""
}

// hyscalePerf is HyScale's performance model (costmodel.hyscale) for one
// run: the model's layer sizes and the machine description.
type hyscalePerf struct {
	cm      modhost.CostModel
	release func()
	h       config.Hybrid
	width   []float64 // per layer: the width it aggregates (f^l)
	// Per layer: multiply-adds per source and per destination row (the
	// weights applied before and after the aggregation).
	macsSrc, macsDst []float64
	scalars          float64 // the model's learnable scalars
	dim              int
	dev              topology.DeviceSpec
	pcie             float64 // host<->device GB/s (0 without devices)
}

func newHyscalePerf(ctx context.Context, cfg *config.Config, e stepEnv) (*hyscalePerf, error) {
	cm, release, err := train.LoadCostModel(ctx, e.host, "costmodel.hyscale")
	if err != nil {
		return nil, fmt.Errorf("hybrid: performance model: %w", err)
	}
	p := &hyscalePerf{cm: cm, release: release, h: cfg.Hybrid, dim: e.dim, dev: topology.V100}
	p.layerShape(cfg.Model.Layers, e.model)
	if m, ok := e.be.(backend.Machine); ok {
		topo := m.Topology()
		p.dev = topo.Compute
		if len(topo.HostGBps) > 0 {
			p.pcie = topo.HostGBps[0]
		}
	} else if e.tier != tensor.Host {
		p.pcie = 16 // a PCIe 3.0 x16 link, for a real device
	}
	return p, nil
}

// layerShape reads the model's layers: the widths they aggregate and the
// weights of their matrix products, each counted per source row when it
// runs before the layer's aggregation (on every source of the block) or
// per destination row after it.
func (p *hyscalePerf) layerShape(layers int, g *ir.Graph) {
	p.width, p.macsSrc, p.macsDst = make([]float64, layers), make([]float64, layers), make([]float64, layers)
	post := make([]bool, len(g.Ops)) // the value depends on an aggregation of its own layer
	for i, op := range g.Ops {
		if op.Kind == ir.OpParam {
			p.scalars += float64(ir.Numel(op.Shape))
		}
		l := int(op.Layer)
		for _, a := range op.Args {
			post[i] = post[i] || post[a] && g.Ops[a].Layer == op.Layer
		}
		if l < 0 || l >= layers {
			continue
		}
		switch s := ir.Spec(op.Kind); {
		case s != nil && s.Aggregates():
			post[i] = true
			if len(op.Shape) == 2 && op.Shape[1] > 0 {
				p.width[l] += float64(op.Shape[1])
			}
		case op.Kind == ir.OpMatMul:
			if w := g.Ops[op.Args[1]].Shape; len(w) == 2 && w[0] > 0 && w[1] > 0 {
				if post[i] {
					p.macsDst[l] += float64(w[0] * w[1])
				} else {
					p.macsSrc[l] += float64(w[0] * w[1])
				}
			}
		}
	}
}

func (p *hyscalePerf) close() { p.release() }

func (p *hyscalePerf) call(op int32, in ...float64) ([4]float64, error) {
	out, err := p.cm.Predict(op, in)
	if err != nil {
		return out, fmt.Errorf("costmodel.hyscale op %d: %w", op, err)
	}
	return out, nil
}

// Op codes of costmodel.hyscale (see models/costmodels/hyscale).
const (
	hsSample int32 = iota
	hsLoad
	hsTransfer
	hsTrainer
	hsSync
	hsIteration
)

// partWork is one trainer's share of a step, in the model's terms.
type partWork struct {
	edges, dst, src []float64 // per layer
	rows            float64   // input rows (|V⁰|)
	topoBytes       float64   // the blocks' topology bytes sent to a device
}

// stepWork is one step's work on every trainer (in trainer order).
type stepWork struct {
	parts []partWork
	cpu   []bool
}

func (w *stepWork) edges() float64 {
	var n float64
	for _, p := range w.parts {
		for _, e := range p.edges {
			n += e
		}
	}
	return n
}

// predict returns the model's stage times of a step for the state's
// threads (the CPU trainers share the training threads).
func (p *hyscalePerf) predict(w *stepWork, st drmState, nCPU int) (stageTimes, error) {
	var t stageTimes
	var rows float64
	for _, pw := range w.parts {
		rows += pw.rows
	}
	out, err := p.call(hsSample, w.edges(), float64(st.sample), p.h.SampleMEPS)
	if err != nil {
		return t, err
	}
	t.SC = out[0]
	if out, err = p.call(hsLoad, rows, float64(p.dim), 4, p.h.CPUGBps, float64(st.load)); err != nil {
		return t, err
	}
	t.Load = out[0]
	cpuThreads := float64(max(1, st.train/max(nCPU, 1)))
	devices := 0
	for i, pw := range w.parts {
		if len(pw.edges) == 0 {
			continue
		}
		in := []float64{0, p.dev.MemGBps, p.dev.PeakGFLOPS, 4, float64(len(pw.edges))}
		if w.cpu[i] {
			in[1], in[2] = p.h.CPUGBps*cpuThreads, p.h.CPUGFLOPS*cpuThreads
		}
		for l := range pw.edges {
			in = append(in, pw.edges[l], p.width[l], pw.src[l]*p.macsSrc[l]+pw.dst[l]*p.macsDst[l])
		}
		if out, err = p.call(hsTrainer, in...); err != nil {
			return t, err
		}
		if w.cpu[i] {
			t.TC = max(t.TC, out[0])
			continue
		}
		devices++
		t.TA = max(t.TA, out[0])
		if out, err = p.call(hsTransfer, pw.rows, float64(p.dim), 4, p.pcie, pw.topoBytes); err != nil {
			return t, err
		}
		t.Tran = max(t.Tran, out[0])
	}
	if devices > 0 {
		if out, err = p.call(hsSync, p.scalars, 4, p.pcie); err != nil {
			return t, err
		}
		t.Sync = out[0]
	}
	return t, nil
}

// iteration returns Eq. 6's iteration time (pipelined: the stages
// overlap, as with two-stage prefetch) and Eq. 5's MTEPS.
func (p *hyscalePerf) iteration(t stageTimes, edges float64, pipelined bool) (float64, float64, error) {
	pl := 0.0
	if pipelined {
		pl = 1
	}
	out, err := p.call(hsIteration, t.SC, t.Load, t.Tran, max(t.TA, t.TC), t.Sync, edges, pl)
	return out[0], out[1], err
}
