package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"strata/core/config"
	"strata/core/partition"
	"strata/core/train"
	"strata/plugins/partreport"
)

// Kind is what each run of an experiment does with its config: train it
// (the default), partition its graph or its training batch, or measure
// its feature cache. Each kind does what one strata command does for one
// config, and its result's numeric fields are the metrics an experiment
// of that kind can collect.
type Kind struct {
	Name    string
	Command string // the strata command that does the same for one config
	Doc     string
	// Result is the type of a run's result, a struct: its numeric JSON
	// fields, and the entries of its maps and lists, are the metrics.
	Result reflect.Type
	// check tells, before anything runs, whether a generated config has
	// what the kind needs.
	check func(cfg *config.Config) error
	run   func(ctx context.Context, env *runEnv, cfg *config.Config) (any, error)
	// docs explains metrics (by name or "prefix.*") beyond the
	// doc tags of Result.
	docs map[string]string
	// classes say which result columns --check compares (ClassOf).
	classes []classRule
	// figures: the result also holds the figures of the strategy that
	// ran, under its name (train.FigureDeclarer), as metrics.
	figures bool
}

// runEnv is what a kind's run sees besides its config: the experiment,
// the options, and state shared by the runs of one invocation.
type runEnv struct {
	exp     *Experiment
	opts    Options
	memo    *memo
	version string // the strata build, for results that record it
	rev     Revision
	keyer   *runKeyer
	keys    map[string]string // the code key of each run, by run ID
	inputs  []string          // the files the runs read (Plan.inputs): never written
}

// Kinds are the experiment kinds, "train" first (the default).
var Kinds = []*Kind{
	{
		Name: "train", Command: "strata train",
		Doc:     "train the config's model; the result is the JSON line of strata train",
		Result:  reflect.TypeFor[train.Result](),
		figures: true,
		run: func(ctx context.Context, env *runEnv, cfg *config.Config) (any, error) {
			if env.opts.Train == nil {
				return nil, errors.New("runner: Options.Train is not set")
			}
			res, err := env.opts.Train(ctx, cfg)
			if res == nil && err == nil {
				err = errors.New("training returned no result")
			}
			return res, err
		},
		docs:    trainDocs,
		classes: trainClasses,
	},
	{
		Name: "partition", Command: "strata partition -k K",
		Doc:    "partition the config's (symmetrised) graph into K = micro_batches parts (of train.mode's section; train.micro_batches is read too) with its [partition] plugin and measure the parts",
		Result: reflect.TypeFor[partreport.PartitionReport](),
		check:  needPartition,
		run: func(ctx context.Context, env *runEnv, cfg *config.Config) (any, error) {
			return partreport.Partition(ctx, cfg, partCount(cfg), false, nil)
		},
		docs:    partitionDocs,
		classes: partitionClasses,
	},
	{
		Name: "partition-batch", Command: "strata partition -k K --batch",
		Doc:    "split the config's training batch into K = micro_batches micro-batches with its [partition] plugin (blocks from its [sampler], or full neighbourhoods) and measure them, Betty's redundancy included",
		Result: reflect.TypeFor[BatchPartition](),
		check:  needPartition,
		run: func(ctx context.Context, env *runEnv, cfg *config.Config) (any, error) {
			rep, err := partreport.Partition(ctx, cfg, partCount(cfg), true, nil)
			if err != nil {
				return nil, err
			}
			out := &BatchPartition{PartitionReport: rep}
			if len(rep.LayerRedundancy) > 0 {
				out.InputRedundancy = rep.LayerRedundancy[0]
			}
			return out, nil
		},
		docs:    partitionDocs,
		classes: partitionClasses,
	},
	{
		Name: "hitratio", Command: "strata hitratio",
		Doc:     "sample one epoch of mini-batches with the config's [sampler], cache the top cache.capacity of the nodes ranked by its [cache] policy, and measure the share of feature reads the cache serves and the host-to-device feature bytes on one simulated device",
		Result:  reflect.TypeFor[HitRatio](),
		check:   needCache,
		run:     runHitRatio,
		classes: hitRatioClasses,
	},
}

