// Package runner runs experiments: a base config, axes of config keys to
// sweep (cartesian products or zipped lists), seeds to repeat each point
// with, the result metrics to collect and derived columns, described by one
// strict TOML file (see docs/experiments.md). It validates every generated
// config before the first run, runs them in sequence or in parallel, stores
// each result by content hash so that an interrupted experiment resumes,
// and writes runs.jsonl, results.csv, summary.csv, summary.md, SVG plots
// and provenance.json.
package runner

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"strata/core/config"
	"strata/plugins/registry"
)

// Experiment is a parsed experiment file.
type Experiment struct {
	Name        string
	Description string
	File        string // the experiment file as given
	Text        []byte // its contents
	SHA256      string // hex SHA-256 of Text

	// BasePath is the base config file (resolved against File's
	// directory); "" when the base is the inline [base] table.
	BasePath string
	BaseLine int

	Axes    []Axis
	Seeds   []int64 // nil: one run per point, with the base config's seed
	Metrics []string
	Derived []Derived
	Plots   []Plot // [[plot]]; none: one default plot per metric

	// Kind is what each run does (train by default); KindLine is the line
	// of the kind key (0 when absent).
	Kind     *Kind
	KindLine int
	// HitRatio holds the [hitratio] options of kind hitratio.
	HitRatio HitRatioOptions

	seedsLine   int
	metricsLine int
}

// Axis is one [[axis]]: a config key and the values it takes.
type Axis struct {
	Key    string   // dotted config key, "model.hidden"
	Path   []string // Key split
	Values []any    // TOML values (int64, float64, string, bool, []any, map[string]any)
	Zip    string   // zip group ("" = its own dimension)
	// Labels name the values in tables, plots and run labels (nil: the
	// values themselves); one per value.
	Labels []string
	Line   int // line of the [[axis]] header
	// KeyLine and ValuesLine are the lines of key and values (Line when
	// unknown): where the errors a generated config gets from the axis's
	// key or from one of its values point.
	KeyLine, ValuesLine int
}

// Derived is one [[derived]] column, computed per summary row against the
// baseline row that has the same values on the other axes.
type Derived struct {
	Name     string
	Metric   string
	Kind     string         // ratio, speedup, reduction, difference
	Baseline map[string]any // axis key -> value
	Line     int
}

// Label is how the i-th value of the axis is shown.
func (a *Axis) Label(i int) string {
	if i < len(a.Labels) {
		return a.Labels[i]
	}
	return display(a.Values[i])
}

// index returns the position of v among the axis's values, or among its
// labels when v is a string naming one; -1 when it is neither.
func (a *Axis) index(v any) int {
	t := config.TOMLValue(v)
	for i, x := range a.Values {
		if config.TOMLValue(x) == t {
			return i
		}
	}
	if s, ok := v.(string); ok {
		for i, l := range a.Labels {
			if l == s {
				return i
			}
		}
	}
	return -1
}

// DerivedKinds are the allowed [[derived]] kinds.
var DerivedKinds = []string{"ratio", "speedup", "reduction", "difference"}

// errorList collects experiment errors.
type errorList struct {
	file string
	errs []*config.Error
}

