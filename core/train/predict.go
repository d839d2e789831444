package train

import (
	"context"
	"errors"
	"fmt"
	"strata/core/backend"
	"strata/core/topology"

	"strata/core/backend/sim"
	"strata/core/config"
	"strata/core/registry"
	"strata/core/tensor"
	"strata/plugins/layers"
	"strata/plugins/wasm"
)

// deviceSpec is the roofline of the simulated devices: a V100 unless
// [devices] says otherwise.
func deviceSpec(cfg *config.Config) topology.DeviceSpec {
	d, spec := cfg.Devices, topology.V100
	if d.PeakGFLOPS > 0 {
		spec.PeakGFLOPS = d.PeakGFLOPS
	}
	if d.MemGBps > 0 {
		spec.MemGBps = d.MemGBps
	}
	if d.LaunchUS >= 0 {
		spec.LaunchUS = d.LaunchUS
	}
	return spec
}

// attachKernelCost loads devices.cost_model (roofline by default) and lets
// the simulated backend predict every device kernel's time with it. The
// returned function releases the module.
func attachKernelCost(ctx context.Context, cfg *config.Config, sb *sim.Backend, opts wasm.Options) (func(), error) {
	name := cfg.Devices.CostModel
	switch name {
	case "none":
		return func() {}, nil
	case "":
		name = "roofline"
	}
	id := "costmodel." + name
	if id == costModelBetty {
		return nil, cfg.KeyError(fmt.Sprintf("devices.cost_model = %q estimates a batch's memory, not a kernel's time; use \"roofline\" or a kernel-time model of your own", cfg.Devices.CostModel), "devices", "cost_model")
	}
	cm, release, err := loadCostModel(ctx, id, opts)
	switch {
	case errors.Is(err, registry.ErrNotFound):
		return nil, cfg.KeyError(fmt.Sprintf("devices.cost_model = %q is not a registered cost model (known: %s, or \"none\")",
			cfg.Devices.CostModel, registry.QuoteList(costModelNames())), "devices", "cost_model")
	case err != nil:
		return nil, cfg.KeyError("devices.cost_model: "+err.Error(), "devices", "cost_model")
	}
	sb.SetKernelCost(cm)
	return release, nil
}

// costModelNames lists the registered kernel-time cost models by short
// name (not Betty's memory model).
func costModelNames() []string {
	var out []string
	for _, mi := range registry.Namespace("costmodel") {
		if mi.ID != costModelBetty {
			out = append(out, mi.Name())
		}
	}
	return out
}

// prediction is what the simulated machine's cost model says a stretch of
// work took, by purpose (see backend.Predicted).
type prediction backend.Predicted

// predictionNow reads the backend's running totals.
func predictionNow(sb *sim.Backend) prediction { return prediction(sb.Predicted()) }

// since returns the work done between an earlier reading and p.
func (p prediction) since(earlier prediction) prediction {
	d := prediction{TransferS: map[string]float64{}, KernelS: map[tensor.Tier]map[string]float64{}}
	for k, s := range p.TransferS {
		d.TransferS[k] = s - earlier.TransferS[k]
	}
	for tier, m := range p.KernelS {
		d.KernelS[tier] = map[string]float64{}
		for k, s := range m {
			d.KernelS[tier][k] = s - earlier.KernelS[tier][k]
		}
	}
	return d
}

// stagePurposes are the work of the mini-batch pipeline's transfer stage:
// the feature store's gathers and uploads and the blocks' topology.
// Everything else (the model's kernels, labels, gradients) is computation.
var stagePurposes = map[string]bool{backend.PurposeFeatures: true, backend.PurposeTopology: true}

// split returns the predicted time of the transfer stage and of the
// computation: links one after another, devices computing in parallel.
func (p prediction) split() (stage, compute float64) {
	for k, s := range p.TransferS {
		if stagePurposes[k] {
			stage += s
		} else {
			compute += s
		}
	}
	var stageK, computeK float64
	for _, m := range p.KernelS {
		var st, c float64
		for k, s := range m {
			if stagePurposes[k] {
				st += s
			} else {
				c += s
			}
		}
		stageK, computeK = max(stageK, st), max(computeK, c)
	}
	return stage + stageK, compute + computeK
}

// sequentialS is the predicted time when nothing overlaps.
func (p prediction) sequentialS() float64 {
	stage, compute := p.split()
	return stage + compute
}

// computeSeconds is each device's predicted kernel time.
func (p prediction) computeSeconds() map[string]float64 {
	out := map[string]float64{}
	for tier, m := range p.KernelS {
		for _, s := range m {
			out[string(tier)] += s
		}
	}
	return out
}

// pipelinedS predicts a pipeline of batches in which batch i+1's transfers
// run while batch i computes: the first transfer, then per batch the
// longer of its computation and the next batch's transfer.
func pipelinedS(transfer, compute []float64) float64 {
	if len(transfer) == 0 {
		return 0
	}
	t := transfer[0]
	for i, c := range compute {
		next := 0.0
		if i+1 < len(transfer) {
			next = transfer[i+1]
		}
		t += max(c, next)
	}
	return t
}

// pipelined is a stepper that predicts its own epoch time, because its
// stages overlap.
type pipelined interface {
	predictedS() float64
}

// loadCostModel starts a registered cost model (costmodel.<name>) in a
// runtime of its own; release closes both.
func loadCostModel(ctx context.Context, id string, opts wasm.Options) (cm *wasm.CostModel, release func(), err error) {
	code, err := layers.Lookup(id)
	if err != nil {
		return nil, nil, err
	}
	rt, err := wasm.NewRuntime(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	closeRT := func() { rt.Close(context.WithoutCancel(ctx)) }
	mod, err := rt.Load(ctx, id, code)
	if err == nil {
		cm, err = mod.CostModel(ctx)
	}
	if err != nil {
		closeRT()
		return nil, nil, err
	}
	return cm, func() { cm.Close(); closeRT() }, nil
}
