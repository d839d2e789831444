package hybrid

import (
	"context"
	"fmt"
	"math"

	"strata/core/backend"
	"strata/core/config"
	"strata/core/engine"
	"strata/core/ir"
	"strata/core/modhost"
	"strata/core/tensor"
	"strata/core/topology"
	"strata/core/train"
	"strata/plugins/strategy/internal/steprun"
)

// drmState is what dynamic resource management decides for a step: the
// CPU trainers' share of the batch, the CPU sampler's share of the
// devices' sampling (hybrid.sample_on = "device") and the threads of the
// CPU tasks.
type drmState struct {
	share               float64
	sampleCPU           float64
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
	SA                           float64 // sampling on the devices (hybrid.sample_on = "device"), the slowest
	Bind                         float64 // the CPU trainers' bind (host work before training), the slowest
}

func (t *stageTimes) add(o stageTimes) {
	t.SC, t.Load, t.Tran, t.TA, t.TC, t.Sync = t.SC+o.SC, t.Load+o.Load, t.Tran+o.Tran, t.TA+o.TA, t.TC+o.TC, t.Sync+o.Sync
	t.SA += o.SA
	t.Bind += o.Bind
}

// sides are Alg. 1's two competing times: the accelerator's (its
// transfer and trainer, and its sampler unless DRM balances sampling as
// a task of its own) and the CPU trainers'. With the stages overlapping
// (two-stage prefetch) a side takes its slowest stage; without it a
// step's transfer precedes its training on each side (the devices'
// upload, the CPU trainers' bind), so a side takes their sum.
func (t stageTimes) sides(overlap, samplingTask bool) (accel, cpu float64) {
	sa := t.SA
	if samplingTask {
		sa = 0 // Alg. 1 line 1: T_Accel = max(T_Tran, T_TA)
	}
	if overlap {
		return max(t.Tran, t.TA, sa), t.TC
	}
	return max(sa, t.Tran+t.TA), t.Bind + t.TC
}

// samplingWork is what balancing sampling needs (the devices sample,
// hybrid.sample_on = "device"): the edges the CPU sampler drew for the
// CPU trainers' parts, and those of the devices' parts, whoever read
// their rows.
type samplingWork struct{ cpuParts, devParts float64 }

// Alg. 1's task names.
const (
	taskSC    = "sample"
	taskSA    = "dev_sample"
	taskLoad  = "load"
	taskTC    = "cpu_train"
	taskAccel = "accel"
)

// drmTask is one of Alg. 1's tasks and its time.
type drmTask struct {
	name string
	s    float64
}

// drmDecide is HyScale's Alg. 1: it finds the bottleneck of the step's
// stage times and either moves work between the CPU trainers and the
// devices (balance work), moves sampling between the CPU sampler and the
// devices' samplers (balance work of T_SC and T_SA; sw non-nil: the
// devices sample), or moves a thread from the fastest CPU task to the
// bottleneck (balance thread). When balance thread has no thread to move
// (every CPU task has one) it balances work instead, so that a CPU-bound
// start still converges. It returns the new state and a description of
// the change ("" for none).
//
// The times were measured under state at (the step's own); the change
// applies to cur, the latest decision, which in a pipeline may already
// differ: balance work aims at the share where both sides would take
// equally long if each side's time grows with its share (estimated at
// at), moving cur at most step towards it.
func drmDecide(cur, at drmState, t stageTimes, step float64, overlap bool, sw *samplingWork) (drmState, string) {
	d := drmStep{cur: cur, at: at, t: t, step: step, sw: sw}
	d.accel, d.tc = t.sides(overlap, sw != nil)
	d.all = []drmTask{{taskSC, t.SC}, {taskLoad, t.Load}, {taskTC, d.tc}, {taskAccel, d.accel}}
	if sw != nil {
		d.all = append(d.all, drmTask{taskSA, t.SA})
	}
	// Sort by time, slowest first; ties keep the order above (stable).
	all := d.all
	for i := 1; i < len(all); i++ {
		for j := i; j > 0 && all[j].s > all[j-1].s; j-- {
			all[j], all[j-1] = all[j-1], all[j]
		}
	}
	if all[0].s == 0 {
		return cur, ""
	}
	bottleneck, fastest, second := all[0].name, all[len(all)-1].name, all[len(all)-2].name
	switch bottleneck {
	case taskSA:
		return d.balanceSampling()
	case taskAccel:
		return d.balanceWork()
	case taskLoad:
		out, what, _ := d.balanceThread()
		return out, what
	case taskSC:
		if sw != nil && (fastest == taskSA || fastest == taskAccel && second == taskSA) {
			return d.balanceSampling()
		}
		if out, what, ok := d.balanceThread(); ok || sw == nil {
			return out, what
		}
		return d.balanceSampling()
	case taskTC:
		if fastest == taskAccel || fastest == taskSA && second == taskAccel {
			return d.balanceWork()
		}
		if out, what, ok := d.balanceThread(); ok {
			return out, what
		}
		return d.balanceWork()
	}
	return cur, ""
}