func (l *errorList) add(line int, key, format string, args ...any) {
	l.errs = append(l.errs, &config.Error{File: l.file, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
}

// err returns the errors sorted by line and joined, or nil.
func (l *errorList) err() error {
	if len(l.errs) == 0 {
		return nil
	}
	slices.SortStableFunc(l.errs, func(a, b *config.Error) int { return cmp.Compare(a.Line, b.Line) })
	list := make([]error, len(l.errs))
	for i, e := range l.errs {
		list[i] = e
	}
	if len(list) == 1 {
		return list[0]
	}
	return errors.Join(list...)
}

// Load reads and parses an experiment file.
func Load(path string) (*Experiment, error) {
	data, err := config.ReadFile(path, "experiment")
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

var topKeys = []string{"name", "description", "kind", "base", "axis", "seeds", "metrics", "derived", "plot", "hitratio"}
var axisKeys = []string{"key", "values", "zip", "labels"}
var derivedKeys = []string{"name", "metric", "kind", "baseline"}

// Parse parses an experiment from memory; file names it in errors and
// relative paths (base) are relative to its directory. Every problem of the
// file is reported, one *config.Error per line, sorted by line. The
// generated configs are checked by Plan, not here.
func Parse(file string, data []byte) (*Experiment, error) {
	if err := config.CheckText(file, data); err != nil {
		return nil, err
	}
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		return nil, config.SyntaxError(file, err)
	}
	sum := sha256.Sum256(data)
	e := &Experiment{File: file, Text: data, SHA256: hex.EncodeToString(sum[:])}
	lines := config.KeyLines(string(data))
	tables := newTableLines(string(data))
	el := &errorList{file: file}
	line := func(k string) int { return lines[k] }

	for _, k := range sortedKeys(raw, lines, "") {
		if !slices.Contains(topKeys, k) {
			unknownKey(el, line(k), k, "the top level", topKeys)
		}
	}
	str := func(m map[string]any, key, full string, ln int) string {
		v, ok := m[key]
		if !ok {
			return ""
		}
		s, ok := v.(string)
		if !ok {
			el.add(ln, full, "%s: expected string, got %s", full, config.DescribeValue(v))
		}
		return s
	}
	e.Name = str(raw, "name", "name", line("name"))
	if e.Name == "" {
		if _, set := raw["name"]; set {
			el.add(line("name"), "name", "name must not be empty")
		}
		e.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	} else if !validName.MatchString(e.Name) {
		el.add(line("name"), "name", "name = %q: use letters, digits, '-', '_' and '.' only (it names the results directory)", e.Name)
	}
	e.Description = str(raw, "description", "description", line("description"))

	// kind
	e.KindLine = line("kind")
	e.Kind = Kinds[0]
	if _, set := raw["kind"]; set {
		k := str(raw, "kind", "kind", e.KindLine)
		if e.Kind = kindByName(k); e.Kind == nil {
			msg := fmt.Sprintf("kind = %q: the kinds are %s", k, describeKinds())
			if sug := registry.Suggest(k, KindNames()); sug != "" {
				msg = fmt.Sprintf("kind = %q (did you mean %q?); the kinds are %s", k, sug, describeKinds())
			}
			el.add(e.KindLine, "kind", "%s", msg)
			e.Kind = Kinds[0]
		}
	}
	switch h := raw["hitratio"].(type) {
	case nil:
	case map[string]any:
		hl := tables.plain("hitratio", line("hitratio"))
		if e.Kind.Name != "hitratio" {
			el.add(hl, "hitratio", "the [hitratio] table holds options of kind = \"hitratio\", and this experiment's kind is %q", e.Kind.Name)
		}
		for _, k := range sortedKeys(h, nil, "") {
			switch k {
			case "synth_train":
				kl := tables.plainKey("hitratio", k, hl)
				f, ok := h[k].(float64)
				if !ok || !(f > 0 && f <= 1) {
					el.add(kl, "hitratio.synth_train", "hitratio.synth_train: expected a fraction in (0, 1], got %s", config.DescribeValue(h[k]))
				}
				e.HitRatio.SynthTrain = f
			default:
				unknownKey(el, tables.plainKey("hitratio", k, hl), "hitratio."+k, "[hitratio]", []string{"synth_train"})
			}
		}
	default:
		el.add(line("hitratio"), "hitratio", "hitratio: expected a table, got %s", config.DescribeValue(h))
	}

	// base
	e.BaseLine = line("base")
	switch b := raw["base"].(type) {
	case nil:
		el.add(0, "base", `base is required: a config path (base = "../configs/gcn-cora.toml") or an inline [base] table holding a config`)
	case string:
		if b == "" {
			el.add(e.BaseLine, "base", "base must not be empty")
		} else {
			p := b
			if !filepath.IsAbs(p) {
				p = filepath.Join(filepath.Dir(file), p)
			}
			if st, err := os.Stat(p); err != nil {
				el.add(e.BaseLine, "base", "base = %q: cannot read %s: %v", b, p, errors.Unwrap(err))
			} else if st.IsDir() {
				el.add(e.BaseLine, "base", "base = %q: %s is a directory, expected a config file", b, p)
			}
			e.BasePath = p
		}
	case map[string]any:
		// decoded by config.ParseTable in Plan
	default:
		el.add(e.BaseLine, "base", "base: expected a config path (string) or a [base] table, got %s", config.DescribeValue(b))
	}

	// axes
	for i, m := range tableArray(el, raw, "axis", line("axis")) {
		ln := tables.line("axis", i, "", line("axis"))
		for _, k := range sortedKeys(m, nil, "") {
			if !slices.Contains(axisKeys, k) {
				unknownKey(el, tables.line("axis", i, k, ln), "axis."+k, "[[axis]]", axisKeys)
			}
		}
		a := Axis{Line: ln, KeyLine: tables.line("axis", i, "key", ln), ValuesLine: tables.line("axis", i, "values", ln)}
		a.Key = str(m, "key", "axis.key", tables.line("axis", i, "key", ln))
		a.Zip = str(m, "zip", "axis.zip", tables.line("axis", i, "zip", ln))
		if _, ok := m["key"]; !ok {
			el.add(ln, "axis.key", `[[axis]] #%d: key is required, e.g. key = "model.hidden"`, i+1)
		} else if slices.Contains(configKeys(), a.Key) {
			// A whole section: its values must be tables (checked below).
			a.Path = []string{a.Key}
		} else if p, err := splitKey(a.Key); err != nil {
			el.add(tables.line("axis", i, "key", ln), "axis.key", "axis key %q: %v", a.Key, err)
		} else {
			a.Path = p
			if known := configKeys(); !slices.Contains(known, p[0]) {
				msg := fmt.Sprintf("axis key %q: unknown config section %q; the sections are %s", a.Key, p[0], quoteList(known))
				if sug := registry.Suggest(p[0], known); sug != "" {
					msg = fmt.Sprintf("axis key %q: unknown config section %q (did you mean %q?)", a.Key, p[0], sug)
				}
				el.add(tables.line("axis", i, "key", ln), "axis.key", "%s", msg)
			}
		}
		vln := tables.line("axis", i, "values", ln)
		switch v := m["values"].(type) {
		case nil:
			el.add(ln, "axis.values", "axis %q: values is required, e.g. values = [16, 64]", a.Key)
		case []any:
			if len(v) == 0 {
				el.add(vln, "axis.values", "axis %q: values must not be empty", a.Key)
			}
			// A zipped axis may repeat a value: its group's tuples differ
			// (runs that resolve to the same config are an error of Plan).
			seen := map[string]bool{}
			for _, x := range v {
				t := config.TOMLValue(x)
				if seen[t] && a.Zip == "" {
					el.add(vln, "axis.values", "axis %q: value %s is listed twice", a.Key, t)
					break
				}
				seen[t] = true
			}
			a.Values = v
			if len(a.Path) == 1 {
				for _, x := range v {
					if _, ok := x.(map[string]any); !ok {
						el.add(vln, "axis.values", "axis %q names a whole config section: each value must be a table of its keys, e.g. { name = \"metis\", seed = 1 }, got %s", a.Key, config.DescribeValue(x))
						break
					}
				}
			}
		default:
			el.add(vln, "axis.values", "axis %q: values: expected an array, got %s", a.Key, config.DescribeValue(v))
		}
		if lv, ok := m["labels"]; ok {
			lln := tables.line("axis", i, "labels", ln)
			arr, isArr := lv.([]any)
			if !isArr {
				el.add(lln, "axis.labels", "axis %q: labels: expected an array of strings, got %s", a.Key, config.DescribeValue(lv))
			}
			seen := map[string]bool{}
			for _, x := range arr {
				s, ok := x.(string)
				if !ok || s == "" {
					el.add(lln, "axis.labels", "axis %q: labels: expected non-empty strings, got %s", a.Key, config.DescribeValue(x))
					continue
				}
				if seen[s] && a.Zip == "" {
					el.add(lln, "axis.labels", "axis %q: label %q is listed twice", a.Key, s)
				}
				seen[s] = true
				a.Labels = append(a.Labels, s)
			}
			if isArr && len(arr) != len(a.Values) && a.Values != nil {
				el.add(lln, "axis.labels", "axis %q: %d labels for %d values; give one label per value", a.Key, len(arr), len(a.Values))
				a.Labels = nil
			} else if len(a.Labels) != len(arr) {
				a.Labels = nil
			}
		}
		for _, prev := range e.Axes {
			if prev.Key == a.Key && a.Key != "" {
				el.add(ln, "axis.key", "axis %q is already defined on line %d", a.Key, prev.Line)
			}
		}
		e.Axes = append(e.Axes, a)
	}
	// zip groups: equal lengths
	for i, a := range e.Axes {
		if a.Zip == "" {
			continue
		}
		for _, b := range e.Axes[:i] {
			if b.Zip == a.Zip {
				if len(b.Values) != len(a.Values) {
					el.add(a.Line, "axis.zip", "zip group %q: axis %q has %d values but axis %q (line %d) has %d; zipped axes advance together and need the same number of values",
						a.Zip, a.Key, len(a.Values), b.Key, b.Line, len(b.Values))
				}
				break
			}
		}
	}

	// seeds
	e.seedsLine = line("seeds")
	if v, ok := raw["seeds"]; ok {
		arr, isArr := v.([]any)
		if !isArr || len(arr) == 0 {
			el.add(e.seedsLine, "seeds", "seeds: expected a non-empty array of integers, got %s", config.DescribeValue(v))
		}
		seen := map[int64]bool{}
		for _, x := range arr {
			s, ok := x.(int64)
			if !ok {
				el.add(e.seedsLine, "seeds", "seeds: expected integers, got %s", config.DescribeValue(x))
				continue
			}
			if seen[s] {
				el.add(e.seedsLine, "seeds", "seeds: %d is listed twice", s)
			}
			seen[s] = true
			e.Seeds = append(e.Seeds, s)
		}
		for _, a := range e.Axes {
			if a.Key == "train.seed" {
				el.add(a.Line, "axis.key", "axis %q: seeds already sets train.seed; remove the axis or the seeds list", a.Key)
			}
		}
	}

	// metrics
	mln := line("metrics")
	e.metricsLine = mln
	valid := e.Kind.Metrics()
	switch v := raw["metrics"].(type) {
	case nil:
		el.add(0, "metrics", "metrics is required: the result fields to collect, e.g. metrics = [\"test_acc\", \"epoch_time_median_s\"]; valid: %s", quoteList(valid))
	case []any:
		if len(v) == 0 {
			el.add(mln, "metrics", "metrics must not be empty; valid: %s", quoteList(valid))
		}
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				el.add(mln, "metrics", "metrics: expected strings, got %s", config.DescribeValue(x))
				continue
			}
			if !e.Kind.validMetric(s) {
				el.add(mln, "metrics", "%s", e.unknownMetric(s))
				continue
			}
			if slices.Contains(e.Metrics, s) {
				el.add(mln, "metrics", "metric %q is listed twice", s)
				continue
			}
			e.Metrics = append(e.Metrics, s)
		}
	default:
		el.add(mln, "metrics", "metrics: expected an array of strings, got %s", config.DescribeValue(v))
	}

	// derived
	for i, m := range tableArray(el, raw, "derived", line("derived")) {
		ln := tables.line("derived", i, "", line("derived"))
		for _, k := range sortedKeys(m, nil, "") {
			if !slices.Contains(derivedKeys, k) {
				unknownKey(el, tables.line("derived", i, k, ln), "derived."+k, "[[derived]]", derivedKeys)
			}
		}
		d := Derived{Line: ln}
		d.Name = str(m, "name", "derived.name", tables.line("derived", i, "name", ln))
		d.Metric = str(m, "metric", "derived.metric", tables.line("derived", i, "metric", ln))
		d.Kind = str(m, "kind", "derived.kind", tables.line("derived", i, "kind", ln))
		if d.Name == "" {
			el.add(ln, "derived.name", "[[derived]] #%d: name is required", i+1)
		} else if slices.Contains(e.Metrics, d.Name) || slices.ContainsFunc(e.Derived, func(o Derived) bool { return o.Name == d.Name }) {
			el.add(tables.line("derived", i, "name", ln), "derived.name", "derived column %q: the name is already used", d.Name)
		}
		if !e.Kind.validMetric(d.Metric) {
			el.add(tables.line("derived", i, "metric", ln), "derived.metric", "derived column %q: %s", d.Name, e.unknownMetric(d.Metric))
		} else if !slices.Contains(e.Metrics, d.Metric) {
			el.add(tables.line("derived", i, "metric", ln), "derived.metric", "derived column %q: metric %q is not collected; add it to metrics", d.Name, d.Metric)
		}
		if !slices.Contains(DerivedKinds, d.Kind) {
			el.add(tables.line("derived", i, "kind", ln), "derived.kind", "derived column %q: kind = %q; allowed: %s", d.Name, d.Kind, quoteList(DerivedKinds))
		}
		bln := tables.line("derived", i, "baseline", ln)
		switch b := m["baseline"].(type) {
		case map[string]any:
			if len(b) == 0 {
				el.add(bln, "derived.baseline", "derived column %q: baseline must select at least one axis value", d.Name)
			}
			d.Baseline = b
			for _, k := range sortedKeys(b, nil, "") {
				ai := slices.IndexFunc(e.Axes, func(a Axis) bool { return a.Key == k })
				if ai < 0 {
					el.add(bln, "derived.baseline", "derived column %q: baseline key %q is not an axis; the axes are %s", d.Name, k, quoteList(axisNames(e.Axes)))
					continue
				}
				if e.Axes[ai].index(b[k]) < 0 {
					el.add(bln, "derived.baseline", "derived column %q: baseline %s = %s is not one of the axis values %s%s", d.Name, k, config.TOMLValue(b[k]), config.TOMLValue(e.Axes[ai].Values), labelsNote(e.Axes[ai]))
				}
			}
		case nil:
			el.add(ln, "derived.baseline", `derived column %q: baseline is required, e.g. baseline = { "model.name" = "gcn" }`, d.Name)
		default:
			el.add(bln, "derived.baseline", "derived column %q: baseline: expected a table, got %s", d.Name, config.DescribeValue(b))
		}
		e.Derived = append(e.Derived, d)
	}

	// plots
	for i, m := range tableArray(el, raw, "plot", line("plot")) {
		e.Plots = append(e.Plots, e.parsePlot(el, tables, m, i, line("plot")))
	}
	e.checkPlotFiles(el)
	if err := el.err(); err != nil {
		return nil, err
	}
	return e, nil
}