// BatchPartition is the result of a partition-batch run: strata partition
// --batch's report with the input redundancy on its own.
type BatchPartition struct {
	*partreport.PartitionReport
	// InputRedundancy is layer_redundancy[0]: the input rows the
	// micro-batches load in total over those of the whole batch (Betty's
	// redundancy, Fig. 16).
	InputRedundancy float64 `json:"input_redundancy" doc:"input rows the micro-batches load in total over those of the whole batch (Betty's redundancy; 1 = none loaded twice)"`
}

// KindNames lists the kinds.
func KindNames() []string {
	out := make([]string, len(Kinds))
	for i, k := range Kinds {
		out[i] = k.Name
	}
	return out
}

func kindByName(name string) *Kind {
	for _, k := range Kinds {
		if k.Name == name {
			return k
		}
	}
	return nil
}

func needPartition(cfg *config.Config) error {
	if cfg.Partition.Name == "" {
		return cfg.KeyError("this kind partitions with the config's [partition] plugin, and the config names none; add [base.partition] name = ... or an axis on partition.name", "partition", "name")
	}
	if _, ok := partition.PartsOf(cfg.Strategy.Module); !ok {
		return cfg.KeyError(fmt.Sprintf("train.mode = %q splits no step into parts, and this kind makes K = micro_batches parts; set train.mode to a strategy with micro_batches (strata config explain)", cfg.Train.Mode), "train", "mode")
	}
	if k := partCount(cfg); k < 2 {
		return cfg.KeyError(fmt.Sprintf("%s.micro_batches = %d: this kind makes K = micro_batches parts; set it to 2 or more", cfg.Strategy.Name, k), cfg.Strategy.Name, "micro_batches")
	}
	return nil
}

// partCount is the number of parts the strategy of train.mode splits a
// step into (partition.PartCounter), or 1.
func partCount(cfg *config.Config) int {
	if k, ok := partition.PartsOf(cfg.Strategy.Module); ok {
		return k
	}
	return 1
}

func needCache(cfg *config.Config) error {
	var errs []error
	if cfg.Cache.Name == "" {
		errs = append(errs, cfg.KeyError("kind hitratio ranks the nodes with the config's [cache] policy, and the config names none; add [base.cache] name = ... or an axis on cache.name", "cache", "name"))
	}
	if cfg.Sampler.Name == "" {
		errs = append(errs, cfg.KeyError("kind hitratio samples mini-batches with the config's [sampler], and the config names none; add [base.sampler] name = \"uniform\" with fanouts", "sampler", "name"))
	}
	return errors.Join(errs...)
}

// metricSpec is one metric, or a family of them ("peak_tier_bytes.<key>"),
// that a kind's result holds.
type metricSpec struct {
	name   string // "test_acc", or the family's prefix "peak_tier_bytes"
	family string // "" for one metric; "<key>", "<index>", "<link>.bytes", ... for a family
	doc    string
}

func (m metricSpec) String() string {
	if m.family == "" {
		return m.name
	}
	return m.name + "." + m.family
}

// metricSpecs lists the metrics of a result type: its numeric fields
// (embedded structs flattened, as encoding/json does), and families for
// its maps and lists.
func metricSpecs(t reflect.Type) []metricSpec { return metricSpecsAt(t, "") }

// metricSpecsAt lists the metrics of a result type whose names start
// with prefix ("chunked." for a strategy's figures).
func metricSpecsAt(t reflect.Type, prefix string) []metricSpec {
	var out []metricSpec
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
				walk(ft, prefix)
				continue
			}
			if name == "" {
				name = f.Name
			}
			doc := f.Tag.Get("doc")
			switch {
			case numericKind(ft.Kind()):
				out = append(out, metricSpec{name: prefix + name, doc: doc})
			case ft.Kind() == reflect.Map && numericKind(ft.Elem().Kind()):
				out = append(out, metricSpec{name: prefix + name, family: "<key>", doc: doc})
			case ft.Kind() == reflect.Slice && numericKind(ft.Elem().Kind()):
				out = append(out, metricSpec{name: prefix + name, family: "<index>", doc: doc})
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				key := "<index>"
				et := ft.Elem()
				for j := 0; j < et.NumField(); j++ {
					if n, _, _ := strings.Cut(et.Field(j).Tag.Get("json"), ","); (n == "link" || n == "name") && et.Field(j).Type.Kind() == reflect.String {
						key = "<" + n + ">"
						break
					}
				}
				for j := 0; j < et.NumField(); j++ {
					n, _, _ := strings.Cut(et.Field(j).Tag.Get("json"), ",")
					if n != "" && n != "-" && numericKind(et.Field(j).Type.Kind()) {
						out = append(out, metricSpec{name: prefix + name, family: key + "." + n, doc: doc})
					}
				}
			case ft.Kind() == reflect.Struct:
				walk(ft, prefix+name+".")
			}
		}
	}
	walk(t, prefix)
	return out
}

