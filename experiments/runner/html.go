package runner

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// reportHTML is report.html: one self-contained page (no external
// resource: the plots are inline SVG, the style is inline) with the
// description, the summary table and what its columns mean, the plots,
// the failed runs, every run, and the provenance. It is well-formed XML
// as well as HTML, so that XML tools read it too.
func reportHTML(p *Plan, rows []*Row, records []*Record, plots []*renderedPlot, prov *Provenance) ([]byte, error) {
	e := p.Exp
	d := htmlReport{Name: e.Name, Description: strings.TrimSpace(e.Description), Kind: e.Kind.Name, KindDoc: e.Kind.Doc,
		Command: e.Kind.Command, Version: p.build(), Prov: prov}

	// Counts.
	for _, rec := range records {
		switch {
		case rec == nil:
			d.NotRun++
		case rec.Status == "ok":
			d.OK++
		default:
			d.Failed++
		}
	}
	d.Runs = len(p.Runs)
	d.Seeds = "the base config's seed (one run per row)"
	if e.Seeds != nil {
		s := make([]string, len(e.Seeds))
		for i, x := range e.Seeds {
			s[i] = strconv.FormatInt(x, 10)
		}
		if len(s) == 1 {
			d.Seeds = "seed " + s[0] + " (one run per row)"
		} else {
			d.Seeds = fmt.Sprintf("%d seeds (%s); cells are mean ± sample standard deviation", len(s), strings.Join(s, ", "))
		}
	}

	// Summary table.
	for _, a := range e.Axes {
		d.Head = append(d.Head, htmlCol{Name: a.Key, Doc: "axis: the value of " + a.Key + " in the config", Axis: true})
	}
	d.Head = append(d.Head, htmlCol{Name: "n", Doc: "successful runs of the row (failed ones in brackets)"})
	for _, m := range e.Metrics {
		doc := e.Kind.metricDoc(m)
		name := m
		if scale := mibScale(m); scale != 1 {
			name += " (MiB)"
			if doc != "" {
				doc += "; in MiB"
			}
		}
		d.Head = append(d.Head, htmlCol{Name: name, Doc: doc})
	}
	for _, dv := range e.Derived {
		d.Head = append(d.Head, htmlCol{Name: dv.Name, Derived: true,
			Doc: fmt.Sprintf("%s of the mean %s against the row with %s and this row's other values: %s", dv.Kind, dv.Metric, baselineText(e, dv), derivedFormula[dv.Kind])})
	}
	for i, r := range rows {
		var cells []htmlCell
		// Leading axis values equal to the row above are left blank, so
		// the groups stand out.
		same := i > 0
		for j, l := range r.Cell.Labels {
			same = same && l == rows[i-1].Cell.Labels[j]
			t := l
			if same && j < len(r.Cell.Labels)-1 {
				t = ""
			}
			cells = append(cells, htmlCell{Text: t, Axis: true})
		}
		if i > 0 && len(r.Cell.Labels) > 1 && r.Cell.Labels[0] != rows[i-1].Cell.Labels[0] {
			cells[0].Group = true
		}
		n := strconv.Itoa(r.OK)
		if r.Failed > 0 {
			n += fmt.Sprintf(" (%d failed)", r.Failed)
		}
		cells = append(cells, htmlCell{Text: n})
		for m, s := range r.Stats {
			if scale := mibScale(e.Metrics[m]); scale != 1 && s.N > 0 {
				s.Mean, s.Std = s.Mean/scale, s.Std/scale
			}
			cells = append(cells, htmlCell{Text: meanStd(s)})
		}
		for _, v := range r.Derived {
			t := "–"
			if !math.IsNaN(v) {
				t = derivedText(v)
			}
			cells = append(cells, htmlCell{Text: t})
		}
		d.Rows = append(d.Rows, cells)
	}
	for _, c := range d.Head {
		if c.Doc != "" && !c.Axis {
			d.Columns = append(d.Columns, c)
		}
	}

	// Plots.
	for _, pl := range plots {
		hp := htmlPlot{Title: pl.title, File: pl.file, Caption: pl.caption, SVG: template.HTML(inlineSVG(pl.svg, pl.title))}
		if pl.png != nil {
			hp.Alt = append(hp.Alt, siblingFile(pl.file, ".png"))
		}
		if pl.pdf != nil {
			hp.Alt = append(hp.Alt, siblingFile(pl.file, ".pdf"))
		}
		d.Plots = append(d.Plots, hp)
	}

	// Runs.
	for _, r := range p.Runs {
		rec := records[r.Index]
		hr := htmlRun{N: r.Index + 1, Label: r.Label(), ID: r.ID, Status: "not run"}
		if rec != nil {
			hr.Status, hr.Error = rec.Status, rec.Error
			if rec.Expected != "" {
				hr.Error += " (expected: " + rec.Expected + ")"
			}
			hr.Duration = strconv.FormatFloat(rec.DurationS, 'f', 1, 64) + " s"
			for _, m := range e.Metrics {
				if v, ok := rec.Metric(m); ok {
					if scale := mibScale(m); scale != 1 {
						v /= scale
					}
					hr.Values = append(hr.Values, sig4(v))
				} else {
					hr.Values = append(hr.Values, "–")
				}
			}
			if rec.Status != "ok" {
				d.FailedRuns = append(d.FailedRuns, hr)
			}
		} else {
			for range e.Metrics {
				hr.Values = append(hr.Values, "")
			}
		}
		d.RunList = append(d.RunList, hr)
	}
	for _, m := range e.Metrics {
		name := m
		if scale := mibScale(m); scale != 1 {
			name += " (MiB)"
		}
		d.RunHead = append(d.RunHead, name)
	}

	var buf bytes.Buffer
	if err := reportTemplate.Execute(&buf, d); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type htmlReport struct {
	Name, Description, Kind, KindDoc, Command, Version string
	Runs, OK, Failed, NotRun                           int
	Seeds                                              string
	Head                                               []htmlCol
	Rows                                               [][]htmlCell
	Columns                                            []htmlCol
	Plots                                              []htmlPlot
	FailedRuns                                         []htmlRun
	RunHead                                            []string
	RunList                                            []htmlRun
	Prov                                               *Provenance
}

type htmlCol struct {
	Name, Doc     string
	Axis, Derived bool
}

type htmlCell struct {
	Text  string
	Axis  bool
	Group bool // first cell of a row that starts a new value of the first axis
}

type htmlPlot struct {
	Title, File, Caption string
	Alt                  []string // the PNG and PDF files of the plot
	SVG                  template.HTML
}

type htmlRun struct {
	N                                  int
	Label, ID, Status, Error, Duration string
	Values                             []string
}

var (
	xmlDeclRE = regexp.MustCompile(`(?s)^\s*<\?xml[^>]*\?>\s*(<!--.*?-->\s*)?`)
	svgOpenRE = regexp.MustCompile(`<svg\s`)
)

// inlineSVG makes an SVG file embeddable in the page: without its XML
// declaration, scaled down with the page, and labelled for screen readers.
func inlineSVG(svg []byte, title string) string {
	s := xmlDeclRE.ReplaceAllString(string(svg), "")
	esc := template.HTMLEscapeString(title)
	return svgOpenRE.ReplaceAllString(s, `<svg class="plot" role="img" aria-label="`+esc+`" `)
}

// relToDataset shows a dataset file relative to the dataset's directory.
func relToDataset(spec, file string) string {
	dir := spec
	if i := strings.LastIndexByte(spec, '@'); i > 0 && !strings.HasPrefix(spec, "embedded:") {
		dir = spec[:i]
	}
	if rest, ok := strings.CutPrefix(file, dir+"/"); ok && rest != "" {
		return rest
	}
	if i := strings.LastIndexByte(file, '/'); i >= 0 && file == spec {
		return file[i+1:]
	}
	return file
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"short": short,
	"rel":   relToDataset,
	"bytes": humanBytes,
	"date":  func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
	"dur": func(a, b time.Time) string {
		d := b.Sub(a).Round(time.Second)
		if d < 0 {
			return "–"
		}
		return d.String()
	},
	"revision": revisionLabel,
	"dirty": func(b *bool) string {
		switch {
		case b == nil:
			return "unknown"
		case *b:
			return "yes: the work tree had uncommitted changes"
		}
		return "no"
	},
}).Parse(reportHTMLTemplate))

const reportHTMLTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>{{.Name}}: strata experiment report</title>
<style>
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #1b1b1b; margin: 0; background: #fafafa; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 48px; background: #fff; }
h1 { font-size: 26px; margin: 0 0 6px; }
h2 { font-size: 19px; margin: 34px 0 10px; padding-bottom: 4px; border-bottom: 1px solid #ddd; }
h3 { font-size: 16px; margin: 20px 0 8px; }
p.desc { font-size: 16px; margin: 4px 0 10px; }
p.meta, .muted { color: #555; }
nav a { margin-right: 14px; }
a { color: #0550ae; }
.scroll { overflow-x: auto; max-width: 100%; width: fit-content; border: 1px solid #e2e2e2; }
table { border-collapse: collapse; font-size: 13.5px; }
th, td { padding: 5px 10px; border-bottom: 1px solid #eee; text-align: right; white-space: nowrap; vertical-align: top; }
th { background: #f3f5f7; position: sticky; top: 0; font-weight: 600; }
th.axis, td.axis { text-align: left; }
td.axis { background: #fbfbfb; }
th.derived { background: #eef4ec; }
td.wrap { white-space: normal; }
td.err { text-align: left; white-space: normal; min-width: 24em; color: #a11; }
tr:hover td { background: #f6f9ff; }
tr.grp td { border-top: 2px solid #c9cfd6; }
table.kv th { text-align: left; background: none; position: static; width: 11em; }
table.kv td { text-align: left; white-space: normal; }
dl.cols { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; font-size: 13.5px; margin: 12px 0; }
dl.cols dt { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12.5px; }
dl.cols dd { margin: 0; color: #333; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12.5px; }
figure { margin: 18px 0 26px; }
figcaption { font-size: 13.5px; color: #444; margin-top: 4px; }
svg.plot { max-width: 100%; height: auto; display: block; }
details { margin: 8px 0; }
summary { cursor: pointer; color: #0550ae; }
pre { background: #f6f8fa; padding: 10px; overflow-x: auto; font-size: 12.5px; border: 1px solid #e2e2e2; }
.bad { color: #a11; font-weight: 600; }
</style>
</head>
<body>
<main>
<h1>{{.Name}}</h1>
{{if .Description}}<p class="desc">{{.Description}}</p>{{end}}
<p class="meta">{{.Runs}} runs of kind <b>{{.Kind}}</b> (each does what <code>{{.Command}}</code> does for its config): {{.OK}} finished{{if .Failed}}, <span class="bad">{{.Failed}} failed</span>{{end}}{{if .NotRun}}, {{.NotRun}} not run{{end}}. Every row repeats with {{.Seeds}}. strata {{.Version}}, {{date .Prov.End}}.</p>
<nav>{{if .Plots}}<a href="#plots">Plots</a>{{end}}<a href="#summary">Summary table</a>{{if .FailedRuns}}<a href="#failed">Failed runs</a>{{end}}<a href="#runs">Runs</a><a href="#provenance">Provenance</a></nav>

{{if .Plots}}<h2 id="plots">Plots</h2>
{{range .Plots}}<figure>
{{.SVG}}
<figcaption>{{.Caption}} <a href="{{.File}}">{{.File}}</a>{{range .Alt}} · <a href="{{.}}">{{.}}</a>{{end}}</figcaption>
</figure>
{{end}}{{end}}

<h2 id="summary">Summary table</h2>
{{if .Columns}}<dl class="cols">
{{range .Columns}}<dt>{{.Name}}</dt><dd>{{if .Derived}}derived: {{end}}{{.Doc}}</dd>
{{end}}</dl>{{end}}
<div class="scroll"><table>
<thead><tr>{{range .Head}}<th class="{{if .Axis}}axis{{else if .Derived}}derived{{end}}"{{if .Doc}} title="{{.Doc}}"{{end}}>{{.Name}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr{{if (index . 0).Group}} class="grp"{{end}}>{{range .}}<td{{if .Axis}} class="axis"{{end}}>{{.Text}}</td>{{end}}</tr>
{{end}}</tbody>
</table></div>

{{if .FailedRuns}}<h2 id="failed">Failed runs</h2>
<p>Failed runs are not stored, so rerunning the experiment retries them, except those the experiment expects to fail (marked "expected").</p>
<div class="scroll"><table>
<thead><tr><th>#</th><th class="axis">run</th><th class="axis">error</th></tr></thead>
<tbody>
{{range .FailedRuns}}<tr><td>{{.N}}</td><td class="axis">{{.Label}}</td><td class="err">{{.Error}}</td></tr>
{{end}}</tbody>
</table></div>{{end}}

<h2 id="runs">Runs</h2>
<details><summary>{{len .RunList}} runs, in run order, with their run IDs (the name of their stored result, <code>runs/&lt;run id&gt;.json</code>)</summary>
<div class="scroll"><table>
<thead><tr><th>#</th><th class="axis">run</th><th class="axis">status</th>{{range .RunHead}}<th>{{.}}</th>{{end}}<th>time</th><th class="axis">run id</th></tr></thead>
<tbody>
{{range .RunList}}<tr><td>{{.N}}</td><td class="axis">{{.Label}}</td><td class="axis{{if eq .Status "failed"}} bad{{end}}">{{.Status}}</td>{{range .Values}}<td>{{.}}</td>{{end}}<td>{{.Duration}}</td><td class="axis mono" title="{{.ID}}">{{short .ID}}</td></tr>
{{end}}</tbody>
</table></div>
</details>

<h2 id="provenance">Provenance</h2>
{{with .Prov}}<table class="kv">
<tr><th>git commit</th><td class="mono">{{if .GitRevision}}{{.GitRevision}}{{if eq .RevisionSource "build"}} (stamped in the strata binary: no git work tree){{end}}{{else}}unknown{{end}}</td></tr>
<tr><th>uncommitted changes</th><td>{{dirty .GitDirty}} (both as of the last invocation that ran something, {{date .End}})</td></tr>
<tr><th>revisions of the runs</th><td class="mono">{{range $i, $r := .Revisions}}{{if $i}}, {{end}}{{revision $r.Revision $r.Dirty}} ({{$r.Runs}} run{{if ne $r.Runs 1}}s{{end}}){{else}}none{{end}}</td></tr>
<tr><th>strata</th><td>{{.StrataBuild}}</td></tr>
<tr><th>Go</th><td>{{.GoVersion}} {{.OS}}/{{.Arch}}</td></tr>
<tr><th>CPU</th><td>{{if .CPUModel}}{{.CPUModel}}, {{end}}{{.Cores}} cores{{if .Hostname}} ({{.Hostname}}){{end}}</td></tr>
<tr><th>date</th><td>{{date .Start}} to {{date .End}} ({{dur .Start .End}}, resumed runs included)</td></tr>
<tr><th>experiment file</th><td><code>{{.File}}</code>, SHA-256 <span class="mono" title="{{.FileSHA256}}">{{short .FileSHA256}}</span></td></tr>
{{if .BaseConfigPath}}<tr><th>base config</th><td><code>{{.BaseConfigPath}}</code></td></tr>{{end}}
</table>
<h3>Datasets</h3>
<div class="scroll"><table>
<thead><tr><th class="axis">dataset</th><th>runs</th><th class="axis">file</th><th>size</th><th class="axis">SHA-256</th></tr></thead>
<tbody>
{{range .Datasets}}{{$d := .}}{{if .Generator}}<tr><td class="axis"><code>{{.Spec}}</code></td><td>{{.Runs}}</td><td class="axis wrap" colspan="3">generated, no file: {{.Generator}}</td></tr>
{{else if .Error}}<tr><td class="axis"><code>{{.Spec}}</code></td><td>{{.Runs}}</td><td class="err" colspan="3">{{.Error}}</td></tr>
{{else}}{{range $i, $f := .Files}}<tr>{{if eq $i 0}}<td class="axis"><code>{{$d.Spec}}</code></td><td>{{$d.Runs}}</td>{{else}}<td></td><td></td>{{end}}<td class="axis"><code title="{{$f.Path}}">{{rel $d.Spec $f.Path}}</code></td><td>{{bytes $f.Bytes}}</td><td class="axis mono" title="{{$f.SHA256}}">{{short $f.SHA256}}</td></tr>
{{end}}{{end}}{{end}}</tbody>
</table></div>
<p class="muted">Hashes are shortened to 12 hex digits; provenance.json has them in full, and the run IDs of every run.</p>
<details><summary>The experiment file</summary>
<pre>{{.FileText}}</pre>
</details>
{{end}}
</main>
</body>
</html>
`