var validName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// tableArray returns raw[key] as a list of tables.
func tableArray(el *errorList, raw map[string]any, key string, ln int) []map[string]any {
	switch v := raw[key].(type) {
	case nil:
		return nil
	case []map[string]any:
		return v
	case []any:
		out := make([]map[string]any, 0, len(v))
		for _, x := range v {
			m, ok := x.(map[string]any)
			if !ok {
				el.add(ln, key, "%s: expected an array of tables ([[%s]]), got %s", key, key, config.DescribeValue(x))
				continue
			}
			out = append(out, m)
		}
		return out
	default:
		el.add(ln, key, "%s: expected an array of tables ([[%s]]), got %s", key, key, config.DescribeValue(v))
		return nil
	}
}

func unknownKey(el *errorList, line int, key, where string, known []string) {
	last := key[strings.LastIndexByte(key, '.')+1:]
	if sug := registry.Suggest(last, known); sug != "" {
		el.add(line, key, "unknown key %q in %s (did you mean %q?)", last, where, sug)
		return
	}
	el.add(line, key, "unknown key %q in %s; the keys are %s", last, where, quoteList(known))
}

func (e *Experiment) unknownMetric(name string) string {
	valid := e.Kind.Metrics()
	msg := fmt.Sprintf("unknown metric %q", name)
	if sug := registry.Suggest(name, valid); sug != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", sug)
	}
	what := "the result JSON"
	if e.Kind.Name != "train" {
		what = fmt.Sprintf("the result of kind %q", e.Kind.Name)
	}
	return msg + "; valid metrics (numeric fields of " + what + "; <key> entries of its maps and lists): " + quoteList(valid)
}

