package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	_ "strata/plugins/all" // every built-in plugin

	"strata/core/train"
)

// TestPlotValidation: every [[plot]] problem is an error at its line,
// found when the file is parsed, before anything runs.
func TestPlotValidation(t *testing.T) {
	head := `metrics = ["test_acc", "epoch_time_median_s"]
seeds = [0, 1]
[[axis]]
key = "model.hidden"
values = [8, 16]
[[axis]]
key = "model.name"
values = ["gcn", "sage"]
[[derived]]
name = "d"
metric = "test_acc"
kind = "difference"
baseline = { "model.name" = "gcn" }
[[plot]]
`
	tests := []struct {
		name, plot string
		want       []string
	}{
		{"unknown metric", "x = \"model.hidden\"\ny = \"test_ac\"\n", []string{"exp.toml:16:", `unknown metric "test_ac"`, `did you mean "test_acc"`, `derived columns: "d"`}},
		{"metric not collected", "x = \"model.hidden\"\ny = \"params\"\n", []string{"exp.toml:16:", `plot y = "params": the metric is not collected`}},
		{"x not an axis", "x = \"train.lr\"\ny = \"test_acc\"\n", []string{"exp.toml:15:", `plot x = "train.lr" is not an axis`, `"model.hidden", "model.name", "seed"`}},
		{"x missing", "y = \"test_acc\"\n", []string{"exp.toml:14:", "x is required"}},
		{"series not an axis", "x = \"model.hidden\"\ny = \"test_acc\"\nseries = \"model.layers\"\n", []string{"exp.toml:17:", `plot series = "model.layers" is not an axis`}},
		{"series is x", "x = \"model.hidden\"\ny = \"test_acc\"\nseries = [\"model.hidden\"]\n", []string{"exp.toml:17:", "is also x"}},
		{"derived per seed", "x = \"seed\"\ny = \"d\"\n", []string{"exp.toml:16:", "derived column", "per seed"}},
		{"where not an axis value", "x = \"model.hidden\"\ny = \"test_acc\"\nwhere = { \"model.name\" = \"gat\" }\n", []string{"exp.toml:17:", `model.name = "gat" is not one of the axis values`}},
		{"where on x", "x = \"model.hidden\"\ny = \"test_acc\"\nwhere = { \"model.hidden\" = 8 }\n", []string{"exp.toml:17:", "cannot also be fixed"}},
		{"bad kind", "x = \"model.hidden\"\ny = \"test_acc\"\nkind = \"pie\"\n", []string{"exp.toml:17:", `plot.kind = "pie"`, `"line", "bar"`}},
		{"log of a name", "x = \"model.name\"\ny = \"test_acc\"\nx_log = true\n", []string{"exp.toml:17:", "a log scale needs positive numbers"}},
		{"log bars", "x = \"model.name\"\ny = \"test_acc\"\nkind = \"bar\"\ny_log = true\n", []string{"exp.toml:18:", "bars start at 0"}},
		{"bad file", "x = \"model.hidden\"\ny = \"test_acc\"\nfile = \"../x.png\"\n", []string{"exp.toml:17:", "ending in .svg"}},
		{"unknown key", "x = \"model.hidden\"\ny = \"test_acc\"\nseries_by = \"model.name\"\n", []string{"exp.toml:17:", `unknown key "series_by" in [[plot]]`}},
		{"same file twice", "x = \"model.hidden\"\ny = \"test_acc\"\n[[plot]]\nx = \"model.hidden\"\ny = \"test_acc\"\n", []string{"exp.toml:17:", `plot file "test_acc-by-model.hidden.svg" is also written by the [[plot]] on line 14`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("exp.toml", []byte(exp(head+tc.plot)))
			if err == nil {
				t.Fatalf("Parse succeeded, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
	// A good plot parses, with its default file name.
	e := mustParse(t, exp(head+"x = \"model.hidden\"\ny = \"d\"\nseries = \"model.name\"\n"))
	if len(e.Plots) != 1 || e.Plots[0].File != "d-by-model.hidden.svg" || e.Plots[0].Kind != "line" || e.Plots[0].Line != 14 {
		t.Errorf("plots %+v", e.Plots)
	}
}

// TestKindsAndMetrics: each kind's metrics come from its result type, map
// and list entries included, and are checked against the kind.
func TestKindsAndMetrics(t *testing.T) {
	tests := []struct {
		kind      string
		valid     []string
		invalid   []string
		listed    string
		wantError string
	}{
		{"train", []string{"test_acc", "peak_tier_bytes.device0", "traffic_by_purpose.features", "traffic.host->device0.bytes"},
			[]string{"dataset", "peak_tier_bytes", "traffic.host->device0", "redundancy.x"}, "peak_tier_bytes.<key>", ""},
		{"partition", []string{"cut_fraction", "replication_factor", "part_nodes.3", "layer_redundancy.0"}, []string{"test_acc", "part_nodes.x"}, "node_balance", ""},
		{"partition-batch", []string{"input_redundancy", "edge_balance"}, []string{"hit_ratio"}, "input_redundancy", ""},
		{"hitratio", []string{"hit_ratio", "oracle_hit_ratio", "feature_bytes", "reads"}, []string{"test_acc", "policy"}, "cached_rows", ""},
	}
	for _, tc := range tests {
		k := kindByName(tc.kind)
		if k == nil {
			t.Fatalf("no kind %q", tc.kind)
		}
		for _, m := range tc.valid {
			if !k.validMetric(m) {
				t.Errorf("kind %s: %q should be a metric", tc.kind, m)
			}
		}
		for _, m := range tc.invalid {
			if k.validMetric(m) {
				t.Errorf("kind %s: %q should not be a metric", tc.kind, m)
			}
		}
		if !slices.Contains(k.Metrics(), tc.listed) {
			t.Errorf("kind %s: metrics %q lack %q", tc.kind, k.Metrics(), tc.listed)
		}
	}
	// The kind is checked, and picks the metrics.
	_, err := Parse("exp.toml", []byte(exp("kind = \"partition\"\nmetrics = [\"test_acc\"]\n")))
	if err == nil || !strings.Contains(err.Error(), "exp.toml:2:") || !strings.Contains(err.Error(), `the result of kind "partition"`) {
		t.Errorf("partition kind with test_acc: %v", err)
	}
	_, err = Parse("exp.toml", []byte(exp("kind = \"hitratios\"\nmetrics = [\"hit_ratio\"]\n")))
	if err == nil || !strings.Contains(err.Error(), "exp.toml:1:") || !strings.Contains(err.Error(), `did you mean "hitratio"`) {
		t.Errorf("unknown kind: %v", err)
	}
	_, err = Parse("exp.toml", []byte(exp("metrics = [\"test_acc\"]\n[hitratio]\nsynth_train = 0.1\n")))
	if err == nil || !strings.Contains(err.Error(), "exp.toml:2:") || !strings.Contains(err.Error(), `kind = "hitratio"`) {
		t.Errorf("[hitratio] with kind train: %v", err)
	}
	// Values of a result by metric name.
	rec := &Record{Status: "ok", Result: &train.Result{TestAcc: 0.5, PeakTierBytes: map[string]int64{"device0": 42}}}
	if v, ok := rec.Metric("peak_tier_bytes.device0"); !ok || v != 42 {
		t.Errorf("peak_tier_bytes.device0 = %v, %v", v, ok)
	}
	if v, ok := rec.Metric("test_acc"); !ok || v != 0.5 {
		t.Errorf("test_acc = %v, %v", v, ok)
	}
	if _, ok := rec.Metric("peak_tier_bytes.device1"); ok {
		t.Error("a missing map key has a value")
	}
}

// TestAxisLabelsAndSections: labels name the values; a whole section can
// be an axis of tables; zipped axes may repeat values.
func TestAxisLabelsAndSections(t *testing.T) {
	e := mustParse(t, exp(`
metrics = ["test_acc"]
[[axis]]
key = "model"
values = [{ name = "gcn", hidden = 8 }, { name = "sage", hidden = 8 }, { name = "gcn", hidden = 4 }]
labels = ["GCN", "SAGE", "GCN-4"]
zip = "m"
[[axis]]
key = "train.lr"
values = [0.01, 0.01, 0.02]
zip = "m"
[[derived]]
name = "vs_gcn"
metric = "test_acc"
kind = "difference"
baseline = { "model" = "GCN" }
`))
	p, err := NewPlan(context.Background(), e, "test", check)
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, r := range p.Runs {
		labels = append(labels, r.Label())
	}
	want := []string{"model=GCN train.lr=0.01 seed=0", "model=SAGE train.lr=0.01 seed=0", "model=GCN-4 train.lr=0.02 seed=0"}
	if !slices.Equal(labels, want) {
		t.Errorf("labels %q, want %q", labels, want)
	}
	if c := p.Runs[1].Config; c.Model.Name != "sage" || c.Model.Hidden != 8 || c.Train.LR != 0.01 {
		t.Errorf("run 2: model %s hidden %d lr %v", c.Model.Name, c.Model.Hidden, c.Train.LR)
	}
	rows := Aggregate(p, records(p, func(r *Run) *train.Result { return &train.Result{TestAcc: float64(r.Index)} }))
	if rows[1].Derived[0] != 1 {
		t.Errorf("derived vs the labelled baseline: %v", rows[1].Derived[0])
	}
	for _, bad := range []struct{ text, want string }{
		{"metrics = [\"test_acc\"]\n[[axis]]\nkey = \"model\"\nvalues = [8]\n", "exp.toml:4:"},
		{"metrics = [\"test_acc\"]\n[[axis]]\nkey = \"model.hidden\"\nvalues = [8, 16]\nlabels = [\"a\"]\n", "1 labels for 2 values"},
		{"metrics = [\"test_acc\"]\n[[axis]]\nkey = \"model.hidden\"\nvalues = [8, 16]\nlabels = [\"a\", \"a\"]\n", `label "a" is listed twice`},
	} {
		if _, err := Parse("exp.toml", []byte(exp(bad.text))); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: error %v, want %q", bad.text, err, bad.want)
		}
	}
}

// TestPlotsRender: line and bar [[plot]]s render as SVG with their
// series, x labels and values, each in its file.
func TestPlotsRender(t *testing.T) {
	p, err := NewPlan(context.Background(), mustParse(t, exp(`
name = "r"
metrics = ["test_acc", "peak_rss_bytes"]
seeds = [0, 1]
[[axis]]
key = "model.hidden"
values = [8, 16, 32]
labels = ["h8", "h16", "h32"]
[[axis]]
key = "model.name"
values = ["gcn", "sage"]
[[axis]]
key = "train.lr"
values = [0.1, 0.01]
[[plot]]
x = "model.hidden"
y = "test_acc"
series = "model.name"
where = { "train.lr" = 0.1 }
x_log = true
[[plot]]
x = "model.name"
y = "peak_rss_bytes"
series = "model.hidden"
kind = "bar"
file = "rss.svg"
[[plot]]
x = "seed"
y = "test_acc"
series = ["model.name"]
file = "per-seed.svg"
`)), "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := records(p, func(r *Run) *train.Result {
		return &train.Result{TestAcc: 0.5 + float64(r.Index)/100, PeakRSSBytes: int64(r.Index+1) << 20}
	})
	out := t.TempDir()
	if err := WriteReports(p, recs, out, time.Now(), time.Now()); err != nil {
		t.Fatal(err)
	}
	line := svgOK(t, filepath.Join(out, "test_acc-by-model.hidden-train.lr_0.1.svg"))
	for _, w := range []string{"gcn", "sage", "h8", "h32", "test_acc", "train.lr = 0.1"} {
		if !strings.Contains(line, w) {
			t.Errorf("line plot lacks %q: %q", w, line)
		}
	}
	bar := svgOK(t, filepath.Join(out, "rss.svg"))
	for _, w := range []string{"h8", "h16", "h32", "gcn", "sage", "MiB"} {
		if !strings.Contains(bar, w) {
			t.Errorf("bar plot lacks %q: %q", w, bar)
		}
	}
	// Axes the plot does not name split the series.
	perSeed := svgOK(t, filepath.Join(out, "per-seed.svg"))
	if !strings.Contains(perSeed, "model.name=gcn model.hidden=h8 train.lr=0.1") {
		t.Errorf("per-seed plot: %q", perSeed)
	}
	// Without [[plot]], no default plot is written next to them.
	if _, err := os.Stat(filepath.Join(out, "test_acc.svg")); !os.IsNotExist(err) {
		t.Errorf("default plot written beside [[plot]]s (%v)", err)
	}
}

// TestReportHTML: report.html is well-formed, self-contained, and holds
// the description, the table, every plot inline, the failed runs and the
// provenance.
func TestReportHTML(t *testing.T) {
	p, err := NewPlan(context.Background(), mustParse(t, exp(`
name = "html"
description = "A <sweep> & its report."
metrics = ["test_acc", "peak_rss_bytes"]
seeds = [0, 1]
[[axis]]
key = "model.hidden"
values = [8, 16]
[[axis]]
key = "model.name"
values = ["gcn", "sage"]
[[derived]]
name = "acc_vs_gcn"
metric = "test_acc"
kind = "difference"
baseline = { "model.name" = "gcn" }
`)), "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := records(p, func(r *Run) *train.Result {
		return &train.Result{TestAcc: 0.7 + float64(r.Index)/100, PeakRSSBytes: 100 << 20}
	})
	recs[3] = &Record{RunID: p.Runs[3].ID, Status: "failed", Error: "out of <memory>"}
	out := t.TempDir()
	if err := WriteReports(p, recs, out, time.Now(), time.Now()); err != nil {
		t.Fatal(err)
	}
	page := mustRead(t, filepath.Join(out, "report.html"))

	// Well-formed: it parses as XML (strict), one html root.
	d := xml.NewDecoder(bytes.NewReader(page))
	var roots, svgs int
	depth := 0
	var text strings.Builder
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("report.html is not well-formed: %v", err)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
				if x.Name.Local != "html" {
					t.Errorf("root element %q", x.Name.Local)
				}
			}
			if x.Name.Local == "svg" {
				svgs++
			}
			for _, a := range x.Attr {
				if (a.Name.Local == "src" || a.Name.Local == "href") && regexp.MustCompile(`^(https?:)?//`).MatchString(a.Value) {
					t.Errorf("external resource: <%s %s=%q>", x.Name.Local, a.Name.Local, a.Value)
				}
			}
			if x.Name.Local == "script" || x.Name.Local == "link" || x.Name.Local == "img" || x.Name.Local == "iframe" {
				t.Errorf("<%s> in a self-contained report", x.Name.Local)
			}
			depth++
		case xml.EndElement:
			depth--
		case xml.CharData:
			text.Write(x)
		}
	}
	if roots != 1 || depth != 0 {
		t.Errorf("%d root elements, depth %d at the end", roots, depth)
	}
	if bytes.Contains(page, []byte("url(")) || bytes.Contains(page, []byte("@import")) {
		t.Error("the style loads something")
	}
	// Every plot, inline.
	plots, _ := filepath.Glob(filepath.Join(out, "*.svg"))
	if len(plots) != 2 || svgs != len(plots) {
		t.Errorf("%d plot files, %d inline <svg>", len(plots), svgs)
	}
	for _, f := range plots {
		if !bytes.Contains(page, []byte(`<a href="`+filepath.Base(f)+`"`)) {
			t.Errorf("no link to %s", filepath.Base(f))
		}
	}
	body := text.String()
	for _, w := range []string{
		"A <sweep> & its report.",      // the description, escaped and read back
		"0.7050 ± 0.0071", "100.0 ± 0", // summary cells (MiB for bytes)
		"acc_vs_gcn", "test accuracy at the epoch of best validation accuracy", // columns explained
		"out of <memory>", "1 failed", // the failed run
		"git commit", "Go", runtime.Version(), // provenance
		"embedded:cora", // the dataset
	} {
		if !strings.Contains(body, w) {
			t.Errorf("report.html lacks %q", w)
		}
	}
}

