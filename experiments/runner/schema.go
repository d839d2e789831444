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
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"strata/core/config"
	"strata/core/registry"
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

	// Mirrors names what the experiment reproduces (a paper's figure or
	// table), for the index of experiments/README.md.
	Mirrors string
	// Check is [check]: the subset --check --subset reruns and the
	// columns it does not compare; ExpectedFailures the runs expected to
	// fail.
	Check            CheckSpec
	ExpectedFailures []ExpectedFailure
	// Prepare is [[prepare]]: the .strata files made before the runs.
	Prepare []Prepared

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

// errorList collects experiment errors.
type errorList struct {
	file string
	errs []*config.Error
	// decoded are the errors of the strict decoder, by key and line: a
	// check after decoding skips a key that is already wrong.
	decoded map[string]bool
}

func (l *errorList) add(line int, key, format string, args ...any) {
	l.errs = append(l.errs, &config.Error{File: l.file, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
}

// at adds an error located at key of the table p.
func (l *errorList) at(p config.Pos, key, format string, args ...any) {
	l.errs = append(l.errs, p.Errorf(key, format, args...))
}

// bad reports whether the decoder found key of the table p wrong.
func (l *errorList) bad(p config.Pos, key string) bool {
	return l.decoded[p.Path(key)+"@"+strconv.Itoa(p.KeyLine(key))]
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
	return errors.Join(capErrors(l.file, list)...)
}

// MaxErrors is the most problems of an experiment reported one per line;
// the rest are counted on one more line.
const MaxErrors = 50

// capErrors keeps the first MaxErrors of list and counts the others.
func capErrors(file string, list []error) []error {
	if len(list) <= MaxErrors {
		return list
	}
	more := &config.Error{File: file, Msg: fmt.Sprintf("and %d more problems not shown: fix the ones above and run again", len(list)-MaxErrors)}
	return append(list[:MaxErrors:MaxErrors], more)
}

// Load reads and parses an experiment file.
func Load(path string) (*Experiment, error) {
	data, err := config.ReadFile(path, "experiment")
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// expFile is the experiment file as config.DecodeStrict reads it: the
// schema of every key. What one key cannot say (a metric of the kind, an
// axis of the file) is checked by Parse after decoding.
type expFile struct {
	config.Pos
	Name        string         `toml:"name" doc:"names the results directory; letters, digits, '-', '_', '.'"`
	Description string         `toml:"description" doc:"free text for summary.md and report.html"`
	Kind        string         `toml:"kind" doc:"what each run does: train, partition, partition-batch or hitratio"`
	Base        baseValue      `toml:"base" doc:"a config path relative to the experiment file, or an inline [base] table holding a config"`
	Axis        []axisTable    `toml:"axis" doc:"the config keys to vary"`
	Seeds       []int64        `toml:"seeds" doc:"each point runs once per seed (sets train.seed)"`
	Metrics     []string       `toml:"metrics" doc:"the result fields to collect"`
	Derived     []derivedTable `toml:"derived" doc:"computed columns against a baseline row"`
	Plot        []plotTable    `toml:"plot" doc:"the plots to draw"`
	HitRatio    hitRatioTable  `toml:"hitratio" doc:"options of kind hitratio"`
	Mirrors     string         `toml:"mirrors" doc:"what the experiment reproduces (a paper's figure or table), for the index in experiments/README.md"`
	Check       checkTable     `toml:"check" doc:"the subset of runs strata experiment --check --subset reruns, and the columns it does not compare"`
	// ExpectedFailure is [[expected_failure]].
	ExpectedFailure []expectFailTable `toml:"expected_failure" doc:"runs expected to fail, each with why"`
	Prepare         []prepareTable    `toml:"prepare" doc:"datasets converted to .strata files before the runs (made once per machine, not committed)"`
}

// axisTable is one [[axis]].
type axisTable struct {
	config.Pos
	Key    string   `toml:"key" required:"true" example:"model.hidden" doc:"a dotted config key, or a whole section"`
	Values []any    `toml:"values" required:"true" example:"[16, 64]" doc:"the values the key takes, as TOML values"`
	Zip    string   `toml:"zip" doc:"a group name: the axes of one group advance together"`
	Labels []string `toml:"labels" doc:"how each value is shown, one per value"`
}

// derivedTable is one [[derived]].
type derivedTable struct {
	config.Pos
	Name     string     `toml:"name" required:"true" example:"speedup_vs_gcn" doc:"the column's name"`
	Metric   string     `toml:"metric" required:"true" example:"test_acc" doc:"one of metrics"`
	Kind     string     `toml:"kind" required:"true" example:"ratio" enum:"ratio,speedup,reduction,difference" doc:"how the row compares with its baseline"`
	Baseline valueTable `toml:"baseline" required:"true" example:"{ \"model.name\" = \"gcn\" }" doc:"axis key -> the value of the baseline row"`
}

// plotTable is one [[plot]].
type plotTable struct {
	config.Pos
	X      string     `toml:"x" doc:"an axis key, or \"seed\""`
	Y      string     `toml:"y" doc:"a collected metric or a derived column"`
	Series axisList   `toml:"series" doc:"an axis key or a list of them: one line each"`
	Where  valueTable `toml:"where" example:"{ \"data.dataset\" = \"cora\" }" doc:"axis key -> the value the plot keeps"`
	Kind   string     `toml:"kind" enum:"line,bar" doc:"line, or bars over a categorical x"`
	Title  string     `toml:"title"`
	XLabel string     `toml:"x_label"`
	YLabel string     `toml:"y_label"`
	XLog   bool       `toml:"x_log"`
	YLog   bool       `toml:"y_log"`
	File   string     `toml:"file" doc:"the SVG file name"`
	// Interval is what the error bars span when points aggregate seeds.
	// Style "paper": no title, 3.5 in wide (a paper column), small fonts.
	Style    string `toml:"style" enum:"screen,paper" doc:"screen (the default) or paper: no title, 3.5 in wide (one column), fonts sized for it"`
	Interval string `toml:"interval" enum:"std,ci95" doc:"error bars over the seeds: std (one standard deviation, the default) or ci95 (95% Student-t interval of the mean)"`
}

// hitRatioTable is [hitratio].
type hitRatioTable struct {
	config.Pos
	SynthTrain float64 `toml:"synth_train" range:"(0,1]" doc:"for a dataset without a training split: the fraction of the nodes drawn as the epoch's seeds"`
}

// valueTable is a table of TOML values of any type (axis key -> value).
type valueTable map[string]any

// baseValue is the base key: a config path or an inline table.
type baseValue struct {
	path  string
	table map[string]any
	set   bool
}

func (b *baseValue) DecodeTOML(key string, v any) error {
	switch x := v.(type) {
	case string:
		if x == "" {
			return fmt.Errorf("%s must not be empty", key)
		}
		b.path, b.set = x, true
	case map[string]any:
		b.table, b.set = x, true // decoded by config.ParseTable in Plan
	default:
		return fmt.Errorf("%s: expected a config path (string) or a [base] table, got %s", key, config.DescribeValue(v))
	}
	return nil
}

// axisList is plot series: one axis key or a list of them.
type axisList []string

func (l *axisList) DecodeTOML(key string, v any) error {
	switch x := v.(type) {
	case string:
		*l = axisList{x}
	case []any:
		var errs []error
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				errs = append(errs, fmt.Errorf("%s: expected axis keys (strings), got %s", key, config.DescribeValue(e)))
				continue
			}
			*l = append(*l, s)
		}
		return errors.Join(errs...)
	default:
		return fmt.Errorf("%s: expected an axis key or an array of them, got %s", key, config.DescribeValue(v))
	}
	return nil
}

// Parse parses an experiment from memory; file names it in errors and
// relative paths (base) are relative to its directory. The file is decoded
// by config.DecodeStrict, the decoder of configs, then checked as a whole
// (metrics of the kind, axes of the plots...). Every problem of the file
// is reported, one *config.Error per line, sorted by line. The generated
// configs are checked by Plan, not here.
func Parse(file string, data []byte) (*Experiment, error) {
	if err := config.CheckText(file, data); err != nil {
		return nil, err
	}
	var f expFile
	derr := config.DecodeStrict(file, data, &f)
	if !f.Found() {
		return nil, derr // a TOML syntax error
	}
	el := &errorList{file: file, decoded: map[string]bool{}}
	for _, ce := range config.Errors(derr) {
		el.errs = append(el.errs, ce)
		el.decoded[ce.Key+"@"+strconv.Itoa(ce.Line)] = true
	}
	sum := sha256.Sum256(data)
	e := &Experiment{File: file, Text: data, SHA256: hex.EncodeToString(sum[:])}
	e.parseHead(el, &f)
	first := make(map[string]int, len(f.Axis)) // axis key -> line of its first [[axis]]
	for i := range f.Axis {
		e.parseAxis(el, &f.Axis[i], first)
	}
	e.checkZips(el)
	e.parseSeeds(el, &f)
	if err := e.runCount(); err != nil {
		el.errs = append(el.errs, err)
	}
	e.parseMetrics(el, &f)
	e.parseDeclarations(el, &f)
	e.parsePrepare(el, f.Prepare)
	for i := range f.Derived {
		e.parseDerived(el, &f.Derived[i])
	}
	for i := range f.Plot {
		e.Plots = append(e.Plots, e.parsePlot(el, &f.Plot[i], i))
	}
	e.checkPlotFiles(el)
	if err := el.err(); err != nil {
		return nil, err
	}
	return e, nil
}

var validName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// parseHead checks name, kind, [hitratio] and base.
func (e *Experiment) parseHead(el *errorList, f *expFile) {
	e.Name = f.Name
	switch {
	case f.Has("name") && e.Name == "" && !el.bad(f.Pos, "name"):
		el.at(f.Pos, "name", "name must not be empty")
	case e.Name != "" && !validName.MatchString(e.Name):
		el.at(f.Pos, "name", "name = %q: use letters, digits, '-', '_' and '.' only (it names the results directory)", e.Name)
	}
	if e.Name == "" {
		e.Name = strings.TrimSuffix(filepath.Base(e.File), filepath.Ext(e.File))
	}
	e.Description = f.Description

	e.KindLine = f.KeyLine("kind")
	if !f.Has("kind") {
		e.KindLine = 0
	}
	e.Kind = Kinds[0]
	if f.Has("kind") && !el.bad(f.Pos, "kind") {
		k := f.Kind
		if e.Kind = kindByName(k); e.Kind == nil {
			msg := fmt.Sprintf("kind = %q: the kinds are %s", k, describeKinds())
			if sug := registry.Suggest(k, KindNames()); sug != "" {
				msg = fmt.Sprintf("kind = %q (did you mean %q?); the kinds are %s", k, sug, describeKinds())
			}
			el.at(f.Pos, "kind", "%s", msg)
			e.Kind = Kinds[0]
		}
	}
	if h := f.HitRatio; f.Has("hitratio") && !el.bad(f.Pos, "hitratio") {
		if e.Kind.Name != "hitratio" {
			el.at(h.Pos, "", "the [hitratio] table holds options of kind = \"hitratio\", and this experiment's kind is %q", e.Kind.Name)
		}
		e.HitRatio.SynthTrain = h.SynthTrain
	}

	e.BaseLine = f.KeyLine("base")
	b := f.Base
	switch {
	case !f.Has("base"):
		el.add(0, "base", `base is required: a config path (base = "../configs/gcn-cora.toml") or an inline [base] table holding a config`)
	case b.path != "":
		p := b.path
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(e.File), p)
		}
		if st, err := os.Stat(p); err != nil {
			el.at(f.Pos, "base", "base = %q: cannot read %s: %v", b.path, p, errors.Unwrap(err))
		} else if st.IsDir() {
			el.at(f.Pos, "base", "base = %q: %s is a directory, expected a config file", b.path, p)
		}
		e.BasePath = p
	}
}