// labelsNote lists an axis's labels for messages ("" without labels).
func labelsNote(a Axis) string {
	if len(a.Labels) == 0 {
		return ""
	}
	return " or labels " + quoteList(a.Labels)
}

// splitKey splits a dotted config key ("model.options.heads"), quoted
// parts allowed as in TOML.
func splitKey(k string) ([]string, error) {
	if strings.TrimSpace(k) == "" {
		return nil, errors.New("empty key")
	}
	var doc map[string]any
	if _, err := toml.Decode(k+" = 0", &doc); err != nil {
		return nil, errors.New(`malformed key: expected a dotted config key such as "model.hidden"`)
	}
	var path []string
	cur := doc
	for {
		if len(cur) != 1 {
			return nil, errors.New("malformed key")
		}
		for name, v := range cur {
			path = append(path, name)
			if m, ok := v.(map[string]any); ok {
				cur = m
			} else {
				cur = nil
			}
		}
		if cur == nil {
			break
		}
	}
	if len(path) < 2 {
		return nil, fmt.Errorf("expected section.key, e.g. \"model.hidden\" (or a section name, with tables as values)")
	}
	return path, nil
}

// configKeys returns the top-level config sections.
func configKeys() []string {
	t := reflect.TypeFor[config.Config]()
	var out []string
	for i := 0; i < t.NumField(); i++ {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ",")
		if tag != "" && tag != "-" {
			out = append(out, tag)
		}
	}
	return out
}

