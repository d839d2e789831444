package train

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strata/core/backend"
	"strata/core/modhost"

	"strata/core/config"
	"strata/core/registry"
	"strata/core/tensor"
)

// attachKernelCost loads devices.cost_model (roofline by default) and lets
// the simulated backend predict every device kernel's time with it. The
// returned function releases the module.
func attachKernelCost(ctx context.Context, cfg *config.Config, tp backend.TimePredictor, host modhost.Host) (func(), error) {
	name := cfg.Devices.CostModel
	switch name {
	case "none":
		return func() {}, nil
	case "":
		name = "roofline"
	}
	id := "costmodel." + name
	if owner, ok := ownCostModels()[id]; ok {
		return nil, cfg.KeyError(fmt.Sprintf("devices.cost_model = %q is %s's own model, which estimates something other than a kernel's time; use \"roofline\" or a kernel-time model of your own", cfg.Devices.CostModel, owner), "devices", "cost_model")
	}
	cm, release, err := LoadCostModel(ctx, host, id)
	switch {
	case errors.Is(err, registry.ErrNotFound):
		return nil, cfg.KeyError(fmt.Sprintf("devices.cost_model = %q is not a registered cost model (known: %s, or \"none\")",
			cfg.Devices.CostModel, registry.QuoteList(costModelNames())), "devices", "cost_model")
	case err != nil:
		return nil, cfg.KeyError("devices.cost_model: "+err.Error(), "devices", "cost_model")
	}
	tp.SetKernelCost(cm)
	return release, nil
}

// costModelNames lists the registered kernel-time cost models by short
// name (not the strategies' own models, see CostModelUser).
func costModelNames() []string {
	own := ownCostModels()
	var out []string
	for _, mi := range registry.Namespace("costmodel") {
		if _, ok := own[mi.ID]; !ok {
			out = append(out, mi.Name())
		}
	}
	return out
}

// ownCostModels maps the cost models that registered strategies run for
// their own estimates (CostModelUser) to the strategy's ID.
func ownCostModels() map[string]string {
	out := map[string]string{}
	for _, m := range registry.Namespace("strategy") {
		if u, ok := m.New().(CostModelUser); ok {
			for _, id := range u.OwnCostModels() {
				if _, seen := out[id]; !seen {
					out[id] = m.ID // the first strategy, in ID order
				}
			}
		}
	}
	return out
}

// Prediction is what a simulated machine's cost model says a stretch of
// work took, by purpose (see backend.Predicted).
type Prediction backend.Predicted

// PredictionNow reads the running totals of a backend that predicts time
// (a zero Prediction for one that does not).
func PredictionNow(be backend.Backend) Prediction {
	if tp, ok := be.(backend.TimePredictor); ok {
		return Prediction(tp.Predicted())
	}
	return Prediction{}
}

// Since returns the work done between an earlier reading and p.
func (p Prediction) Since(earlier Prediction) Prediction {
	d := Prediction{TransferS: map[string]float64{}, KernelS: map[tensor.Tier]map[string]float64{}}
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

// Split returns the predicted time of the transfer stage and of the
// computation: each purpose's transfers on their critical path (links run
// in parallel, see core/backend/sim), the purposes one after another,
// devices computing in parallel, after the host's priced kernels (a
// simulated CPU gather, [devices] host_gather_gbps).
func (p Prediction) Split() (stage, compute float64) {
	stage, compute = splitSum(p.TransferS)
	var stageK, computeK, hostStage, hostCompute float64
	for tier, m := range p.KernelS {
		st, c := splitSum(m)
		if tier == tensor.Host { // the host's priced work (a CPU gather) precedes the devices'
			hostStage, hostCompute = st, c
			continue
		}
		stageK, computeK = max(stageK, st), max(computeK, c)
	}
	return stage + hostStage + stageK, compute + hostCompute + computeK
}

// splitSum sums the seconds of the stage's purposes and of the others, in
// the order of the purposes' names: a float sum in map order would differ
// in its last bit from run to run.
func splitSum(m map[string]float64) (stage, compute float64) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if stagePurposes[k] {
			stage += m[k]
		} else {
			compute += m[k]
		}
	}
	return stage, compute
}

// SequentialS is the predicted time when nothing overlaps.
func (p Prediction) SequentialS() float64 {
	stage, compute := p.Split()
	return stage + compute
}

// computeSeconds is each device's predicted kernel time.
func (p Prediction) computeSeconds() map[string]float64 {
	out := map[string]float64{}
	for tier, m := range p.KernelS {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			out[string(tier)] += m[k]
		}
	}
	return out
}

// LoadCostModel starts a registered cost model (costmodel.<name>) on the
// module host; release frees it.
func LoadCostModel(ctx context.Context, host modhost.Host, id string) (modhost.CostModel, func(), error) {
	code, err := modhost.Lookup(id)
	if err != nil {
		return nil, nil, err
	}
	return host.LoadCostModel(ctx, id, code)
}