// drmStep is one decision of Alg. 1 (drmDecide): the latest decision, the
// state the step ran under, its times, the tasks slowest first and the
// two sides of balance work.
type drmStep struct {
	cur, at   drmState
	t         stageTimes
	step      float64
	sw        *samplingWork
	all       []drmTask
	accel, tc float64
}

// threads returns the field of s holding a CPU task's threads (nil for a
// device task).
func threads(s *drmState, name string) *int {
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

// balanceThread moves a thread from the fastest CPU task other than the
// bottleneck to the bottleneck; ok is false when that task has one.
func (d *drmStep) balanceThread() (drmState, string, bool) {
	bottleneck := d.all[0].name
	for i := len(d.all) - 1; i > 0; i-- {
		n := d.all[i].name
		if n == bottleneck || threads(&d.cur, n) == nil {
			continue
		}
		out := d.cur
		from, to := threads(&out, n), threads(&out, bottleneck)
		if *from <= 1 || to == nil {
			return d.cur, "", false
		}
		*from--
		*to++
		return out, fmt.Sprintf("thread %s->%s %d/%d/%d", n, bottleneck, out.sample, out.load, out.train), true
	}
	return d.cur, "", false
}

// balanceWork moves the CPU trainers' share towards the one at which
// both sides would take equally long if each side's time is
// proportional to its share, at most step.
func (d *drmStep) balanceWork() (drmState, string) {
	tc, accel := d.tc, d.accel
	a := d.at.share
	var target float64
	switch {
	case tc == 0 && accel == 0:
		return d.cur, ""
	case a <= 0 || tc == 0:
		target = a + d.step
	case a >= 1 || accel == 0:
		target = a - d.step
	default:
		cpuRate, devRate := a/tc, (1-a)/accel
		target = cpuRate / (cpuRate + devRate)
	}
	if math.Abs(tc-accel) <= 0.05*max(tc, accel) {
		return d.cur, "" // balanced within 5%
	}
	out, moved := d.cur, false
	out.share, moved = d.towards(d.cur.share, target)
	if !moved {
		return d.cur, ""
	}
	return out, fmt.Sprintf("work %.3f->%.3f", d.cur.share, out.share)
}

// balanceSampling moves the CPU sampler's share x of the devices'
// sampling towards the one at which the CPU sampler and the devices'
// samplers would take equally long: T_SC(x) = (E_c + x E_d) / R_c and
// T_SA(x) = (1 - x) E_d / R_d, the rates R estimated at the step's own
// share; at most step.
func (d *drmStep) balanceSampling() (drmState, string) {
	sc, sa, x := d.t.SC, d.t.SA, d.at.sampleCPU
	if d.sw == nil || d.sw.devParts <= 0 || sc == 0 && sa == 0 {
		return d.cur, ""
	}
	if math.Abs(sc-sa) <= 0.05*max(sc, sa) {
		return d.cur, "" // balanced within 5%
	}
	ec, ed := d.sw.cpuParts, d.sw.devParts
	var target float64
	switch {
	case sa == 0 || x >= 1:
		target = x - d.step
	case sc == 0 || ec+x*ed <= 0:
		target = x + d.step
	default:
		cpuPerEdge, devPerEdge := sc/(ec+x*ed), sa/((1-x)*ed) // seconds per edge: 1/R
		target = (ed*devPerEdge - ec*cpuPerEdge) / (ed*cpuPerEdge + ed*devPerEdge)
	}
	out, moved := d.cur, false
	out.sampleCPU, moved = d.towards(d.cur.sampleCPU, target)
	if !moved {
		return d.cur, ""
	}
	return out, fmt.Sprintf("sampling %.3f->%.3f", d.cur.sampleCPU, out.sampleCPU)
}

// towards moves a share from cur at most step towards target, within
// [0, 1] and to three decimals, and reports whether it moved.
func (d *drmStep) towards(cur, target float64) (float64, bool) {
	target = min(max(target, cur-d.step, 0), cur+d.step, 1)
	target = math.Round(target*1000) / 1000
	return target, target != cur
}

// hyscalePerf is HyScale's performance model (costmodel.hyscale) for one
// run: the model's layer sizes and the machine description.
type hyscalePerf struct {
	cm      modhost.CostModel
	release func()
	h       HybridOptions
	width   []float64 // per layer: the width it aggregates (f^l)
	// Per layer: multiply-adds per source and per destination row (the
	// weights applied before and after the aggregation).
	macsSrc, macsDst []float64
	// The backward's, per layer: multiply-adds per source and
	// destination row (weight gradients, and input gradients where a
	// weight's input needs one) and the width its transposed
	// aggregations move.
	bmacsSrc, bmacsDst, bwidth []float64
	// Dropout, per layer: elements masked per source and destination
	// row, forward and backward.
	dropSrc, dropDst []float64
	scalars          float64 // the model's learnable scalars
	dim              int
	dev              topology.DeviceSpec
	pcie             float64 // host<->device GB/s (0 without devices)
	cpu              cpuMachine
	weight           [2]int // the largest weight matrix (the GEMM probe's shape)
	aggWidth         int    // the widest aggregation (the SpMM probe's width)
}

// cpuMachine is costmodel.hyscale's description of the CPU, per thread:
// from [hybrid], or measured by calibrate right before training.
type cpuMachine struct {
	GFLOPS     float64 `json:"cpu_gflops"`   // dense GEMM
	GBps       float64 `json:"cpu_gbps"`     // gathering feature rows
	AggGBps    float64 `json:"agg_gbps"`     // sparse aggregation (SpMM) bytes moved
	SampleMEPS float64 `json:"sample_meps"`  // sampled edges
	DropMEPS   float64 `json:"dropout_meps"` // dropout elements
	BindMEPS   float64 `json:"bind_meps"`    // block edges bound by a CPU trainer
	// TouchGBps is the first touch of freshly allocated staging memory
	// (the allocator's zeroing or the kernel's page faults). It has no
	// key: without calibration it is taken as cpu_gbps, a fresh byte
	// costing about what a gathered one does (the calibration on this
	// machine measures 1.2-1.6x cpu_gbps).
	TouchGBps float64 `json:"touch_gbps"`
}

func machineOf(h HybridOptions) cpuMachine {
	return cpuMachine{GFLOPS: h.CPUGFLOPS, GBps: h.CPUGBps, AggGBps: h.AggGBps, SampleMEPS: h.SampleMEPS, DropMEPS: h.DropoutMEPS, BindMEPS: h.BindMEPS, TouchGBps: h.CPUGBps}
}

func newHyscalePerf(ctx context.Context, cfg *config.Config, h HybridOptions, e steprun.Env) (*hyscalePerf, error) {
	cm, release, err := train.LoadCostModel(ctx, e.Host, CostModel)
	if err != nil {
		return nil, fmt.Errorf("hybrid: performance model: %w", err)
	}
	p := &hyscalePerf{cm: cm, release: release, h: h, dim: e.Dim, dev: topology.V100, cpu: machineOf(h)}
	p.layerShape(cfg.Model.Layers, e.Model)
	if m, ok := e.Be.(backend.Machine); ok {
		topo := m.Topology()
		p.dev = topo.Compute
		if len(topo.HostGBps) > 0 {
			p.pcie = topo.HostGBps[0]
		}
	} else if e.Tier != tensor.Host {
		if err := p.describeDevice(e); err != nil && h.CPUShare == ShareModel {
			p.close()
			return nil, cfg.KeyError(fmt.Sprintf("hybrid.cpu_share = \"model\" maps the split by pricing the devices, and the %s device cannot describe itself to the performance model (%v); give cpu_share a number", cfg.Train.Backend, err), "hybrid", "cpu_share")
		}
	}
	return p, nil
}

// describeDevice prices a real device as it describes itself
// (backend.DeviceDescriber: its roofline from its attributes, the host
// link measured); a backend that cannot is priced as a V100 behind a PCIe
// 3.0 x16 link, the log says so, and the error says why.
func (p *hyscalePerf) describeDevice(e steprun.Env) error {
	p.pcie = topology.PCIeGBps
	d, ok := e.Be.(backend.DeviceDescriber)
	if !ok {
		return fmt.Errorf("the backend does not implement backend.DeviceDescriber")
	}
	spec, err := d.DeviceRoofline()
	if err == nil {
		p.dev = spec
		var link float64
		if link, err = d.HostLinkGBps(); err == nil {
			p.pcie = link
		}
	}
	if err != nil && e.Log != nil {
		fmt.Fprintf(e.Log, "hybrid: performance model: %v; pricing the device as a V100 (%.0f GFLOP/s, %.0f GB/s) behind a %.0f GB/s link\n", err, p.dev.PeakGFLOPS, p.dev.MemGBps, p.pcie)
	}
	return err
}

// layerShape reads the model's layers: the widths they aggregate and the
// weights of their matrix products, each counted per source row when it
// runs before the layer's aggregation (on every source of the block) or
// per destination row after it; the same for the backward (a weight's
// input gradient and a transposed aggregation count only where the
// engine computes them: where their input depends on a parameter) and
// for dropout (a dropout multiplied into its matmuls masks its input
// twice: for the products and for the weight gradients).
func (p *hyscalePerf) layerShape(layers int, g *ir.Graph) {
	mk := func() []float64 { return make([]float64, layers) }
	p.width, p.macsSrc, p.macsDst = mk(), mk(), mk()
	p.bmacsSrc, p.bmacsDst, p.bwidth, p.dropSrc, p.dropDst = mk(), mk(), mk(), mk(), mk()
	// The CPU trainers' backend multiplies these dropouts into their
	// matmuls (engine.MultipliedInDropouts); a device's dropout is not
	// modelled.
	multipliedIn := engine.MultipliedInDropouts(g)
	post := make([]bool, len(g.Ops)) // the value depends on an aggregation of its own layer
	grad := make([]bool, len(g.Ops)) // the value depends on a parameter: the backward reaches it
	for i, op := range g.Ops {
		if op.Kind == ir.OpParam {
			p.scalars += float64(ir.Numel(op.Shape))
			grad[i] = true
		}
		l := int(op.Layer)
		for _, a := range op.Args {
			post[i] = post[i] || post[a] && g.Ops[a].Layer == op.Layer
			grad[i] = grad[i] || grad[a] && g.Ops[a].Kind != ir.OpGraph
		}
		if l < 0 || l >= layers {
			continue
		}
		argGrad := false // a non-graph argument needs a gradient
		for _, a := range op.Args {
			argGrad = argGrad || grad[a] && g.Ops[a].Kind != ir.OpParam && g.Ops[a].Kind != ir.OpGraph
		}
		perRow := func(src, dst []float64, v float64) {
			if post[i] {
				dst[l] += v
			} else {
				src[l] += v
			}
		}
		switch s := ir.Spec(op.Kind); {
		case s != nil && s.Aggregates():
			post[i] = true
			if len(op.Shape) == 2 && op.Shape[1] > 0 {
				p.width[l] += float64(op.Shape[1])
				p.aggWidth = max(p.aggWidth, int(op.Shape[1]))
				if argGrad {
					p.bwidth[l] += float64(op.Shape[1])
				}
			}
		case op.Kind == ir.OpMatMul:
			if w := g.Ops[op.Args[1]].Shape; len(w) == 2 && w[0] > 0 && w[1] > 0 {
				macs := float64(w[0] * w[1])
				if w[0]*w[1] > int64(p.weight[0]*p.weight[1]) {
					p.weight = [2]int{int(w[0]), int(w[1])}
				}
				perRow(p.macsSrc, p.macsDst, macs)
				back := macs // the weight's gradient
				if grad[op.Args[0]] && g.Ops[op.Args[0]].Kind != ir.OpParam {
					back += macs // the input's
				}
				perRow(p.bmacsSrc, p.bmacsDst, back)
			}
		case op.Kind == ir.OpDropout:
			if op.Alpha > 0 && len(op.Shape) == 2 && op.Shape[1] > 0 {
				w := float64(op.Shape[1])
				n := w
				if argGrad {
					n += w // the mask applied to the gradient
				}
				if multipliedIn[i] {
					n += w // the input masked again for the weight gradients
				}
				perRow(p.dropSrc, p.dropDst, n)
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
	hsBind
	hsLayer
	hsDeviceSample
	hsHybridIteration
)

// partWork is one trainer's share of a step, in the model's terms.
type partWork struct {
	edges, dst, src []float64 // per layer
	rows            float64   // input rows (|V⁰|)
	topoBytes       float64   // the blocks' topology bytes sent to a device
	// Sampled on the device: topology bytes it read in its own memory and
	// over links, and the neighbours the CPU sampler read for it instead
	// (its share of the device's sampling, drmState.sampleCPU).
	sampleLocal, sampleLink, hostNbrs float64
}

// stepWork is one step's work on every trainer (in trainer order).
type stepWork struct {
	parts []partWork
	cpu   []bool
	// freshBytes are the staging bytes the loader had to allocate (the
	// pool had no buffer to recycle): zeroed or faulted in before the
	// gather writes them.
	freshBytes float64
}

func (w *stepWork) edges() float64 {
	var n float64
	for _, p := range w.parts {
		n += p.sum()
	}
	return n
}

// cpuSampled returns the edges the CPU sampler sampled (every part's
// unless onDevice; then the CPU trainers' and the neighbours it read for
// the devices' parts, their share drmState.sampleCPU) and how many of threads that
// sampling keeps busy: the sampler runs the parts in parallel, each part
// on one goroutine (hybridStepper.sample), so a step of p equal parts
// uses min(threads, p), and in general the edges over its largest part
// bound it (the stage takes at least that part's time).
func (w *stepWork) cpuSampled(onDevice bool, threads int) (edges, busy float64) {
	var most float64
	for k, p := range w.parts {
		e := p.sum()
		if onDevice && !w.cpu[k] {
			e = p.hostNbrs // the CPU sampler's share of a device's part
		}
		edges, most = edges+e, max(most, e)
	}
	busy = float64(max(threads, 1))
	if most > 0 {
		busy = min(busy, edges/most)
	}
	return edges, busy
}

func (p *partWork) sum() float64 {
	var n float64
	for _, e := range p.edges {
		n += e
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
	m := p.cpu
	edges, busy := w.cpuSampled(p.h.SampleOn == "device", st.sample)
	out, err := p.call(hsSample, edges, busy, m.SampleMEPS)
	if err != nil {
		return t, err
	}
	t.SC = out[0]
	load := []float64{rows, float64(p.dim), 4, p.memCapped(m.GBps, float64(st.load), 1), float64(st.load)}
	if !p.h.PaperModel && w.freshBytes > 0 {
		// The loader's threads fault the fresh pages in as they gather
		// into them: the first touch runs on every load thread, within
		// the host's memory bandwidth.
		touch := float64(st.load)
		load = append(load, w.freshBytes, p.memCapped(m.TouchGBps, touch, 1)*touch)
	}
	if out, err = p.call(hsLoad, load...); err != nil {
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
		dropRate := 0.0 // a device's dropout is an elementwise kernel of its roofline: not modelled
		if w.cpu[i] {
			in[1], in[2], dropRate = p.memCapped(m.AggGBps, cpuThreads, float64(nCPU))*cpuThreads, m.GFLOPS*cpuThreads, m.DropMEPS*cpuThreads
		}
		for l := range pw.edges {
			in = append(in, pw.edges[l], p.width[l], pw.src[l]*p.macsSrc[l]+pw.dst[l]*p.macsDst[l])
		}
		if out, err = p.call(hsTrainer, in...); err != nil {
			return t, err
		}
		if !p.h.PaperModel {
			// The full backward and dropout, layer by layer (op 7).
			var sum float64
			for l := range pw.edges {
				for _, pass := range [2][3]float64{
					{p.width[l], pw.src[l]*p.macsSrc[l] + pw.dst[l]*p.macsDst[l], pw.src[l]*p.dropSrc[l] + pw.dst[l]*p.dropDst[l]},
					{p.bwidth[l], pw.src[l]*p.bmacsSrc[l] + pw.dst[l]*p.bmacsDst[l], 0},
				} {
					drop := pass[2]
					if dropRate == 0 {
						drop = 0
					}
					o, err := p.call(hsLayer, 0, in[1], in[2], 4, pw.edges[l], pass[0], pass[1], drop, dropRate)
					if err != nil {
						return t, err
					}
					sum += o[0]
				}
			}
			out[0] = sum
		}
		if w.cpu[i] {
			t.TC = max(t.TC, out[0])
			var e float64
			for _, v := range pw.edges {
				e += v
			}
			if !p.h.PaperModel {
				if out, err = p.call(hsBind, e, m.BindMEPS*cpuThreads, 0, m.GBps); err != nil {
					return t, err
				}
				t.Bind = max(t.Bind, out[0])
			}
			continue
		}
		devices++
		t.TA = max(t.TA, out[0])
		if p.h.SampleOn == "device" {
			if out, err = p.call(hsDeviceSample, pw.sampleLocal, p.dev.MemGBps, pw.sampleLink, p.pcie); err != nil {
				return t, err
			}
			t.SA = max(t.SA, out[0])
		}
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
// overlap, as with two-stage prefetch) and Eq. 5's MTEPS. host are the
// host stages' thread-seconds and the threads they share (hostShare).
func (p *hyscalePerf) iteration(t stageTimes, edges float64, host [2]float64, pipelined bool) (float64, float64, error) {
	pl := 0.0
	if pipelined {
		pl = 1
	}
	if p.h.PaperModel {
		out, err := p.call(hsIteration, max(t.SC, t.SA), t.Load, max(t.Tran, t.Bind), max(t.TA, t.TC), t.Sync, edges, pl)
		return out[0], out[1], err
	}
	out, err := p.call(hsHybridIteration, max(t.SC, t.SA), t.Load, t.Tran, t.Bind, t.TA, t.TC, t.Sync, edges, pl, host[0], host[1])
	return out[0], out[1], err
}

// hostShare returns the thread-seconds a step's host stages hold under
// st (sampling on its CPU parts' goroutines, loading on st.load, the CPU
// trainers' bind on one under two-stage prefetch) and the threads they
// share (hostThreads): with the stages pipelined, a step takes at least
// the one over the other.
func (s *hybridStepper) hostShare(t stageTimes, w *stepWork, st drmState) [2]float64 {
	capacity := hostCapacity(s.budget, s.reservedThreads(st))
	cpuParts, cpuPart := 0, false
	for k, p := range w.parts {
		if p.sum() > 0 && (s.h.SampleOn != "device" || w.cpu[k]) {
			cpuParts++
		}
		cpuPart = cpuPart || (w.cpu[k] && len(p.edges) > 0)
	}
	secs := t.SC*float64(min(st.sample, cpuParts, capacity)) + t.Load*float64(min(st.load, capacity))
	if s.h.Prefetch && cpuPart {
		secs += t.Bind
	}
	return [2]float64{secs, float64(capacity)}
}

// CostModel is the registry ID of HyScale-GNN's performance model, which
// predicts hybrid training's stage times.
const CostModel = "costmodel.hyscale"

// OwnCostModels implements train.CostModelUser.
func (*Hybrid) OwnCostModels() []string { return []string{CostModel} }