// parseAxis checks an [[axis]] and adds it to the experiment; first
// holds the line of each key's first axis (a repeated key is an error,
// reported once per repetition).
func (e *Experiment) parseAxis(el *errorList, t *axisTable, first map[string]int) {
	a := Axis{Key: t.Key, Zip: t.Zip, Line: t.Line, KeyLine: t.KeyLine("key"), ValuesLine: t.KeyLine("values")}
	switch {
	case !t.Has("key") || el.bad(t.Pos, "key"):
		// reported by the decoder
	case slices.Contains(configKeys(), a.Key):
		// A whole section: its values must be tables (checked below).
		a.Path = []string{a.Key}
	default:
		if p, err := splitKey(a.Key); err != nil {
			el.at(t.Pos, "key", "axis key %q: %v", a.Key, err)
		} else {
			a.Path = p
			if known := configKeys(); !slices.Contains(known, p[0]) {
				msg := fmt.Sprintf("axis key %q: unknown config section %q; the sections are %s", a.Key, p[0], quoteList(known))
				if sug := registry.Suggest(p[0], known); sug != "" {
					msg = fmt.Sprintf("axis key %q: unknown config section %q (did you mean %q?)", a.Key, p[0], sug)
				}
				el.at(t.Pos, "key", "%s", msg)
			}
		}
	}
	if t.Has("values") && !el.bad(t.Pos, "values") {
		if len(t.Values) == 0 {
			el.at(t.Pos, "values", "axis %q: values must not be empty", a.Key)
		}
		// A zipped axis may repeat a value: its group's tuples differ
		// (runs that resolve to the same config are an error of Plan).
		seen := map[string]bool{}
		for _, x := range t.Values {
			v := config.TOMLValue(x)
			if seen[v] && a.Zip == "" {
				el.at(t.Pos, "values", "axis %q: value %s is listed twice", a.Key, v)
				break
			}
			seen[v] = true
		}
		a.Values = t.Values
		if len(a.Path) == 1 {
			for _, x := range t.Values {
				if _, ok := x.(map[string]any); !ok {
					el.at(t.Pos, "values", "axis %q names a whole config section: each value must be a table of its keys, e.g. { name = \"metis\", seed = 1 }, got %s", a.Key, config.DescribeValue(x))
					break
				}
			}
		}
	}
	if t.Has("labels") && !el.bad(t.Pos, "labels") {
		seen := map[string]bool{}
		ok := true
		for _, s := range t.Labels {
			if s == "" {
				el.at(t.Pos, "labels", "axis %q: labels: expected non-empty strings, got string \"\"", a.Key)
				ok = false
				continue
			}
			if seen[s] && a.Zip == "" {
				el.at(t.Pos, "labels", "axis %q: label %q is listed twice", a.Key, s)
			}
			seen[s] = true
		}
		if len(t.Labels) != len(a.Values) && a.Values != nil {
			el.at(t.Pos, "labels", "axis %q: %d labels for %d values; give one label per value", a.Key, len(t.Labels), len(a.Values))
		} else if ok {
			a.Labels = t.Labels
		}
	}
	if line, dup := first[a.Key]; dup && a.Key != "" {
		el.at(t.Pos, "", "axis %q is already defined on line %d: remove this [[axis]] or merge its values into that one", a.Key, line)
	} else if a.Key != "" {
		first[a.Key] = a.Line
	}
	e.Axes = append(e.Axes, a)
}