// TestProvenanceDatasets: provenance.json lists each dataset the runs read
// with the SHA-256 of its files, or its generator.
func TestProvenanceDatasets(t *testing.T) {
	p, err := NewPlan(context.Background(), mustParse(t, exp(`
metrics = ["test_acc"]
[[axis]]
key = "data.dataset"
values = ["embedded:cora", "rmat-8-4-8-2-0"]
[[axis]]
key = "model.hidden"
values = [4, 8]
`)), "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	m := &memo{}
	if err := writeReports(p, make([]*Record, len(p.Runs)), out, time.Now(), time.Now(), m); err != nil {
		t.Fatal(err)
	}
	var prov Provenance
	if err := json.Unmarshal(mustRead(t, filepath.Join(out, "provenance.json")), &prov); err != nil {
		t.Fatal(err)
	}
	if len(prov.Datasets) != 2 {
		t.Fatalf("datasets %+v", prov.Datasets)
	}
	cora, rmat := prov.Datasets[0], prov.Datasets[1]
	if cora.Spec != "embedded:cora" || cora.Runs != 2 || len(cora.Files) != 8 || cora.Files[0].Path != "embedded:cora/raw/edge.csv.gz" ||
		len(cora.Files[0].SHA256) != 64 || cora.Files[0].Bytes == 0 {
		t.Errorf("cora %+v", cora)
	}
	if rmat.Spec != "rmat-8-4-8-2-0" || len(rmat.Files) != 0 || !strings.Contains(rmat.Generator, "scale 8, edge factor 4") {
		t.Errorf("rmat %+v", rmat)
	}
	if prov.Runs[0].Dataset != "embedded:cora" || prov.Runs[3].Dataset != "rmat-8-4-8-2-0" {
		t.Errorf("runs %+v", prov.Runs)
	}
	// Hashed once per invocation.
	if len(m.hashes) != 8 {
		t.Errorf("%d hashes cached", len(m.hashes))
	}
}

// TestHitRatioKind measures embedded Cora: the full cache serves every
// read, no cache moves every read's features, and the store agrees.
func TestHitRatioKind(t *testing.T) {
	e := mustParse(t, `
kind = "hitratio"
metrics = ["hit_ratio", "oracle_hit_ratio", "feature_bytes"]
seeds = [1]
[[axis]]
key = "cache.name"
values = ["degree", "random", "lru"]
[[axis]]
key = "cache.capacity"
values = [0.0, 0.1, 1.0]
[base.data]
dataset = "embedded:cora"
[base.model]
layers = 2
[base.train]
mode = "minibatch"
batch_size = 64
[base.sampler]
name = "uniform"
fanouts = [5, 5]
[base.cache]
name = "degree"
`)
	p, err := NewPlan(context.Background(), e, "test", check)
	if err != nil {
		t.Fatal(err)
	}
	sum, recs, err := Execute(context.Background(), p, Options{OutDir: t.TempDir()})
	if err != nil || sum.Executed != 9 || sum.Failed != 0 {
		t.Fatalf("%+v, %v", sum, err)
	}
	get := func(i int, m string) float64 {
		v, ok := recs[i].Metric(m)
		if !ok {
			t.Fatalf("run %s: no %s", p.Runs[i].Label(), m)
		}
		return v
	}
	reads := get(0, "reads")
	features := get(0, "features")
	for i, r := range p.Runs {
		hit, oracle, bytes := get(i, "hit_ratio"), get(i, "oracle_hit_ratio"), get(i, "feature_bytes")
		if hit > oracle+1e-12 {
			t.Errorf("%s: hit ratio %v above the oracle %v", r.Label(), hit, oracle)
		}
		if want := math.Round((1 - hit) * reads * features * 4); math.Abs(bytes-want) > 0.5 {
			t.Errorf("%s: %v feature bytes, want %v", r.Label(), bytes, want)
		}
		switch r.Config.Cache.Options["capacity"] {
		case 0.0:
			if hit != 0 {
				t.Errorf("%s: hit ratio %v without a cache", r.Label(), hit)
			}
		case 1.0:
			if r.Config.Cache.Name != "lru" && hit != 1 {
				t.Errorf("%s: hit ratio %v with every row cached", r.Label(), hit)
			}
		}
	}
	// Degree beats random at 10%.
	if get(1, "hit_ratio") <= get(4, "hit_ratio") {
		t.Errorf("degree %v, random %v at 10%%", get(1, "hit_ratio"), get(4, "hit_ratio"))
	}
	// Deterministic: a fresh invocation gives the same numbers.
	_, again, err := Execute(context.Background(), p, Options{OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		a, _ := json.Marshal(recs[i].Result.(*HitRatio).HitRatio)
		b, _ := json.Marshal(again[i].Result.(*HitRatio).HitRatio)
		if !bytes.Equal(a, b) {
			t.Errorf("run %d: %s then %s", i, a, b)
		}
	}
	// A missing [cache] is found before any run.
	e2 := mustParse(t, exp("kind = \"hitratio\"\nmetrics = [\"hit_ratio\"]\n"))
	if _, err := NewPlan(context.Background(), e2, "test", check); err == nil || !strings.Contains(err.Error(), "[cache] policy") {
		t.Errorf("no cache: %v", err)
	}
}

// TestPartitionKinds partitions Cora's graph and its training batch.
func TestPartitionKinds(t *testing.T) {
	for _, kind := range []string{"partition", "partition-batch"} {
		e := mustParse(t, `
kind = "`+kind+`"
metrics = ["edge_balance", "node_balance"]
[[axis]]
key = "partition.name"
values = ["range", "random"]
[base.data]
dataset = "embedded:cora"
[base.train]
micro_batches = 4
[base.partition]
name = "range"
`)
		p, err := NewPlan(context.Background(), e, "test", check)
		if err != nil {
			t.Fatal(err)
		}
		sum, recs, err := Execute(context.Background(), p, Options{OutDir: t.TempDir()})
		if err != nil || sum.Executed != 2 {
			t.Fatalf("%s: %+v %v", kind, sum, err)
		}
		if v, ok := recs[0].Metric("k"); !ok || v != 4 {
			t.Errorf("%s: k = %v", kind, v)
		}
		if kind == "partition-batch" {
			if v, ok := recs[0].Metric("input_redundancy"); !ok || v < 1 {
				t.Errorf("input_redundancy %v", v)
			}
		}
	}
	// micro_batches = 1 cannot give K parts: an error before any run.
	e := mustParse(t, exp("kind = \"partition\"\nmetrics = [\"edge_cut\"]\n[[axis]]\nkey = \"partition.name\"\nvalues = [\"range\"]\n"))
	if _, err := NewPlan(context.Background(), e, "test", check); err == nil || !strings.Contains(err.Error(), "micro_batches") {
		t.Errorf("K = 1: %v", err)
	}
}
