// Package layers registers the WebAssembly modules that ship with strata as
// plugins: each layer module as model.<name>, each aggregator as
// aggregator.<name> and each cost model as costmodel.<name>. Importing it (blank) makes them selectable by name in
// a config's model.name.
//
// A user's own module needs no registration: model.module names its .wasm
// file.
package layers

import (
	"strata/core/modhost"
	"strata/core/registry"
	"strata/models"
)

// docs describe the shipped modules for `strata list-plugins`.
var docs = map[string]string{
	"model.gcn":          "GCN (Kipf & Welling): D^-1/2 (A+I) D^-1/2 X W, as a WASM layer module",
	"model.sage":         "GraphSAGE (Hamilton et al.): X W_root + aggr_j(x_j) W_nbr; option aggr names an aggregator.* module or a .wasm file (default: the built-in mean)",
	"model.pna":          "PNA (Corso et al.): [x || DegreeScaler(Multi(mean, min, max, std))(x W_pre)] W; options aggrs, scalers, delta (mean log(d+1) of the training graph)",
	"model.gat":          "GAT (Velickovic et al.): multi-head attention; options heads, out_heads, attn_dropout, negative_slope",
	"model.gin":          "GIN (Xu et al.): MLP((1+eps) x + sum_j x_j); options eps, train_eps",
	"model.sage-lstm":    "GraphSAGE-LSTM (DGL's lstm aggregator): X W_root + LSTM(x_j in CSR order) W_nbr; option lstm_hidden",
	"costmodel.roofline": "roofline cost model: max(flops/peak, bytes/bandwidth) + launch overhead per op",

	"costmodel.hyscale": "HyScale-GNN performance model (IPDPS 2023 §V, Eq. 5-13): stage times, iteration time and MTEPS of hybrid CPU + device training",

	"costmodel.hongtu":       "HongTu cost model (SIGMOD 2023): Eq. 4's cost of deduplicated communication and §4.2's cache-or-recompute choice per layer; used by train.mode = \"chunked\"",
	"costmodel.betty-memory": "Betty memory estimate (ASPLOS 2023 §4.4): peak device bytes of one micro-batch training step from its sizes; picks train.micro_batches = \"auto\"",
}

// aggrDocs describe the shipped aggregators (PyG's torch_geometric.nn.aggr
// names in parentheses).
var aggrDocs = map[string]string{
	"sum":                 "sum of the neighbours' rows (SumAggregation)",
	"mean":                "mean of the neighbours' rows (MeanAggregation)",
	"max":                 "columnwise max (MaxAggregation)",
	"min":                 "columnwise min (MinAggregation)",
	"mul":                 "columnwise product (MulAggregation)",
	"var":                 "columnwise variance (VarAggregation)",
	"std":                 "columnwise standard deviation (StdAggregation)",
	"softmax":             "softmax-weighted sum with learnable inverse temperature; options t, learn (SoftmaxAggregation)",
	"powermean":           "power mean with learnable p; options p, learn (PowerMeanAggregation)",
	"median":              "lower median (MedianAggregation)",
	"quantile":            "q-quantile, lower element; option q (QuantileAggregation)",
	"lstm":                "LSTM over the neighbours in CSR order; option lstm_hidden (LSTMAggregation)",
	"multi":               "several aggregators concatenated; option aggrs (MultiAggregation)",
	"degree-scaler":       "PNA's degree scalers over an aggregator; options scaled, scalers, delta, delta_lin (DegreeScalerAggregation)",
	"attentional":         "gated attention: softmax(gate(x_j))·nn(x_j) summed (AttentionalAggregation)",
	"mlp":                 "MLP over the first max_num neighbours, zero-padded; option max_num (MLPAggregation)",
	"deepsets":            "global_nn(Σ local_nn(x_j)) (DeepSetsAggregation)",
	"variance-preserving": "Σ x_j / sqrt(deg) (VariancePreservingAggregation)",
	"gru":                 "GRU over the first max_num neighbours in CSR order, zero-padded; options max_num, gru_hidden (GRUAggregation)",
	"lcm":                 "learnable commutative monoid: a GRU cell over a binary tree of the first max_num neighbours, zero-padded; options max_num, lcm_project (LCMAggregation)",
}

// Aggregator is a shipped aggregator module (aggregator.<name>).
type Aggregator struct{ name string }

// StrataModule implements registry.Module.
func (a *Aggregator) StrataModule() registry.ModuleInfo {
	id := "aggregator." + a.name
	return registry.ModuleInfo{ID: id, Doc: aggrDocs[a.name], New: func() registry.Module { return &Aggregator{name: a.name} }}
}

// Wasm returns the embedded module.
func (a *Aggregator) Wasm() ([]byte, error) { return models.Aggregator(a.name) }

// Layer is a shipped layer module (model.<name>).
type Layer struct{ name string }

// StrataModule implements registry.Module.
func (l *Layer) StrataModule() registry.ModuleInfo {
	id := "model." + l.name
	return registry.ModuleInfo{ID: id, Doc: docs[id], New: func() registry.Module { return &Layer{name: l.name} }}
}

// Wasm returns the embedded module.
func (l *Layer) Wasm() ([]byte, error) { return models.Layer(l.name) }

// CostModel is a shipped cost model (costmodel.<name>).
type CostModel struct{ name string }

// StrataModule implements registry.Module.
func (c *CostModel) StrataModule() registry.ModuleInfo {
	id := "costmodel." + c.name
	return registry.ModuleInfo{ID: id, Doc: docs[id], New: func() registry.Module { return &CostModel{name: c.name} }}
}

// Wasm returns the embedded module.
func (c *CostModel) Wasm() ([]byte, error) { return models.CostModel(c.name) }

// Interface guards.
var (
	_ modhost.Source = (*Layer)(nil)
	_ modhost.Source = (*CostModel)(nil)
	_ modhost.Source = (*Aggregator)(nil)
)

func init() {
	for _, n := range models.LayerNames() {
		registry.Register(&Layer{name: n})
	}
	for _, n := range models.CostModelNames() {
		registry.Register(&CostModel{name: n})
	}
	for _, n := range models.AggregatorNames() {
		registry.Register(&Aggregator{name: n})
	}
}
