package runner

import (
	"fmt"
	"path/filepath"

	"strata/core/graph/formats"
	"strata/core/safefile"
)

// reportNames are the report files writeReports writes besides the plots.
var reportNames = []string{"runs.jsonl", "results.csv", "summary.csv", "summary.md", "provenance.json", "report.html"}

// reportFiles lists every file writeReports may write into a results
// directory: the reports, and each plot as SVG, PNG and PDF.
func (p *Plan) reportFiles() []string {
	files := append([]string(nil), reportNames...)
	var svgs []string
	if len(p.Exp.Plots) == 0 {
		for _, m := range p.Exp.Metrics {
			svgs = append(svgs, PlotFile(m))
		}
	}
	for _, s := range p.Exp.Plots {
		svgs = append(svgs, s.File)
	}
	for _, f := range svgs {
		files = append(files, f, siblingFile(f, ".png"), siblingFile(f, ".pdf"))
	}
	return files
}

// inputs lists the files the plan reads: the experiment file, its base
// config, and each run's dataset files and layer module. No result or
// report is written over one of them (safefile's inputs check).
func (p *Plan) inputs() []string {
	in := []string{p.Exp.File, p.Exp.BasePath}
	seen := map[string]bool{}
	add := func(f string) {
		if f != "" && !seen[f] {
			seen[f] = true
			in = append(in, f)
		}
	}
	for _, r := range p.Runs {
		add(r.Config.ModulePath())
		if spec := r.Config.DatasetSpec(); !seen[spec] {
			for _, f := range formats.InputFiles(spec) {
				add(f)
			}
		}
	}
	return in
}

// checkOutputs refuses, before any run, a results directory where a
// report would replace one of the inputs or is not a regular file: a
// sweep must not run for hours and then fail (or destroy its experiment
// file) when it writes its reports.
func checkOutputs(p *Plan, out string, inputs []string) error {
	for _, name := range p.reportFiles() {
		if err := safefile.CheckOutput(filepath.Join(out, name), inputs...); err != nil {
			return fmt.Errorf("experiment %s: results directory %s: %w", p.Exp.Name, out, err)
		}
	}
	return nil
}
