package hybrid

import (
	"context"
	"fmt"

	"strata/core/config"
	"strata/core/sampling"
	"strata/plugins/strategy/internal/steprun"
)

// ShareModel is HybridOptions.CPUShare when the config says cpu_share =
// "model": the performance model picks the initial share.
const ShareModel = -1

// modelGrid is the number of steps of the shares the mapping tries: 0,
// 1/modelGrid, ..., 1.
const modelGrid = 100

// checkModelShare checks that cpu_share = "model" has a split to choose:
// devices and CPU trainers, and parts the model prices.
func checkModelShare(cfg *config.Config, h HybridOptions) error {
	switch {
	case cfg.Train.Backend == "cpu":
		return cfg.KeyError("hybrid.cpu_share = \"model\" chooses the split between CPU trainers and devices, and train.backend = \"cpu\" has no devices; set train.backend = \"sim\" (with [devices]) or \"cuda\", or give cpu_share a number", "hybrid", "cpu_share")
	case h.CPUTrainers == 0:
		return cfg.KeyError("hybrid.cpu_share = \"model\" with hybrid.cpu_trainers = 0: there is no split to choose; add CPU trainers or set hybrid.cpu_share = 0", "hybrid", "cpu_share")
	case cfg.Train.Backend == "sim" && cfg.Devices.CostModel == "none":
		return cfg.KeyError("hybrid.cpu_share = \"model\" prices the devices' kernels, and devices.cost_model = \"none\" gives the simulated devices no kernel time, so the run's clock would not be the one the split was chosen for; set devices.cost_model = \"roofline\" (or leave it out) or give cpu_share a number", "hybrid", "cpu_share")
	case h.SampleOn == "device":
		return cfg.KeyError("hybrid.cpu_share = \"model\" with hybrid.sample_on = \"device\": the mapping prices the CPU sampler's work only; set hybrid.sample_on = \"cpu\" or give cpu_share a number", "hybrid", "cpu_share")
	}
	return nil
}

// mapShare is HyScale's mapping at compile time (§IV-A): the CPU share
// whose step costmodel.hyscale predicts fastest, by Eq. 5's MTEPS, for
// the first step of the training nodes shuffled with seed (train.seed,
// so that a resumed run maps alike; with calibrate the machine's rates
// are measured, and the mapping follows them). The step's nodes are sampled
// once, as one part; a trainer's part of a candidate split is that work
// scaled by its share of the nodes (the model's proportionality: edges,
// rows and bytes grow with the seeds). It tries the shares 0, 0.01, ...,
// 1 (with per-trainer batching, below 1) and keeps the first best.
func (s *hybridStepper) mapShare(ctx context.Context, seed uint64) (share, mteps float64, err error) {
	order := steprun.Shuffled(s.e.DS.Train, seed)
	nCPU := len(s.trainers) - s.nDev
	n := s.batch
	if s.h.Batching == BatchPerTrainer {
		n = s.batch * (s.nDev + nCPU) // the largest step: a batch per trainer
	}
	nodes := order[:min(n, len(order))]
	rng := seed * 0x9e3779b97f4a7c15 // the seed of batch 0 (sample)
	blocks, err := s.sampler.Sample(ctx, s.e.Adjs.Adj, nodes, rng)
	if err != nil {
		return 0, 0, fmt.Errorf("hybrid: cpu_share = \"model\": sampling the first step: %w", err)
	}
	whole := partWorkOf(blocks)
	share, mteps = 0, -1
	for i := 0; i <= modelGrid; i++ {
		x := float64(i) / modelGrid
		if s.h.Batching == BatchPerTrainer && x >= 1 {
			break
		}
		w := s.candidateWork(whole, len(nodes), x)
		st := s.state
		st.share = x
		t, err := s.perf.predict(&w, st, nCPU)
		if err != nil {
			return 0, 0, err
		}
		_, m, err := s.perf.iteration(t, w.edges(), s.hostShare(t, &w, st), s.h.Prefetch)
		if err != nil {
			return 0, 0, err
		}
		if m > mteps {
			share, mteps = x, m
		}
	}
	return share, mteps, nil
}

// candidateWork is the step's work on every trainer with the CPU share
// x, each part the whole work of n nodes scaled by its nodes: split
// batching divides the n nodes (x of them over the CPU trainers);
// per-trainer batching gives each device the batch size and the CPU
// trainers c with c / (devices' + c) = x, at most a batch each.
func (s *hybridStepper) candidateWork(whole partWork, n int, x float64) stepWork {
	nCPU := len(s.trainers) - s.nDev
	dev, cpu := (1-x)*float64(n)/float64(max(s.nDev, 1)), x*float64(n)/float64(max(nCPU, 1))
	if s.h.Batching == BatchPerTrainer {
		dev = float64(s.batch)
		cpu = min(x/(1-x)*float64(s.batch*s.nDev), float64(nCPU*s.batch)) / float64(max(nCPU, 1))
	}
	w := stepWork{parts: make([]partWork, len(s.trainers)), cpu: make([]bool, len(s.trainers))}
	for k, t := range s.trainers {
		w.cpu[k] = t.cpu
		part := dev
		if t.cpu {
			part = cpu
		}
		if part > 0 {
			w.parts[k] = whole.scaled(part / float64(n))
		}
	}
	return w
}

// partWorkOf is the work of a part sampled into blocks.
func partWorkOf(blocks []sampling.Block) partWork {
	var pw partWork
	for _, bl := range blocks {
		pw.edges = append(pw.edges, float64(bl.NumEdges()))
		pw.dst = append(pw.dst, float64(len(bl.Dst)))
		pw.src = append(pw.src, float64(len(bl.Src)))
		// CSR row pointers and columns, GCN and mean edge weights.
		pw.topoBytes += float64(8*(len(bl.Dst)+1)) + 12*float64(bl.NumEdges())
	}
	if len(blocks) > 0 {
		pw.rows = float64(len(blocks[0].Src))
	}
	return pw
}

// scaled is p with every count multiplied by f.
func (p partWork) scaled(f float64) partWork {
	mul := func(v []float64) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = x * f
		}
		return out
	}
	return partWork{edges: mul(p.edges), dst: mul(p.dst), src: mul(p.src), rows: p.rows * f, topoBytes: p.topoBytes * f,
		sampleLocal: p.sampleLocal * f, sampleLink: p.sampleLink * f}
}
