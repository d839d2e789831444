package runner

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"errors"
	"image"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"strata/core/train"
)

func near(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b))
}

func TestNewStat(t *testing.T) {
	tests := []struct {
		xs        []float64
		mean, std float64
	}{
		{nil, math.NaN(), math.NaN()},
		{[]float64{5}, 5, 0},
		{[]float64{1, 2, 3, 4}, 2.5, math.Sqrt(5.0 / 3)}, // squares 2.25+.25+.25+2.25 = 5, over n-1 = 3
		{[]float64{0.8, 0.82, 0.81}, 0.81, 0.01},
		{[]float64{2, 2, 2}, 2, 0},
	}
	for _, tc := range tests {
		s := NewStat(tc.xs)
		if s.N != len(tc.xs) || !near(s.Mean, tc.mean) || !near(s.Std, tc.std) {
			t.Errorf("NewStat(%v) = %+v, want mean %v std %v n %d", tc.xs, s, tc.mean, tc.std, len(tc.xs))
		}
	}
}

// records builds ok records for the plan's runs from a metric function.
func records(p *Plan, f func(r *Run) *train.Result) []*Record {
	out := make([]*Record, len(p.Runs))
	for _, r := range p.Runs {
		if res := f(r); res != nil {
			out[r.Index] = &Record{RunID: r.ID, Status: "ok", Result: res}
		}
	}
	return out
}

func TestAggregate(t *testing.T) {
	p, err := NewPlan(context.Background(), mustParse(t, exp(`
metrics = ["test_acc", "params"]
seeds = [0, 1, 2]
[[axis]]
key = "model.hidden"
values = [8, 16]
`)), "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	acc := map[string]float64{ // hidden/seed -> test_acc
		"8/0": 0.70, "8/1": 0.74, "8/2": 0.75,
		"16/0": 0.80, "16/1": 0.90, // 16/2 failed
	}
	recs := records(p, func(r *Run) *train.Result {
		key := display(r.Cell.Values[0]) + "/" + display(r.Seed)
		return &train.Result{TestAcc: acc[key], Params: int64(r.Config.Model.Hidden) * 100}
	})
	recs[5] = &Record{RunID: p.Runs[5].ID, Status: "failed", Error: "boom"}
	rows := Aggregate(p, recs)
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	// hidden 8: mean 0.73, deviations -.03 .01 .02, squares sum 0.0014, /2 -> std sqrt(0.0007)
	// hidden 16: mean 0.85, deviations ±.05, squares sum 0.005, /1 -> std sqrt(0.005)
	want := []struct {
		ok, failed int
		acc, std   float64
		n          int
		params     float64
	}{
		{3, 0, 0.73, math.Sqrt(0.0007), 3, 800},
		{2, 1, 0.85, math.Sqrt(0.005), 2, 1600},
	}
	for i, w := range want {
		r := rows[i]
		s := r.Stats[0]
		if r.OK != w.ok || r.Failed != w.failed || s.N != w.n || math.Abs(s.Mean-w.acc) > 1e-12 || math.Abs(s.Std-w.std) > 1e-12 {
			t.Errorf("row %d: ok %d failed %d, test_acc %+v; want %+v", i, r.OK, r.Failed, s, w)
		}
		if r.Stats[1].Mean != w.params || r.Stats[1].Std != 0 {
			t.Errorf("row %d: params %+v", i, r.Stats[1])
		}
	}
	// summary.csv holds the same numbers.
	b, err := summaryCSV(p, rows)
	if err != nil {
		t.Fatal(err)
	}
	table, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	wantHead := "model.hidden,runs_ok,runs_failed,test_acc_mean,test_acc_std,test_acc_n,params_mean,params_std,params_n"
	if strings.Join(table[0], ",") != wantHead {
		t.Errorf("head %q", strings.Join(table[0], ","))
	}
	wantRow := []float64{16, 2, 1, 0.85, math.Sqrt(0.005), 2, 1600, 0, 2}
	for i, w := range wantRow {
		if v, err := strconv.ParseFloat(table[2][i], 64); err != nil || math.Abs(v-w) > 1e-12 {
			t.Errorf("summary.csv row 2, column %s = %q, want %v", table[0][i], table[2][i], w)
		}
	}
	md := string(summaryMD(p, rows, recs, nil))
	for _, w := range []string{"| 8 | 3 | 0.730 ± 0.026 | 800.0 ± 0 |", "| 16 | 2 (1 failed) | 0.850 ± 0.071 |", "model.hidden=16 seed=2: boom"} {
		if !strings.Contains(md, w) {
			t.Errorf("summary.md lacks %q:\n%s", w, md)
		}
	}
}