// checkZips checks that the axes of a zip group have as many values.
func (e *Experiment) checkZips(el *errorList) {
	first := map[string]int{} // zip group -> index of its first axis
	for i, a := range e.Axes {
		if a.Zip == "" {
			continue
		}
		j, ok := first[a.Zip]
		if !ok {
			first[a.Zip] = i
			continue
		}
		if b := e.Axes[j]; len(b.Values) != len(a.Values) {
			el.add(a.Line, "axis.zip", "zip group %q: axis %q has %d values but axis %q (line %d) has %d; zipped axes advance together and need the same number of values",
				a.Zip, a.Key, len(a.Values), b.Key, b.Line, len(b.Values))
		}
	}
}

// parseSeeds checks seeds.
func (e *Experiment) parseSeeds(el *errorList, f *expFile) {
	e.seedsLine = f.KeyLine("seeds")
	if !f.Has("seeds") {
		e.seedsLine = 0
		return
	}
	if !el.bad(f.Pos, "seeds") {
		if len(f.Seeds) == 0 {
			el.at(f.Pos, "seeds", "seeds: expected a non-empty array of integers, got array []")
		}
		seen := map[int64]bool{}
		for _, s := range f.Seeds {
			if seen[s] {
				el.at(f.Pos, "seeds", "seeds: %d is listed twice", s)
			}
			seen[s] = true
		}
		e.Seeds = f.Seeds
	}
	for _, a := range e.Axes {
		if a.Key == "train.seed" {
			el.add(a.Line, "axis.key", "axis %q: seeds already sets train.seed; remove the axis or the seeds list", a.Key)
		}
	}
}

