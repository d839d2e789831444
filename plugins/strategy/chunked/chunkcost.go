package chunked

import (
	"fmt"

	"strata/core/backend"
	"strata/core/engine"
	"strata/core/ir"
	"strata/core/topology"
	"strata/plugins/strategy/internal/chunkfeed"
	"strata/plugins/strategy/internal/chunkplan"
	"strata/plugins/strategy/internal/memest"
)

// layerCost is the estimated cost of one layer's backward over all chunks
// with cached, recomputed and split intermediates (HongTu §4.2, Fig. 4c),
// and what it is made of.
type layerCost struct {
	savedBytes   int64   // the intermediates, summed over the chunks
	srcBytes     int64   // the chunks' input rows
	forwardS     float64 // the layer's forward, all chunks
	cacheS       float64 // the intermediates to the host and back (and the rows, if backward reads them)
	recomputeS   float64 // the input rows again and the forward
	inputInCache bool    // backward reads the input rows even with cached intermediates
	// With a split (splits): the aggregations' outputs kept, the input
	// rows its backward loads (all, the destinations' or none) and the
	// ops after the aggregations rerun; splitS is +Inf without one.
	splits      bool
	keptBytes   int64
	reloadBytes int64
	rerunS      float64
	splitS      float64
	choice      string // the cheapest: "cache", "recompute" or "split"
}

// hongtuChoice names costmodel.hongtu's op-1 choice (out[2]): 0
// recompute, 1 cache, 2 split ("" for another value).
func hongtuChoice(code float64) string {
	switch code {
	case 0:
		return "recompute"
	case 1:
		return "cache"
	case 2:
		return "split"
	}
	return ""
}

// machineSpec returns the host link bandwidth and device spec the
// estimates use: the simulated machine's, a real device's as it describes
// itself (backend.DeviceDescriber), otherwise a PCIe-attached V100.
func machineSpec(be backend.Backend) (hostGBps float64, dev topology.DeviceSpec) {
	if m, ok := be.(backend.Machine); ok {
		t := m.Topology()
		if len(t.HostGBps) > 0 && t.Compute.PeakGFLOPS > 0 {
			return t.HostGBps[0], t.Compute
		}
	}
	if d, ok := be.(backend.DeviceDescriber); ok {
		spec, err := d.DeviceRoofline()
		link, lerr := d.HostLinkGBps()
		if err == nil && lerr == nil {
			return link, spec
		}
	}
	return topology.PCIeGBps, topology.V100
}