// MetricNames are the metrics of kind train: the numeric fields of the
// strata train result, by JSON name, then the families of its maps and
// lists ("peak_tier_bytes.<key>").
func MetricNames() []string { return Kinds[0].Metrics() }

func axisNames(axes []Axis) []string {
	out := make([]string, len(axes))
	for i, a := range axes {
		out[i] = a.Key
	}
	return out
}

func quoteList(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = strconv.Quote(x)
	}
	return strings.Join(q, ", ")
}

// sortedKeys returns m's keys by line (under prefix) then by name.
func sortedKeys(m map[string]any, lines map[string]int, prefix string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if lines != nil {
			if c := cmp.Compare(lines[prefix+a], lines[prefix+b]); c != 0 {
				return c
			}
		}
		return strings.Compare(a, b)
	})
	return keys
}

// display formats an axis value for people: strings without quotes, a
// table that names something as "name (key=value, ...)".
func display(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		name, ok := x["name"].(string)
		if !ok {
			break
		}
		var rest []string
		for _, k := range sortedKeys(x, nil, "") {
			if k != "name" {
				rest = append(rest, k+"="+display(x[k]))
			}
		}
		if len(rest) == 0 {
			return name
		}
		return name + " (" + strings.Join(rest, ", ") + ")"
	}
	return config.TOMLValue(v)
}