func TestDerived(t *testing.T) {
	p, err := NewPlan(context.Background(), mustParse(t, exp(`
metrics = ["epoch_time_median_s"]
[[axis]]
key = "model.name"
values = ["gcn", "sage"]
[[axis]]
key = "model.hidden"
values = [8, 16]
[[derived]]
name = "ratio_vs_gcn"
metric = "epoch_time_median_s"
kind = "ratio"
baseline = { "model.name" = "gcn" }
[[derived]]
name = "reduction_vs_h8"
metric = "epoch_time_median_s"
kind = "reduction"
baseline = { "model.hidden" = 8 }
[[derived]]
name = "diff_vs_gcn8"
metric = "epoch_time_median_s"
kind = "difference"
baseline = { "model.name" = "gcn", "model.hidden" = 8 }
[[derived]]
name = "speedup_vs_gcn"
metric = "epoch_time_median_s"
kind = "speedup"
baseline = { "model.name" = "gcn" }
`)), "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	times := map[string]float64{"gcn 8": 1, "gcn 16": 2, "sage 8": 4, "sage 16": 6}
	rows := Aggregate(p, records(p, func(r *Run) *train.Result {
		return &train.Result{EpochTimeMedianS: times[display(r.Cell.Values[0])+" "+display(r.Cell.Values[1])]}
	}))
	want := [][]float64{ // ratio, reduction, difference, speedup
		{1, 0, 0, 1},            // gcn 8
		{1, -1, 1, 1},           // gcn 16: (1-2)/1
		{4, 0, 3, 0.25},         // sage 8
		{3, -0.5, 5, 1.0 / 3.0}, // sage 16: 6/2, (4-6)/4, 6-1, 2/6
	}
	for i, w := range want {
		for k := range w {
			if !near(rows[i].Derived[k], w[k]) {
				t.Errorf("%s %s = %v, want %v", rows[i].Cell.Label(), p.Exp.Derived[k].Name, rows[i].Derived[k], w[k])
			}
		}
	}
	// A missing baseline or a zero one gives no value.
	recs := records(p, func(r *Run) *train.Result {
		if r.Cell.Values[0] == "gcn" && r.Cell.Values[1] == int64(8) {
			return &train.Result{EpochTimeMedianS: 0}
		}
		if r.Cell.Values[0] == "gcn" {
			return nil
		}
		return &train.Result{EpochTimeMedianS: 1}
	})
	rows = Aggregate(p, recs)
	if !math.IsNaN(rows[2].Derived[0]) || !math.IsNaN(rows[3].Derived[0]) || !math.IsNaN(rows[1].Derived[1]) {
		t.Errorf("want NaN without a baseline value: %v %v %v", rows[2].Derived, rows[3].Derived, rows[1].Derived)
	}
	if rows[2].Derived[2] != 1 { // difference against 0 is defined
		t.Errorf("difference against a zero baseline = %v", rows[2].Derived[2])
	}
}

// TestDerivedZip: a baseline on a zipped axis selects the position of its
// whole group.
func TestDerivedZip(t *testing.T) {
	p, err := NewPlan(context.Background(), mustParse(t, exp(`
metrics = ["test_acc"]
[[axis]]
key = "model.hidden"
values = [8, 16]
zip = "g"
[[axis]]
key = "model.name"
values = ["gcn", "sage"]
[[axis]]
key = "train.lr"
values = [0.1, 0.01]
zip = "g"
[[derived]]
name = "d"
metric = "test_acc"
kind = "difference"
baseline = { "train.lr" = 0.1 }
`)), "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := Aggregate(p, records(p, func(r *Run) *train.Result {
		return &train.Result{TestAcc: float64(r.Config.Model.Hidden) + map[string]float64{"gcn": 0, "sage": 0.5}[r.Config.Model.Name]}
	}))
	want := []float64{0, 0, 8, 8} // (8,gcn) (8,sage) (16,gcn) (16,sage)
	for i, w := range want {
		if rows[i].Derived[0] != w {
			t.Errorf("%s: %v, want %v", rows[i].Cell.Label(), rows[i].Derived[0], w)
		}
	}
}

// svgOK parses an SVG file as XML and returns its text.
func svgOK(t *testing.T, path string) string {
	t.Helper()
	b := mustRead(t, path)
	d := xml.NewDecoder(bytes.NewReader(b))
	var root string
	var text strings.Builder
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", path, err)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = x.Name.Local
			}
		case xml.CharData:
			text.Write(x)
		}
	}
	if root != "svg" {
		t.Fatalf("%s: root element %q, want svg", path, root)
	}
	return text.String()
}