// specs are the kind's metrics: its result's and, for a kind whose result
// holds them, every registered strategy's figures under its name (a
// struct's fields, or the keys of a map of numbers).
func (k *Kind) specs() []metricSpec {
	out := metricSpecs(k.Result)
	if !k.figures {
		return out
	}
	figures := declaredFigures()
	for _, name := range slices.Sorted(maps.Keys(figures)) {
		t := reflect.TypeOf(figures[name])
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case t.Kind() == reflect.Struct:
			out = append(out, metricSpecsAt(t, name+".")...)
		case t.Kind() == reflect.Map && numericKind(t.Elem().Kind()):
			out = append(out, metricSpec{name: name, family: "<key>", doc: "figures of strategy." + name})
		}
	}
	return out
}

func numericKind(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Uint64 || k == reflect.Float32 || k == reflect.Float64
}

// Metrics lists the metric names of the kind: single metrics, then
// families as "name.<key>".
func (k *Kind) Metrics() []string {
	var one, fam []string
	for _, s := range k.specs() {
		if s.family == "" {
			one = append(one, s.name)
		} else {
			fam = append(fam, s.String())
		}
	}
	return append(one, fam...)
}

// validMetric reports whether name is a metric of the kind: one of its
// single metrics, or a member of a family ("peak_tier_bytes.device0",
// whose key the results tell).
func (k *Kind) validMetric(name string) bool {
	for _, s := range k.specs() {
		if s.family == "" && s.name == name {
			return true
		}
		if s.family != "" {
			rest, ok := strings.CutPrefix(name, s.name+".")
			if !ok || rest == "" {
				continue
			}
			// "<link>.bytes": the key is free, the field after it fixed.
			if _, field, ok := strings.Cut(s.family, "."); ok {
				if strings.HasSuffix(rest, "."+field) && len(rest) > len(field)+1 {
					return true
				}
				continue
			}
			if s.family == "<index>" {
				if _, err := strconv.Atoi(rest); err != nil {
					continue
				}
			}
			return true
		}
	}
	return false
}

// metricDoc explains a metric of the kind ("" when nothing is known).
func (k *Kind) metricDoc(name string) string {
	if d, ok := k.docs[name]; ok {
		return d
	}
	for _, s := range k.specs() {
		if s.family == "" && s.name == name && s.doc != "" {
			return s.doc
		}
		if s.family != "" && strings.HasPrefix(name, s.name+".") {
			if d, ok := k.docs[s.name+".*"]; ok {
				return d
			}
			return s.doc
		}
	}
	return ""
}

// flatten maps every numeric leaf of a result's JSON to its value, by
// dotted path (Leaves): "test_acc", "peak_tier_bytes.device0",
// "layer_redundancy.0", and for lists of objects that have a "link" or
// "name" field, that field's value ("traffic.host->device0.bytes").
func flatten(result any) (map[string]float64, error) {
	leaves, err := Leaves(result)
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(leaves))
	for k, raw := range leaves {
		if f, ok := leafNumber(raw); ok && k != "" {
			out[k] = f
		}
	}
	return out, nil
}

// resultFieldsJSON returns the top-level fields of a result's JSON in
// their order.
func resultFieldsJSON(result any) ([]string, map[string]json.RawMessage, error) {
	b, err := json.Marshal(result)
	if err != nil {
		return nil, nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, fmt.Errorf("result is not a JSON object")
	}
	var keys []string
	vals := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, err
		}
		if _, dup := vals[k]; !dup {
			keys = append(keys, k)
		}
		vals[k] = raw
	}
	return keys, vals, nil
}

