package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"

	"strata/core/registry"
	"strata/core/train"
)

// Class says whether `strata experiment --check` compares a result
// column with the committed results, and why not when it does not.
// Columns are the leaves of a run's result JSON by dotted path, as
// metrics name them ("test_acc", "peak_tier_bytes.device0",
// "traffic.host->device0.bytes").
type Class struct {
	Checked bool
	Why     string // why a column is not checked ("" when checked)
}

// The reasons a column is not checked.
const (
	whyWallClock = train.WhyWallClock
	whyRSS       = "process memory: depends on the Go heap, the allocator and what the process held before"
	whyMachine   = train.WhyMachine
	whyIdentity  = "identifies the run (resolved config hash, release); the check matches runs by axis values and seed"
)

// classRule classes the columns whose dotted path matches pattern
// (path.Match over the path with dots as slashes: "*" stands for one part
// or part of one, "traffic.*.bytes", "hybrid.*_pred").
type classRule struct {
	pattern string
	class   Class
}

var checked = Class{Checked: true}

func notChecked(why string) Class { return Class{Why: why} }

// ClassOf returns the class of a result column of the kind: the first
// rule of the kind that matches it. A column that no rule matches is
// checked (a new field is compared until someone declares otherwise;
// TestEveryResultFieldClassed keeps the top-level fields declared).
func (k *Kind) ClassOf(column string) Class {
	slashed := strings.ReplaceAll(column, ".", "/")
	for _, r := range k.classes {
		if ok, _ := path.Match(strings.ReplaceAll(r.pattern, ".", "/"), slashed); ok {
			return r.class
		}
	}
	if k.figures {
		return figureClass(column)
	}
	return checked
}

// figureClass classes a column of a strategy's figures ("hybrid.cpu_share")
// by the rules its figures declare (train.CheckRuler); checked otherwise.
func figureClass(column string) Class {
	name, rest, ok := strings.Cut(column, ".")
	if !ok {
		return checked
	}
	mod, err := registry.New[train.FigureDeclarer]("strategy." + name)
	if err != nil {
		return checked
	}
	ruler, ok := mod.Figures().(train.CheckRuler)
	if !ok {
		return checked
	}
	slashed := strings.ReplaceAll(rest, ".", "/")
	for _, r := range ruler.CheckRules() {
		if ok, _ := path.Match(strings.ReplaceAll(r.Pattern, ".", "/"), slashed); ok {
			if r.Why == "" {
				return checked
			}
			return notChecked(r.Why)
		}
	}
	return checked
}

// declaredFigures returns the zero figures of every registered strategy
// that declares some (train.FigureDeclarer), by strategy name: the result
// line holds them under that name.
func declaredFigures() map[string]any {
	out := map[string]any{}
	for _, m := range registry.Namespace("strategy") {
		if d, ok := m.New().(train.FigureDeclarer); ok {
			out[m.Name()] = d.Figures()
		}
	}
	return out
}

// trainClasses class the fields of strata train's result.
var trainClasses = []classRule{
	// Measured times and rates.
	{"epoch_time_median_s", notChecked(whyWallClock)},
	{"eval_time_median_s", notChecked(whyWallClock)},
	{"load_time_s", notChecked(whyWallClock)},
	{"sample_time_s", notChecked(whyWallClock)},
	{"extract_time_s", notChecked(whyWallClock)},
	{"stage_time_s", notChecked(whyWallClock)},
	{"train_time_s", notChecked(whyWallClock)},
	{"peak_rss_bytes", notChecked(whyRSS)},
	{"load_peak_rss_bytes", notChecked(whyRSS)},
	{"train_peak_rss_bytes", notChecked(whyRSS)},
	{"threads", notChecked(whyMachine)},
	{"device", notChecked(whyMachine)},
	{"link.edges_per_s", notChecked(whyWallClock)},
	{"config_sha256", notChecked(whyIdentity)},
	{"version", notChecked(whyIdentity)},
	// Everything else is checked: accuracies and losses of seeded runs,
	// bytes and device tier peaks, predicted times, traffic, hit ratios,
	// redundancies, what the run reports it did (mode, partitioner,
	// intermediates). Listed so that a new field of the result is a
	// decision (TestEveryResultFieldClassed).
	{"status", checked}, {"dataset", checked}, {"model", checked}, {"mode", checked}, {"backend", checked}, {"targets", checked},
	{"epochs", checked}, {"best_epoch", checked}, {"best_valid_acc", checked}, {"train_acc", checked},
	{"test_acc", checked}, {"final_loss", checked}, {"nodes", checked}, {"edges", checked},
	{"features", checked}, {"classes", checked}, {"params", checked}, {"program_bytes", checked},
	{"feature_dtype", checked}, {"feature_bytes", checked}, {"peak_tier_bytes.*", checked},
	{"train_peak_tier_bytes.*", checked}, {"eval_peak_tier_bytes.*", checked}, {"micro_batches", checked},
	{"micro_batches_auto", checked}, {"estimated_peak_bytes", checked}, {"partitioner", checked},
	{"redundancy", checked},
	{"traffic.*", checked}, {"transfer_time_s", checked}, {"traffic_by_purpose.*", checked},
	{"predicted_epoch_s", checked},
	{"predicted_compute_s.*", checked}, {"metrics.*", checked}, {"seed", checked}, {"link.*", checked},
}