// parseMetrics checks metrics against the kind's result.
func (e *Experiment) parseMetrics(el *errorList, f *expFile) {
	e.metricsLine = f.KeyLine("metrics")
	valid := e.Kind.Metrics()
	switch {
	case !f.Has("metrics"):
		e.metricsLine = 0
		el.add(0, "metrics", "metrics is required: the result fields to collect, e.g. metrics = [\"test_acc\", \"epoch_time_median_s\"]; valid: %s", quoteList(valid))
		return
	case el.bad(f.Pos, "metrics"):
		return
	case len(f.Metrics) == 0:
		el.at(f.Pos, "metrics", "metrics must not be empty; valid: %s", quoteList(valid))
	}
	for _, s := range f.Metrics {
		if !e.Kind.validMetric(s) {
			el.at(f.Pos, "metrics", "%s", e.unknownMetric(s))
			continue
		}
		if slices.Contains(e.Metrics, s) {
			el.at(f.Pos, "metrics", "metric %q is listed twice", s)
			continue
		}
		e.Metrics = append(e.Metrics, s)
	}
}

// parseDerived checks one [[derived]] and adds it to the experiment.
func (e *Experiment) parseDerived(el *errorList, t *derivedTable) {
	d := Derived{Name: t.Name, Metric: t.Metric, Kind: t.Kind, Line: t.Line}
	if d.Name != "" && (slices.Contains(e.Metrics, d.Name) || slices.ContainsFunc(e.Derived, func(o Derived) bool { return o.Name == d.Name })) {
		el.at(t.Pos, "name", "derived column %q: the name is already used", d.Name)
	}
	if t.Has("metric") && !el.bad(t.Pos, "metric") {
		if !e.Kind.validMetric(d.Metric) {
			el.at(t.Pos, "metric", "derived column %q: %s", d.Name, e.unknownMetric(d.Metric))
		} else if !slices.Contains(e.Metrics, d.Metric) {
			el.at(t.Pos, "metric", "derived column %q: metric %q is not collected; add it to metrics", d.Name, d.Metric)
		}
	}
	if t.Has("baseline") && !el.bad(t.Pos, "baseline") {
		b := map[string]any(t.Baseline)
		if len(b) == 0 {
			el.at(t.Pos, "baseline", "derived column %q: baseline must select at least one axis value", d.Name)
		}
		d.Baseline = b
		for _, k := range sortedKeys(b, nil, "") {
			ai := e.axisIndex(k)
			if ai < 0 {
				el.at(t.Pos, "baseline", "derived column %q: baseline key %q is not an axis; the axes are %s", d.Name, k, quoteList(axisNames(e.Axes)))
				continue
			}
			if e.Axes[ai].index(b[k]) < 0 {
				el.at(t.Pos, "baseline", "derived column %q: baseline %s = %s is not one of the axis values %s%s", d.Name, k, config.TOMLValue(b[k]), config.TOMLValue(e.Axes[ai].Values), labelsNote(e.Axes[ai]))
			}
		}
	}
	e.Derived = append(e.Derived, d)
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
func configKeys() []string { return config.Sections() }

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