func TestWriteReports(t *testing.T) {
	tests := []struct {
		name   string
		head   string
		series []string // legend entries
		xs     []string // x tick labels
	}{
		{"numeric x, series", `
name = "r"
metrics = ["test_acc"]
seeds = [0, 1]
[[axis]]
key = "model.hidden"
values = [8, 16, 32]
[[axis]]
key = "model.name"
values = ["gcn", "sage"]
`, []string{"model.name:", "gcn", "sage"}, []string{"8", "16", "32"}},
		{"categorical x", `
name = "r"
metrics = ["test_acc"]
[[axis]]
key = "model.name"
values = ["gcn", "sage"]
`, nil, []string{"gcn", "sage"}},
		{"zipped x", `
name = "r"
metrics = ["test_acc"]
[[axis]]
key = "model.name"
values = ["gcn", "sage"]
zip = "z"
[[axis]]
key = "model.hidden"
values = [8, 16]
zip = "z"
`, nil, []string{"gcn / 8", "sage / 16"}},
		{"no axes", `
name = "r"
metrics = ["test_acc"]
seeds = [0, 1]
`, nil, []string{"all"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPlan(context.Background(), mustParse(t, exp(tc.head)), "test", nil)
			if err != nil {
				t.Fatal(err)
			}
			recs := records(p, func(r *Run) *train.Result {
				return &train.Result{TestAcc: 0.5 + float64(r.Index)/100}
			})
			out := t.TempDir()
			start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			if err := WriteReports(p, recs, out, start, start.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			text := svgOK(t, filepath.Join(out, "test_acc.svg"))
			for _, w := range append(append([]string{"test_acc"}, tc.series...), tc.xs...) {
				if !strings.Contains(text, w) {
					t.Errorf("plot lacks %q; its text: %q", w, text)
				}
			}
			var prov Provenance
			if err := json.Unmarshal(mustRead(t, filepath.Join(out, "provenance.json")), &prov); err != nil {
				t.Fatal(err)
			}
			if prov.FileSHA256 != p.Exp.SHA256 || prov.FileText != string(p.Exp.Text) || len(prov.Runs) != len(p.Runs) ||
				prov.Runs[0].ConfigSHA256 == "" || prov.GoVersion == "" || prov.Cores < 1 || !prov.Start.Equal(start) {
				t.Errorf("provenance %+v", prov)
			}
			// The same plot as PNG and PDF, next to the SVG.
			png := mustRead(t, filepath.Join(out, "test_acc.png"))
			if _, err := pngDecode(png); err != nil {
				t.Errorf("test_acc.png does not decode: %v", err)
			}
			if pdf := mustRead(t, filepath.Join(out, "test_acc.pdf")); !bytes.HasPrefix(pdf, []byte("%PDF-")) || !bytes.Contains(pdf, []byte("%%EOF")) {
				t.Errorf("test_acc.pdf is not a PDF")
			}
			if html := mustRead(t, filepath.Join(out, "report.html")); !bytes.Contains(html, []byte(`href="test_acc.png"`)) || !bytes.Contains(html, []byte(`href="test_acc.pdf"`)) {
				t.Errorf("report.html does not link the PNG and PDF")
			}
			noTemp(t, out)
		})
	}
	// No value at all: no plot.
	p := fakePlan(t)
	out := t.TempDir()
	if err := WriteReports(p, make([]*Record, len(p.Runs)), out, time.Now(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "test_acc.svg")); !os.IsNotExist(err) {
		t.Errorf("plot written without data (%v)", err)
	}
}

func TestMeanStd(t *testing.T) {
	tests := []struct {
		s    Stat
		want string
	}{
		{Stat{N: 0, Mean: math.NaN()}, "–"},
		{Stat{N: 1, Mean: 0.748}, "0.7480"},
		{Stat{N: 1, Mean: 1.14}, "1.140"},
		{Stat{N: 1, Mean: 212}, "212.0"},
		{Stat{N: 1, Mean: 12345}, "12345"},
		{Stat{N: 1, Mean: 2.5e9}, "2.500e+09"},
		{Stat{N: 1, Mean: 0.00001234}, "1.234e-05"},
		{Stat{N: 2, Mean: 0.762, Std: 0}, "0.7620 ± 0"},
		{Stat{N: 2, Mean: 0.8235, Std: 0.0035355}, "0.8235 ± 0.0035"},
		{Stat{N: 3, Mean: 0.77, Std: 0.0177}, "0.770 ± 0.018"},
		{Stat{N: 3, Mean: 1234.5, Std: 56}, "1234 ± 56"},
	}
	for _, tc := range tests {
		if got := meanStd(tc.s); got != tc.want {
			t.Errorf("meanStd(%+v) = %q, want %q", tc.s, got, tc.want)
		}
	}
}

// pngDecode decodes a PNG image.
func pngDecode(b []byte) (image.Image, error) { return png.Decode(bytes.NewReader(b)) }