// trainDocs explain the metrics of strata train's result.
var trainDocs = map[string]string{
	"test_acc":                "test accuracy at the epoch of best validation accuracy",
	"best_valid_acc":          "best validation accuracy over the evaluated epochs",
	"train_acc":               "training accuracy at the epoch of best validation accuracy",
	"final_loss":              "training loss of the last epoch",
	"metrics.*":               "a metric of train.metrics on the validation or test nodes at the best epoch (valid_macro_f1, test_roc_auc, ...)",
	"epoch_time_median_s":     "median wall time of one training epoch, seconds",
	"eval_time_median_s":      "median wall time of one evaluation, seconds",
	"load_time_s":             "time to load and prepare the data and the model, seconds",
	"params":                  "number of model parameters",
	"peak_rss_bytes":          "peak resident memory of the process",
	"load_peak_rss_bytes":     "peak resident memory before the first epoch (data loaded, model bound)",
	"train_peak_rss_bytes":    "peak resident memory when the first evaluation starts (loading and the training epochs before it)",
	"program_bytes":           "bytes the engine's program holds for a training step by its own accounting (full-graph)",
	"peak_tier_bytes.*":       "peak bytes allocated on a memory tier (host, device0, ...)",
	"train_peak_tier_bytes.*": "peak bytes on a memory tier during the training steps only",
	"eval_peak_tier_bytes.*":  "peak bytes on a memory tier during the evaluations only",
	"predicted_compute_s.*":   "kernel time the cost model predicts for one simulated device in the last epoch, seconds",
	"stage_time_s":            "wall time of the transfer stage (feature-store gathers, uploads) in the last epoch, seconds",
	"redundancy":              "input rows of the micro-batches summed over a step over those of the whole batch (Betty)",
	"traffic_by_purpose.*":    "bytes moved over the simulated links for one purpose, whole run (set-up, every epoch and evaluation)",
	"traffic.*":               "bytes (or predicted seconds) on one simulated link, whole run",
	"transfer_time_s":         "time the link bandwidths predict for all transfers, seconds",
	"micro_batches":           "micro-batches per step",
	"estimated_peak_bytes":    "Betty's memory estimate (costmodel.betty-memory) of the largest micro-batch's training step on the simulated device; micro-batched runs only",
	"nodes":                   "nodes of the graph",
	"edges":                   "stored edges of the graph",
	"predicted_epoch_s":       "epoch time the cost model and link bandwidths predict for the simulated machine, seconds",
	"sample_time_s":           "sampling time of the last epoch, seconds",
	"extract_time_s":          "feature extraction time of the last epoch, seconds",
	"train_time_s":            "training compute time of the last epoch, seconds",
}

// partitionDocs explain the metrics of strata partition's report.
var partitionDocs = map[string]string{
	"edge_cut":           "stored edges whose endpoints lie in different parts",
	"cut_fraction":       "edge_cut over the stored edges",
	"node_balance":       "largest part over the mean part, in nodes (1 = perfect)",
	"edge_balance":       "largest part over the mean part, in in-edges (1 = perfect)",
	"replication_factor": "HongTu's α: neighbour rows the parts load in total over the nodes",
	"redundancy":         "input nodes the parts load in total over those of the whole graph or block",
	"time_s":             "partitioning time, seconds",
	"empty_parts":        "parts without nodes",
	"inputs":             "distinct input (column) nodes of the whole graph or block",
	"layer_redundancy.*": "redundancy of one layer's blocks, input layer first",
	"k":                  "parts (train.micro_batches)",
	"part_nodes.*":       "nodes of one part",
	"part_edges.*":       "in-edges of one part",
}

// describeKinds lists the kinds for error messages.
func describeKinds() string {
	return strings.Join(slices.Collect(func(yield func(string) bool) {
		for _, k := range Kinds {
			if !yield(strconv.Quote(k.Name) + " (" + k.Command + ")") {
				return
			}
		}
	}), ", ")
}
