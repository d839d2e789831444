package runner

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Stat is a metric over the seeds of a cell: mean, sample standard
// deviation (n-1 in the denominator; 0 for one value) and count.
type Stat struct {
	Mean, Std float64
	N         int
}

// Row is one summary row: a cell and its statistics.
type Row struct {
	Cell    *Cell
	Stats   []Stat    // per Experiment.Metrics
	Derived []float64 // per Experiment.Derived; NaN when undefined
	OK      int       // successful runs
	Failed  int
}

// NewStat computes the mean and sample standard deviation of xs.
func NewStat(xs []float64) Stat {
	s := Stat{N: len(xs)}
	if s.N == 0 {
		return Stat{Mean: math.NaN(), Std: math.NaN()}
	}
	for _, x := range xs {
		s.Mean += x
	}
	s.Mean /= float64(s.N)
	if s.N > 1 {
		var ss float64
		for _, x := range xs {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.Std = math.Sqrt(ss / float64(s.N-1))
	}
	return s
}

// Aggregate computes the summary rows from the run records (indexed like
// Plan.Runs; nil for a run that did not finish).
func Aggregate(p *Plan, records []*Record) []*Row {
	e := p.Exp
	rows := make([]*Row, len(p.Cells))
	for i, c := range p.Cells {
		row := &Row{Cell: c, Stats: make([]Stat, len(e.Metrics))}
		vals := make([][]float64, len(e.Metrics))
		for _, r := range c.Runs {
			rec := records[r.Index]
			switch {
			case rec == nil:
				continue
			case rec.Status != "ok":
				row.Failed++
				continue
			}
			row.OK++
			for m, name := range e.Metrics {
				if v, ok := rec.Metric(name); ok {
					vals[m] = append(vals[m], v)
				}
			}
		}
		for m := range e.Metrics {
			row.Stats[m] = NewStat(vals[m])
		}
		rows[i] = row
	}
	for _, row := range rows {
		row.Derived = make([]float64, len(e.Derived))
		for k, d := range e.Derived {
			row.Derived[k] = math.NaN()
			b := p.baselineCell(row.Cell, d)
			m := slices.Index(e.Metrics, d.Metric)
			if b == nil || m < 0 {
				continue
			}
			row.Derived[k] = derive(d.Kind, row.Stats[m].Mean, rows[b.Index].Stats[m].Mean)
		}
	}
	return rows
}

// derivedFormula explains each derived kind, v the row's mean and b the
// baseline's.
var derivedFormula = map[string]string{
	"ratio":      "v / baseline",
	"speedup":    "baseline / v",
	"reduction":  "(baseline - v) / baseline",
	"difference": "v - baseline",
}

// derive computes a derived value of v against the baseline b.
func derive(kind string, v, b float64) float64 {
	var x float64
	switch kind {
	case "ratio":
		x = v / b
	case "speedup":
		x = b / v
	case "reduction":
		x = (b - v) / b
	case "difference":
		x = v - b
	default:
		return math.NaN()
	}
	if math.IsInf(x, 0) {
		return math.NaN()
	}
	return x
}

// baselineCell returns the cell with c's coordinates except on the axes
// the derived column's baseline selects; nil when there is none.
func (p *Plan) baselineCell(c *Cell, d Derived) *Cell {
	coord := slices.Clone(c.Coord)
	fixed := map[int]int{}
	for key, val := range d.Baseline {
		ai := slices.IndexFunc(p.Exp.Axes, func(a Axis) bool { return a.Key == key })
		if ai < 0 {
			return nil
		}
		vi := p.Exp.Axes[ai].index(val)
		j := slices.IndexFunc(p.dims, func(d dim) bool { return slices.Contains(d.axes, ai) })
		if vi < 0 || j < 0 {
			return nil
		}
		if prev, ok := fixed[j]; ok && prev != vi {
			return nil // two zipped axes selecting different positions
		}
		fixed[j] = vi
		coord[j] = vi
	}
	idx := 0
	for j, d := range p.dims {
		idx = idx*d.n + coord[j]
	}
	return p.Cells[idx]
}

// WriteReports writes runs.jsonl, results.csv, summary.csv, summary.md,
// the plots (SVG, PNG, PDF), provenance.json and report.html into out. A
// zero end means that no run executed: the invocation recorded in the
// provenance.json already in out is kept (see newProvenance).
func WriteReports(p *Plan, records []*Record, out string, start, end time.Time) error {
	return writeReports(p, records, out, start, end, nil)
}

func writeReports(p *Plan, records []*Record, out string, start, end time.Time, m *memo) error {
	rows := Aggregate(p, records)
	plots, err := renderPlots(p, rows, records)
	if err != nil {
		return err
	}
	var prev *Provenance
	if end.IsZero() {
		prev = ReadProvenance(filepath.Join(out, "provenance.json"))
	}
	prov, err := newProvenance(p, records, out, start, end, m, prev)
	if err != nil {
		return err
	}
	files := []struct {
		name string
		data func() ([]byte, error)
	}{
		{"runs.jsonl", func() ([]byte, error) { return runsJSONL(p, records) }},
		{"results.csv", func() ([]byte, error) { return resultsCSV(p, records) }},
		{"summary.csv", func() ([]byte, error) { return summaryCSV(p, rows) }},
		{"summary.md", func() ([]byte, error) { return summaryMD(p, rows, records, plots), nil }},
		{"provenance.json", func() ([]byte, error) { return marshalProvenance(prov) }},
		{"report.html", func() ([]byte, error) { return reportHTML(p, rows, records, plots, prov) }},
	}
	for _, pl := range plots {
		files = append(files, struct {
			name string
			data func() ([]byte, error)
		}{pl.file, func() ([]byte, error) { return pl.svg, nil }})
		for _, alt := range []struct {
			ext  string
			data []byte
		}{{".png", pl.png}, {".pdf", pl.pdf}} {
			if alt.data != nil {
				files = append(files, struct {
					name string
					data func() ([]byte, error)
				}{siblingFile(pl.file, alt.ext), func() ([]byte, error) { return alt.data, nil }})
			}
		}
	}
	inputs := p.inputs()
	for _, f := range files {
		b, err := f.data()
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		if err := writeFile(filepath.Join(out, f.name), b, inputs...); err != nil {
			return err
		}
	}
	return nil
}

// revisionsText lists the source revisions of the stored runs with their
// run counts, in the order of their first run: "0123456789ab (12 runs),
// 89abcdef0123+dirty (3 runs)".
func revisionsText(records []*Record) string {
	var keys []string
	count := map[string]int{}
	for _, rec := range records {
		if rec == nil {
			continue
		}
		k := revisionLabel(rec.Revision, rec.Dirty)
		if count[k] == 0 {
			keys = append(keys, k)
		}
		count[k]++
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		unit := "runs"
		if count[k] == 1 {
			unit = "run"
		}
		parts[i] = fmt.Sprintf("%s (%d %s)", k, count[k], unit)
	}
	return strings.Join(parts, ", ")
}

// revisionLabel shortens a revision to 12 hex digits and marks a dirty
// work tree: "0123456789ab+dirty"; "unknown" when none was recorded.
func revisionLabel(rev string, dirty *bool) string {
	if rev == "" {
		return "unknown"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty != nil && *dirty {
		rev += "+dirty"
	}
	return rev
}

// jsonObject writes a JSON object with its keys in the order given.
type jsonObject struct{ buf bytes.Buffer }

func (o *jsonObject) add(key string, v any) error {
	if o.buf.Len() == 0 {
		o.buf.WriteByte('{')
	} else {
		o.buf.WriteByte(',')
	}
	k, _ := json.Marshal(key)
	o.buf.Write(k)
	o.buf.WriteByte(':')
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	o.buf.Write(b)
	return nil
}

// runsJSONL is one line per run: run number, run_id, axis values, seed,
// status (and error), duration, then every result field.
func runsJSONL(p *Plan, records []*Record) ([]byte, error) {
	var out bytes.Buffer
	for _, r := range p.Runs {
		rec := records[r.Index]
		if rec == nil {
			continue
		}
		var o jsonObject
		o.add("run", r.Index+1)
		o.add("run_id", r.ID)
		for i, a := range p.Exp.Axes {
			o.add(a.Key, r.Cell.Values[i])
		}
		o.add("seed", r.Seed)
		o.add("status", rec.Status)
		if rec.Error != "" {
			o.add("error", rec.Error)
		}
		o.add("duration_s", rec.DurationS)
		if rec.Result != nil {
			keys, vals, err := resultFieldsJSON(rec.Result)
			if err != nil {
				return nil, err
			}
			// Sorted: a result read back from runs/ (a map) and a fresh
			// one (a struct) give the same line.
			slices.Sort(keys)
			for _, k := range keys {
				if k == "seed" || k == "run" || k == "run_id" || k == "status" || k == "error" || k == "duration_s" || p.Exp.axisIndex(k) >= 0 {
					continue
				}
				o.add(k, vals[k])
			}
		}
		out.Write(o.buf.Bytes())
		out.WriteString("}\n")
	}
	return out.Bytes(), nil
}

func csvBytes(rows [][]string) ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if err := w.WriteAll(rows); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// num formats a float for CSV ("" for NaN).
func num(x float64) string {
	if math.IsNaN(x) {
		return ""
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// resultsCSV is one row per run with the collected metrics.
func resultsCSV(p *Plan, records []*Record) ([]byte, error) {
	e := p.Exp
	head := append([]string{"run", "run_id"}, axisNames(e.Axes)...)
	head = append(head, "seed", "status")
	head = append(head, e.Metrics...)
	head = append(head, "error")
	rows := [][]string{head}
	for _, r := range p.Runs {
		rec := records[r.Index]
		if rec == nil {
			continue
		}
		row := []string{strconv.Itoa(r.Index + 1), r.ID}
		row = append(row, r.Cell.Labels...)
		row = append(row, strconv.FormatInt(r.Seed, 10), rec.Status)
		for _, m := range e.Metrics {
			v, ok := rec.Metric(m)
			if !ok {
				v = math.NaN()
			}
			row = append(row, num(v))
		}
		rows = append(rows, append(row, rec.Error))
	}
	return csvBytes(rows)
}

// summaryCSV is one row per axis point: mean, std and n of each metric,
// then the derived columns.
func summaryCSV(p *Plan, rows []*Row) ([]byte, error) {
	e := p.Exp
	head := slices.Clone(axisNames(e.Axes))
	head = append(head, "runs_ok", "runs_failed")
	for _, m := range e.Metrics {
		head = append(head, m+"_mean", m+"_std", m+"_n")
	}
	for _, d := range e.Derived {
		head = append(head, d.Name)
	}
	out := [][]string{head}
	for _, r := range rows {
		row := slices.Clone(r.Cell.Labels)
		row = append(row, strconv.Itoa(r.OK), strconv.Itoa(r.Failed))
		for _, s := range r.Stats {
			row = append(row, num(s.Mean), num(s.Std), strconv.Itoa(s.N))
		}
		for _, d := range r.Derived {
			row = append(row, num(d))
		}
		out = append(out, row)
	}
	return csvBytes(out)
}

// meanStd formats "mean ± std", rounding both to the second significant
// digit of std (4 significant digits when std is 0 or unknown).
func meanStd(s Stat) string {
	if s.N == 0 || math.IsNaN(s.Mean) {
		return "–"
	}
	if s.N == 1 || math.IsNaN(s.Std) {
		return sig4(s.Mean)
	}
	if s.Std == 0 {
		return sig4(s.Mean) + " ± 0"
	}
	dec := 1 - int(math.Floor(math.Log10(s.Std)))
	if dec < 0 {
		dec = 0
	}
	if dec > 8 {
		dec = 8
	}
	return fmt.Sprintf("%.*f ± %.*f", dec, s.Mean, dec, s.Std)
}

// sig4 formats x with 4 significant digits, trailing zeros kept (0.7480,
// 1.140, 212.0), in exponent form when it is very large or small.
func sig4(x float64) string {
	if x == 0 || math.IsInf(x, 0) {
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	e := int(math.Floor(math.Log10(math.Abs(x))))
	if e < -4 || e >= 7 {
		return strconv.FormatFloat(x, 'e', 3, 64)
	}
	return strconv.FormatFloat(x, 'f', max(3-e, 0), 64)
}

// summaryMD is a markdown table, mean ± std over seeds per axis point.
func summaryMD(p *Plan, rows []*Row, records []*Record, plots []*renderedPlot) []byte {
	e := p.Exp
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", e.Name)
	if e.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(e.Description))
	}
	seeds := "the base config's seed"
	if e.Seeds != nil {
		s := make([]string, len(e.Seeds))
		for i, x := range e.Seeds {
			s[i] = strconv.FormatInt(x, 10)
		}
		seeds = fmt.Sprintf("%d seeds (%s)", len(e.Seeds), strings.Join(s, ", "))
	}
	if len(e.Seeds) == 1 {
		fmt.Fprintf(&b, "One run per row (seed %d); n = successful runs. strata %s.\n\n", e.Seeds[0], p.Version)
	} else if e.Seeds == nil {
		fmt.Fprintf(&b, "One run per row (%s); n = successful runs. strata %s.\n\n", seeds, p.Version)
	} else {
		fmt.Fprintf(&b, "Mean ± sample standard deviation over %s; n = successful runs. strata %s.\n\n", seeds, p.Version)
	}
	head := append(slices.Clone(axisNames(e.Axes)), "n")
	head = append(head, e.Metrics...)
	for _, d := range e.Derived {
		head = append(head, d.Name)
	}
	b.WriteString("| " + strings.Join(mdEscape(head), " | ") + " |\n")
	b.WriteString("|")
	for i := range head {
		if i < len(e.Axes) {
			b.WriteString("---|")
		} else {
			b.WriteString("---:|")
		}
	}
	b.WriteString("\n")
	for _, r := range rows {
		cells := slices.Clone(r.Cell.Labels)
		n := strconv.Itoa(r.OK)
		if r.Failed > 0 {
			n += fmt.Sprintf(" (%d failed)", r.Failed)
		}
		cells = append(cells, n)
		for m, s := range r.Stats {
			if scale := mibScale(e.Metrics[m]); scale != 1 && s.N > 0 {
				s.Mean, s.Std = s.Mean/scale, s.Std/scale
				cells = append(cells, meanStd(s)+" MiB")
				continue
			}
			cells = append(cells, meanStd(s))
		}
		for _, d := range r.Derived {
			if math.IsNaN(d) {
				cells = append(cells, "–")
			} else {
				cells = append(cells, derivedText(d))
			}
		}
		b.WriteString("| " + strings.Join(mdEscape(cells), " | ") + " |\n")
	}
	if len(e.Derived) > 0 {
		b.WriteString("\nDerived columns, against the row that has the baseline's values and this row's other axis values:\n\n")
		for _, d := range e.Derived {
			fmt.Fprintf(&b, "- %s: %s of the mean %s against %s (%s).\n", d.Name, d.Kind, d.Metric, baselineText(p.Exp, d), derivedFormula[d.Kind])
		}
	}
	if len(plots) > 0 {
		b.WriteString("\nPlots (mean ± std over the seeds): ")
		for i, pl := range plots {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "[%s](%s)", pl.name, pl.file)
		}
		b.WriteString(". All of it, with the provenance: [report.html](report.html).\n")
	}
	if revs := revisionsText(records); revs != "" {
		b.WriteString("\nRevisions the runs ran at: " + revs + ".\n")
	}
	var failed []string
	for _, rec := range records {
		if rec != nil && rec.Status != "ok" {
			line := fmt.Sprintf("- %s: %s", labelOf(p, rec), rec.Error)
			if rec.Expected != "" {
				line += " (expected: " + rec.Expected + ")"
			}
			failed = append(failed, line)
		}
	}
	if len(failed) > 0 {
		b.WriteString("\nFailed runs:\n\n" + strings.Join(failed, "\n") + "\n")
	}
	return []byte(b.String())
}

// derivedText formats a derived value with 3 decimals ("0.000", never
// "-0.000").
func derivedText(v float64) string {
	t := strconv.FormatFloat(v, 'f', 3, 64)
	if strings.Trim(t, "-0.") == "" {
		return "0.000"
	}
	return t
}

func labelOf(p *Plan, rec *Record) string {
	for _, r := range p.Runs {
		if r.ID == rec.RunID {
			return r.Label()
		}
	}
	return rec.RunID
}

func baselineText(e *Experiment, d Derived) string {
	keys := sortedKeys(d.Baseline, nil, "")
	parts := make([]string, len(keys))
	for i, k := range keys {
		v := display(d.Baseline[k])
		if ai := e.axisIndex(k); ai >= 0 {
			if vi := e.Axes[ai].index(d.Baseline[k]); vi >= 0 {
				v = e.Axes[ai].Label(vi)
			}
		}
		parts[i] = k + "=" + v
	}
	return strings.Join(parts, " ")
}

func mdEscape(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = strings.ReplaceAll(strings.ReplaceAll(x, "|", `\|`), "\n", " ")
	}
	return out
}