// partitionClasses class the fields of strata partition's report.
var partitionClasses = []classRule{
	{"time_s", notChecked(whyWallClock)},
	{"dataset", checked}, {"partitioner", checked}, {"target", checked}, {"sampler", checked},
	{"k", checked}, {"nodes", checked}, {"edges", checked}, {"edge_cut", checked}, {"cut_fraction", checked},
	{"part_nodes.*", checked}, {"part_edges.*", checked}, {"empty_parts", checked}, {"node_balance", checked},
	{"edge_balance", checked}, {"part_inputs.*", checked}, {"inputs", checked}, {"replication_factor", checked},
	{"redundancy", checked}, {"layer_redundancy.*", checked}, {"input_redundancy", checked},
}

// hitRatioClasses class the fields of a hitratio run.
var hitRatioClasses = []classRule{
	{"sample_time_s", notChecked(whyWallClock)},
	{"rank_time_s", notChecked(whyWallClock)},
	{"gather_time_s", notChecked(whyWallClock)},
	{"config_sha256", notChecked(whyIdentity)},
	{"version", notChecked(whyIdentity)},
	{"dataset", checked}, {"policy", checked}, {"sampler", checked}, {"nodes", checked}, {"edges", checked},
	{"train_nodes", checked}, {"features", checked}, {"batches", checked}, {"reads", checked},
	{"cached_rows", checked}, {"hit_ratio", checked}, {"oracle_hit_ratio", checked},
	{"feature_bytes", checked}, {"index_bytes", checked}, {"seed", checked},
}

// Leaves maps every leaf of a result's JSON to its value by dotted path,
// as flatten names the numeric ones; numbers keep their JSON text, other
// leaves (strings, booleans, null) are their JSON text too, so that two
// results compare leaf by leaf.
func Leaves(result any) (map[string]json.RawMessage, error) {
	b, err := json.Marshal(result)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	var walk func(v any, p string) error
	walk = func(v any, p string) error {
		join := func(k string) string {
			if p == "" {
				return k
			}
			return p + "." + k
		}
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if err := walk(e, join(k)); err != nil {
					return err
				}
			}
		case []any:
			for i, e := range x {
				if err := walk(e, join(listKey(e, i))); err != nil {
					return err
				}
			}
		default:
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false) // "host->device0", as written
			if err := enc.Encode(x); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			out[p] = bytes.TrimSpace(buf.Bytes())
		}
		return nil
	}
	return out, walk(v, "")
}

// listKey names the i-th entry of a list: its "link" or "name" field for
// an object that has one, else its index (as flatten does).
func listKey(e any, i int) string {
	if m, ok := e.(map[string]any); ok {
		for _, f := range []string{"link", "name"} {
			if s, ok := m[f].(string); ok && s != "" {
				return s
			}
		}
	}
	return strconv.Itoa(i)
}

// SameLeaf reports whether two leaves are equal: numbers by value (so
// 1 and 1.0 match, and a float read back from JSON is the float written),
// anything else by its JSON text.
func SameLeaf(a, b json.RawMessage) bool {
	x, okA := leafNumber(a)
	y, okB := leafNumber(b)
	if okA && okB {
		return x == y
	}
	return bytes.Equal(a, b)
}

// leafNumber is the value of a leaf that is a JSON number (not a string
// that reads as one).
func leafNumber(raw json.RawMessage) (float64, bool) {
	var n json.Number
	if len(raw) == 0 || raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}
