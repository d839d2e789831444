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
	"strata/core/train"
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

	seedsLine int
}

// Axis is one [[axis]]: a config key and the values it takes.
type Axis struct {
	Key    string   // dotted config key, "model.hidden"
	Path   []string // Key split
	Values []any    // TOML values (int64, float64, string, bool, []any, map[string]any)
	Zip    string   // zip group ("" = its own dimension)
	Line   int      // line of the [[axis]] header
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
	data, err := os.ReadFile(path)
	if err != nil {
		msg := err.Error()
		if pe, ok := err.(*os.PathError); ok {
			msg = pe.Err.Error()
		}
		return nil, &config.Error{File: path, Msg: "cannot read experiment: " + msg}
	}
	return Parse(path, data)
}

var topKeys = []string{"name", "description", "base", "axis", "seeds", "metrics", "derived"}
var axisKeys = []string{"key", "values", "zip"}
var derivedKeys = []string{"name", "metric", "kind", "baseline"}

// Parse parses an experiment from memory; file names it in errors and
// relative paths (base) are relative to its directory. Every problem of the
// file is reported, one *config.Error per line, sorted by line. The
// generated configs are checked by Plan, not here.
func Parse(file string, data []byte) (*Experiment, error) {
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
			seen := map[string]bool{}
			for _, x := range v {
				t := config.TOMLValue(x)
				if seen[t] {
					el.add(vln, "axis.values", "axis %q: value %s is listed twice", a.Key, t)
				}
				seen[t] = true
			}
			a.Values = v
		default:
			el.add(vln, "axis.values", "axis %q: values: expected an array, got %s", a.Key, config.DescribeValue(v))
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
	valid := MetricNames()
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
			if !slices.Contains(valid, s) {
				el.add(mln, "metrics", "%s", unknownMetric(s, valid))
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
		if !slices.Contains(valid, d.Metric) {
			el.add(tables.line("derived", i, "metric", ln), "derived.metric", "derived column %q: %s", d.Name, unknownMetric(d.Metric, valid))
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
				if !slices.ContainsFunc(e.Axes[ai].Values, func(v any) bool { return config.TOMLValue(v) == config.TOMLValue(b[k]) }) {
					el.add(bln, "derived.baseline", "derived column %q: baseline %s = %s is not one of the axis values %s", d.Name, k, config.TOMLValue(b[k]), config.TOMLValue(e.Axes[ai].Values))
				}
			}
		case nil:
			el.add(ln, "derived.baseline", `derived column %q: baseline is required, e.g. baseline = { "model.name" = "gcn" }`, d.Name)
		default:
			el.add(bln, "derived.baseline", "derived column %q: baseline: expected a table, got %s", d.Name, config.DescribeValue(b))
		}
		e.Derived = append(e.Derived, d)
	}
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

func unknownMetric(name string, valid []string) string {
	msg := fmt.Sprintf("unknown metric %q", name)
	if sug := registry.Suggest(name, valid); sug != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", sug)
	}
	return msg + "; valid metrics (numeric fields of the result JSON): " + quoteList(valid)
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
		return nil, fmt.Errorf("expected section.key, e.g. \"model.hidden\"")
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

// MetricNames are the numeric fields of train.Result, by JSON name: the
// valid metric names.
func MetricNames() []string {
	var out []string
	for _, f := range resultFields() {
		if f.numeric {
			out = append(out, f.name)
		}
	}
	return out
}

type resultField struct {
	name    string
	index   int
	numeric bool
}

func resultFields() []resultField {
	t := reflect.TypeFor[train.Result]()
	var out []resultField
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		k := t.Field(i).Type.Kind()
		out = append(out, resultField{name: name, index: i,
			numeric: k >= reflect.Int && k <= reflect.Uint64 || k == reflect.Float32 || k == reflect.Float64})
	}
	return out
}

// metricValue returns the metric of a result as a float.
func metricValue(r *train.Result, name string) (float64, bool) {
	if r == nil {
		return 0, false
	}
	v := reflect.ValueOf(r).Elem()
	for _, f := range resultFields() {
		if f.name != name || !f.numeric {
			continue
		}
		fv := v.Field(f.index)
		switch {
		case fv.CanInt():
			return float64(fv.Int()), true
		case fv.CanUint():
			return float64(fv.Uint()), true
		case fv.CanFloat():
			return fv.Float(), true
		}
	}
	return 0, false
}

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

// display formats an axis value for people: strings without quotes.
func display(v any) string {
	if s, ok := v.(string); ok {
		return s
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
