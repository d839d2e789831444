package runner

import (
	"bytes"
	"context"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"strata/core/train"
)

// TestPlotWording writes the reports of a one-seed and a two-seed
// experiment: ± wording and error bars only with two seeds, the 95%
// interval when the plot asks for it, axis labels from the metric docs.
func TestPlotWording(t *testing.T) {
	for _, tc := range []struct {
		seeds, interval string
		want, not       []string
	}{
		{"[0]", "", []string{"test accuracy", "One run per point"}, []string{"±", "standard deviation"}},
		{"[0, 1]", "", []string{"± std over seeds", "one standard deviation"}, []string{"95%"}},
		{"[0, 1]", "ci95", []string{"95% Student-t interval"}, []string{"one standard deviation"}},
	} {
		head := "name = \"w\"\nmetrics = [\"test_acc\", \"epoch_time_median_s\"]\nseeds = " + tc.seeds + `
[[axis]]
key = "model.hidden"
values = [8, 16]
`
		if tc.interval != "" {
			head += "[[plot]]\nx = \"model.hidden\"\ny = \"test_acc\"\nfile = \"acc.svg\"\ninterval = \"" + tc.interval + "\"\n"
		}
		p, err := NewPlan(context.Background(), mustParse(t, exp(head)), "test", nil)
		if err != nil {
			t.Fatal(err)
		}
		recs := records(p, func(r *Run) *train.Result {
			return &train.Result{TestAcc: 0.5 + float64(r.Index)/100, EpochTimeMedianS: 1 + float64(r.Index)}
		})
		out := t.TempDir()
		if err := WriteReports(p, recs, out, time.Now(), time.Now()); err != nil {
			t.Fatal(err)
		}
		// The same input gives byte-identical SVGs.
		again := t.TempDir()
		if err := WriteReports(p, recs, again, time.Now(), time.Now()); err != nil {
			t.Fatal(err)
		}
		var all strings.Builder
		svgs, _ := filepath.Glob(filepath.Join(out, "*.svg"))
		for _, f := range svgs {
			a, _ := os.ReadFile(f)
			b, err := os.ReadFile(filepath.Join(again, filepath.Base(f)))
			if err != nil || !bytes.Equal(a, b) {
				t.Errorf("%s: a second rendering differs (%v)", filepath.Base(f), err)
			}
		}
		for _, f := range append(svgs, filepath.Join(out, "report.html")) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(f, ".svg") {
				all.Write(b)
			} else if _, after, ok := strings.Cut(string(b), "<figure"); ok {
				all.WriteString(after) // the captions, not the table notes
			}
		}
		s := all.String()
		for _, w := range tc.want {
			if !strings.Contains(s, w) {
				t.Errorf("seeds %s interval %q: no %q in the plots", tc.seeds, tc.interval, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(s, w) {
				t.Errorf("seeds %s interval %q: %q in the plots", tc.seeds, tc.interval, w)
			}
		}
	}
}

// TestMetricLabel checks the axis labels taken from the metric docs.
func TestMetricLabel(t *testing.T) {
	e := &Experiment{Kind: kindByName("train")}
	for _, tc := range [][2]string{
		{"test_acc", "test accuracy"},
		{"epoch_time_median_s", "median wall time of one training epoch (s)"},
		{"peak_rss_bytes", "peak resident memory of the process (MiB)"},
		{"peak_tier_bytes.device0", "peak bytes allocated on a memory tier: device0 (MiB)"},
		{"no_such_metric", "no_such_metric"},
	} {
		if got, _ := e.yLabel(tc[0]); got != tc[1] {
			t.Errorf("yLabel(%s) = %q, want %q", tc[0], got, tc[1])
		}
	}
}

// TestPaperStyle writes a [[plot]] with style = "paper": its SVG is one
// column (3.5 in = 252 pt) wide, legend included, and carries no title;
// the same plot in the screen style does.
func TestPaperStyle(t *testing.T) {
	for _, style := range []string{"paper", "screen"} {
		p, err := NewPlan(context.Background(), mustParse(t, exp(`name = "w"
metrics = ["test_acc"]
seeds = [0, 1]
[[axis]]
key = "model.name"
values = ["gcn", "sage"]
[[axis]]
key = "model.hidden"
values = [8, 16]
[[plot]]
x = "model.hidden"
y = "test_acc"
series = "model.name"
file = "acc.svg"
style = "`+style+`"
`)), "test", nil)
		if err != nil {
			t.Fatal(err)
		}
		recs := records(p, func(r *Run) *train.Result { return &train.Result{TestAcc: 0.5 + float64(r.Index)/100} })
		out := t.TempDir()
		if err := WriteReports(p, recs, out, time.Now(), time.Now()); err != nil {
			t.Fatal(err)
		}
		svg, err := os.ReadFile(filepath.Join(out, "acc.svg"))
		if err != nil {
			t.Fatal(err)
		}
		var root struct {
			Width string `xml:"width,attr"`
		}
		if err := xml.Unmarshal(svg, &root); err != nil {
			t.Fatal(err)
		}
		title := bytes.Contains(svg, []byte(">w: test_acc by model.hidden"))
		switch {
		case style == "paper" && (root.Width != "252pt" || title):
			t.Errorf("paper: width %s (want 252pt), title drawn %v", root.Width, title)
		case style == "screen" && (root.Width == "252pt" || !title):
			t.Errorf("screen: width %s, title drawn %v", root.Width, title)
		}
	}
}