// estimateLayers estimates every layer's cost of caching, of recomputing
// and (where the layer can split) of splitting its intermediates, over
// the plan's chunks, with costmodel.hongtu (§4.2). The intermediates and
// the split are sized by the engine (engine.Sizer: what a training step
// over the chunk allocates, what its split keeps and reruns); the forward
// and the split's rerun are priced by one roofline, the dense products
// with a parameter at peak throughput over the chunk's source rows plus
// every value written and read once at memory bandwidth.
func (r *chunkedRun) estimateLayers() ([]layerCost, error) {
	hostGBps, dev := machineSpec(r.e.Be)
	elt := int64(r.e.DT.Size())
	roofline := func(rows, dense, values int64) float64 {
		return 2*float64(rows)*float64(dense)/(dev.PeakGFLOPS*1e9) + 2*float64(values*elt)/(dev.MemGBps*1e9)
	}
	out := make([]layerCost, len(r.layers))
	for l, lg := range r.layers {
		sz, err := engine.NewSizer(lg, r.e.DT)
		if err != nil {
			return nil, fmt.Errorf("chunked: sizing layer %d: %w", l, err)
		}
		var dense int64 // Σ K·M of the products with a parameter
		for _, op := range lg.Ops {
			if op.Kind == ir.OpMatMul && lg.Ops[op.Args[1]].Kind == ir.OpParam {
				s := lg.Ops[op.Args[1]].Shape
				dense += s[0] * s[1]
			}
		}
		lc := &out[l]
		lc.inputInCache = r.needIn[l]
		sp := r.canSplit[l]
		lc.splits = sp != nil
		for _, c := range r.plan.Chunks {
			shape := engine.BlockShape{Dst: len(c.Dst), Src: len(c.Src), Edges: map[string]int64{}, Degrees: map[string]engine.Degrees{}}
			for name := range r.used[l] {
				cg := c.Graphs[name]
				shape.Edges[name], shape.Degrees[name] = cg.Csr.NNZ(), engine.DegreesOf(cg.Csr)
			}
			fp, err := sz.Blocks([]engine.BlockShape{shape}, len(c.Src), r.layerUsage(l))
			if err != nil {
				return nil, fmt.Errorf("chunked: sizing layer %d: %w", l, err)
			}
			src := int64(len(c.Src)) * int64(r.inWidth(l)) * elt
			lc.savedBytes += (fp.Values+fp.Masks+fp.Saved)*elt + 4*fp.Index
			lc.srcBytes += src
			lc.forwardS += roofline(int64(len(c.Src)), dense, fp.Values)
			if sp == nil {
				continue
			}
			_, size, err := sz.Split(shape, r.layerUsage(l))
			if err != nil {
				return nil, fmt.Errorf("chunked: sizing layer %d's split: %w", l, err)
			}
			lc.keptBytes += size.Kept
			lc.rerunS += roofline(int64(len(c.Src)), size.RerunDense, size.RerunValues)
			switch {
			case sp.NeedsInput:
				lc.reloadBytes += src
			case sp.DstRows:
				lc.reloadBytes += int64(len(c.Dst)) * int64(r.inWidth(l)) * elt
			}
		}
		if err := r.priceLayer(lc, hostGBps); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// priceLayer prices a layer's three ways with costmodel.hongtu's op 1 and
// records the cheapest.
func (r *chunkedRun) priceLayer(lc *layerCost, hostGBps float64) error {
	flag := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	res, err := r.cost.Predict(hongtuOpIntermediates, []float64{hostGBps, float64(lc.savedBytes), float64(lc.srcBytes), lc.forwardS, flag(lc.inputInCache),
		float64(lc.keptBytes), float64(lc.reloadBytes), lc.rerunS, flag(lc.splits)})
	if err != nil {
		return fmt.Errorf("chunked: %s: %w", CostModel, err)
	}
	choice := hongtuChoice(res[2])
	if choice == "" || choice == "split" && !lc.splits {
		return fmt.Errorf("chunked: %s: choice %v for a layer that splits %v", CostModel, res[2], lc.splits)
	}
	lc.cacheS, lc.recomputeS, lc.splitS, lc.choice = res[0], res[1], res[3], choice
	return nil
}

// chooseIntermediates sets each layer's handling of its intermediates:
// chunked.intermediates, or with "hybrid" ("") the cheapest by the
// estimate among cache, recompute and (where the layer can) split; on a
// host backend a layer that can split splits.
//
// hostSplits: where the backend computes on the host (the cpu backend:
// chunkedRun.rows is set) there is no link between the host tier and the
// "device", and the estimate's prices (a V100 behind PCIe, machineSpec)
// do not apply. There a split dominates in time: its backward reruns a
// subset of the forward's ops (never the aggregations) where
// recomputing reruns them all and reloads the input rows, and it keeps
// a subset of the saved tensors (the aggregations' outputs, a row per
// destination) where caching keeps them all; the kept rows go to the
// host file when there is one, else to RAM. Measured at R-MAT
// 2^20 (GCN 2×128, 16 chunks, host file), splitting layer 1 as well
// saved 4-7 of the run's 67-71 CPU-s over the price's choice, recompute
// (docs/decisions.md). Layers that cannot split are priced as before.
func (r *chunkedRun) chooseIntermediates(mode string) error {
	r.cache = make([]bool, len(r.layers))
	defer r.dropFixedChoice()
	switch mode {
	case "cache":
		for l := range r.cache {
			r.cache[l] = true
		}
	case "recompute", "split": // split: the layers that do not split recompute
	default:
		r.hybrid = true
		est, err := r.estimateLayers()
		if err != nil {
			return err
		}
		r.prices = est
		r.split = make([]*engine.SplitPlan, len(r.layers))
		for l, c := range est {
			if r.rows != nil && r.canSplit[l] != nil {
				c.choice = "split" // on the host a split dominates (hostSplits)
				r.prices[l].choice = c.choice
			}
			r.cache[l] = c.choice == "cache"
			if c.choice == "split" {
				r.split[l] = r.canSplit[l]
			}
		}
	}
	return nil
}

// estimatePeak estimates a device's peak memory in a training epoch over
// plan, following the allocations of a layer pass: the resident
// parameters, their gradients and the optimizer state; the transition
// buffers of deduplicated communication (the batch before's and the
// current one while it fills, with the staging rows, and in backward the
// gradient buffers of Alg. 3); and the step of one
// layer over one chunk (its graphs with their weights as the cpu kernels
// keep them, its input rows unless they are the transition buffer, the
// staging of p2p and reused rows, and the program's buffers as the
// engine sizes them), or a node pass over one range of nodes (prePeak).
func (r *chunkedRun) estimatePeak(plan *chunkplan.Plan, optimizer string, momentum float64) (int64, error) {
	resident, err := r.residentBytes(plan, optimizer, momentum)
	if err != nil {
		return 0, err
	}
	var worst int64
	for l, lg := range r.layers {
		w, err := r.layerPeak(plan, l, lg)
		if err != nil {
			return 0, err
		}
		pre, err := r.prePeak(plan, l)
		if err != nil {
			return 0, err
		}
		worst = max(worst, w, pre)
	}
	fixed, err := r.fixedPeak(plan)
	if err != nil {
		return 0, err
	}
	return resident + max(worst, fixed), nil
}

// residentBytes is what stays on a device for the whole epoch: the
// parameters, their gradients, the optimizer state and the model's
// state, and with several partitions the all-reduce's buffer.
func (r *chunkedRun) residentBytes(plan *chunkplan.Plan, optimizer string, momentum float64) (int64, error) {
	elt := int64(r.e.DT.Size())
	whole, err := engine.NewSizer(r.e.Model, r.e.DT)
	if err != nil {
		return 0, err
	}
	resident := whole.Learnable*elt*int64(2+memest.OptimizerSlots(optimizer, momentum)) + whole.State*elt
	if plan.M > 1 {
		resident += whole.Learnable * elt // the all-reduce's buffer (at most)
	}
	return resident, nil
}

// layerSizing is what estimatePeak sizes one layer's pass with.
type layerSizing struct {
	l     int
	sz    *engine.Sizer
	elt   int64 // bytes per element
	wb    int64 // bytes per row of the layer's input
	grads bool  // backward collects the vertex gradients in buffers (Alg. 3)
}

// layerPeak is the peak of layer l's pass over the plan's batches above
// the resident memory.
func (r *chunkedRun) layerPeak(plan *chunkplan.Plan, l int, lg *ir.Graph) (int64, error) {
	elt := int64(r.e.DT.Size())
	dedup := r.dedup != chunkfeed.DedupNone
	sz, err := engine.NewSizer(lg, r.e.DT)
	if err != nil {
		return 0, err
	}
	ls := layerSizing{l: l, sz: sz, elt: elt, wb: int64(r.inWidth(l)) * elt, grads: dedup && r.inputGrad(l)}
	var worst int64
	prev := make([]map[int32]bool, plan.M)
	for j, batch := range plan.Sched {
		var sets [][]int32
		trans := make([]int64, plan.M)
		if dedup {
			sets = plan.BatchRows(batch)
			worst = max(worst, r.transitionPeak(plan, j, sets, prev, trans, ls))
		}
		for k, ci := range batch {
			b, err := r.chunkPeak(plan, plan.Chunks[ci], k, sets, trans, ls)
			if err != nil {
				return 0, err
			}
			worst = max(worst, b)
		}
	}
	return worst, nil
}

// transitionPeak is the peak of batch j's transition buffers under
// deduplication (sets: each device's rows of the batch): closing the
// batch in backward, and filling each device's buffer from the batch
// before's (prev, updated to this batch's rows). It sets trans to each
// device's buffer bytes.
func (r *chunkedRun) transitionPeak(plan *chunkplan.Plan, j int, sets [][]int32, prev []map[int32]bool, trans []int64, ls layerSizing) int64 {
	wb := ls.wb
	var worst int64
	if ls.grads {
		// Closing the batch: its row and gradient buffers, the
		// next batch's gradient buffer, the rows staged.
		var next [][]int32
		if j+1 < len(plan.Sched) && r.dedup == chunkfeed.DedupReuse {
			next = plan.BatchRows(plan.Sched[j+1])
		}
		for i, rows := range sets {
			n := int64(len(rows))
			b := 2*n*wb + n*(wb+4)
			if next != nil {
				b += int64(len(next[i])) * wb
			}
			worst = max(worst, b)
		}
	}
	for i, rows := range sets {
		var keep int64
		cur := make(map[int32]bool, len(rows))
		for _, u := range rows {
			cur[u] = true
			if prev[i][u] && r.dedup == chunkfeed.DedupReuse {
				keep++
			}
		}
		load := int64(len(rows)) - keep
		t := int64(len(rows)) * wb
		trans[i] = t
		fill := max(int64(len(prev[i]))*wb+t+keep*(wb+4), t+load*(wb+4))
		worst = max(worst, fill)
		prev[i] = cur
	}
	return worst
}

// chunkPeak is the peak of the step over chunk c on device k: its
// graphs, its input rows unless they are the transition buffer, the
// staging of p2p and reused rows, the program's buffers, and (serving
// the other devices' p2p fetches) their transition buffers.
func (r *chunkedRun) chunkPeak(plan *chunkplan.Plan, c *chunkplan.Chunk, k int, sets [][]int32, trans []int64, ls layerSizing) (int64, error) {
	l, elt, wb := ls.l, ls.elt, ls.wb
	var worst int64
	d, s := int64(len(c.Dst)), int64(len(c.Src))
	shape := engine.BlockShape{Dst: len(c.Dst), Src: len(c.Src), Edges: map[string]int64{}, Degrees: map[string]engine.Degrees{}}
	var graphs int64
	for name := range r.used[l] {
		cg := c.Graphs[name]
		e := cg.Csr.NNZ()
		shape.Edges[name], shape.Degrees[name] = e, engine.DegreesOf(cg.Csr)
		graphs += 8*(d+1) + 8*(s+1) + 16*e + int64(len(cg.Gcn)+len(cg.Mean))*elt
	}
	prog, err := r.programBytes(ls.sz, l, shape, len(c.Src))
	if err != nil {
		return 0, err
	}
	input, staging := s*wb, int64(0)
	if r.dedup != chunkfeed.DedupNone {
		if plan.Aliased(k, sets[k], c) {
			input = 0
		} else {
			staging = s * (wb + 4) // at most: every row staged once
			for o := range sets {
				if o != k {
					worst = max(worst, trans[o]+s*(wb+4)) // serving a p2p fetch
				}
			}
		}
	}
	b := trans[k] + graphs + input + max(staging, prog)
	if ls.grads {
		// The gradient buffer, and the gradients staged into it
		// while the program is still bound.
		b = 2*trans[k] + graphs + input + max(staging, prog+s*(wb+4))
	}
	if l == len(r.layers)-1 {
		b += 4 * (d + int64(len(c.Train)))
	}
	return max(worst, b), nil
}

// programBytes is the footprint of layer l's training program over a
// chunk of this shape: split or not as the layer runs, or, while a
// "hybrid" run has still to choose (splitOpen), the larger of the two.
func (r *chunkedRun) programBytes(sz *engine.Sizer, l int, shape engine.BlockShape, src int) (int64, error) {
	u := r.layerUsage(l)
	u.Split = r.isSplit(l)
	fp, err := sz.Blocks([]engine.BlockShape{shape}, src, u)
	if err != nil {
		return 0, fmt.Errorf("chunked: sizing layer %d: %w", l, err)
	}
	b := fp.Bytes()
	if r.splitOpen(l) {
		u.Split = true
		if fp, err = sz.Blocks([]engine.BlockShape{shape}, src, u); err != nil {
			return 0, fmt.Errorf("chunked: sizing layer %d: %w", l, err)
		}
		b = max(b, fp.Bytes())
	}
	return b, nil
}

// hongtuOps are the op codes of costmodel.hongtu.
const (
	hongtuOpComm          = 0
	hongtuOpIntermediates = 1
)

// commBytes returns the neighbour-row bytes of an epoch under each
// deduplication mode: every layer loads its rows in forward and again in
// backward.
func (r *chunkedRun) commBytes(c chunkplan.CommRows) map[string]int64 {
	elt := int64(r.e.DT.Size())
	var w int64
	for l := range r.layers {
		w += int64(r.inWidth(l))
	}
	return map[string]int64{chunkfeed.DedupNone: 2 * c.Ori * w * elt, chunkfeed.DedupP2P: 2 * c.P2p * w * elt, chunkfeed.DedupReuse: 2 * c.Ru * w * elt}
}

// commCost prices an epoch's neighbour rows under plan with Eq. 4
// (costmodel.hongtu) for each deduplication mode, in seconds.
func (r *chunkedRun) commCost(plan *chunkplan.Plan) (map[string]float64, error) {
	b := r.commBytes(plan.Comm(r.e.DS.NumNodes))
	hd, dev := machineSpec(r.e.Be)
	var dd float64
	if m, ok := r.e.Be.(backend.Machine); ok {
		t := m.Topology()
		if t.Devices > 1 {
			dd = t.PeerGBps[0][1]
		}
	}
	ori, p2p, ru := float64(b[chunkfeed.DedupNone]), float64(b[chunkfeed.DedupP2P]), float64(b[chunkfeed.DedupReuse])
	out := map[string]float64{}
	for mode, v := range map[string][3]float64{chunkfeed.DedupNone: {ori, ori, ori}, chunkfeed.DedupP2P: {ori, p2p, p2p}, chunkfeed.DedupReuse: {ori, p2p, ru}} {
		res, err := r.cost.Predict(hongtuOpComm, []float64{hd, dd, dev.MemGBps, v[0], v[1], v[2]})
		if err != nil {
			return nil, fmt.Errorf("chunked: %s: %w", CostModel, err)
		}
		out[mode] = res[0]
	}
	return out, nil
}