// tableLines finds the lines of the entries of arrays of tables ([[axis]])
// and of the keys inside each, which config.KeyLines records only once.
type tableLines struct {
	text    []string
	headers map[string][]int // array name -> 0-based header line indexes
}

var headerRE = regexp.MustCompile(`^\s*\[\[\s*([A-Za-z0-9_-]+)\s*\]\]`)
var anyHeaderRE = regexp.MustCompile(`^\s*\[`)

func newTableLines(text string) *tableLines {
	t := &tableLines{text: strings.Split(text, "\n"), headers: map[string][]int{}}
	for i, l := range t.text {
		if m := headerRE.FindStringSubmatch(l); m != nil {
			t.headers[m[1]] = append(t.headers[m[1]], i)
		}
	}
	return t
}

// plain returns the 1-based line of the header of the plain table [name]
// (fallback when it has none, an inline table).
func (t *tableLines) plain(name string, fallback int) int {
	re := regexp.MustCompile(`^\s*\[\s*` + regexp.QuoteMeta(name) + `\s*\]`)
	for i, l := range t.text {
		if re.MatchString(l) {
			return i + 1
		}
	}
	return fallback
}

// plainKey returns the line of key in the plain table [name] whose header
// is on line hdr (hdr when not found).
func (t *tableLines) plainKey(name, key string, hdr int) int {
	re := regexp.MustCompile(`^\s*("?)` + regexp.QuoteMeta(key) + `("?)\s*=`)
	for j := hdr; j < len(t.text) && hdr > 0; j++ {
		if anyHeaderRE.MatchString(t.text[j]) {
			break
		}
		if re.MatchString(t.text[j]) {
			return j + 1
		}
	}
	return hdr
}

// line returns the 1-based line of key in entry i of the array of tables
// name (of its header when key is "" or not found there; fallback when the
// entry has no header).
func (t *tableLines) line(name string, i int, key string, fallback int) int {
	hs := t.headers[name]
	if i >= len(hs) {
		return fallback
	}
	if key == "" {
		return hs[i] + 1
	}
	re := regexp.MustCompile(`^\s*("?)` + regexp.QuoteMeta(key) + `("?)\s*=`)
	for j := hs[i] + 1; j < len(t.text); j++ {
		if anyHeaderRE.MatchString(t.text[j]) {
			break
		}
		if re.MatchString(t.text[j]) {
			return j + 1
		}
	}
	return hs[i] + 1
}
