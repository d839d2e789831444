package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"strata/core/config"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/published.golden.json from the current parser")

// goldenExperiment is what an experiment file parses to, in a form that
// compares as text: every field of the Experiment and the plan's runs with
// their content hashes.
type goldenExperiment struct {
	File        string         `json:"file"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Kind        string         `json:"kind"`
	KindLine    int            `json:"kind_line"`
	HitRatio    float64        `json:"hitratio_synth_train"`
	BasePath    string         `json:"base_path"`
	BaseLine    int            `json:"base_line"`
	Axes        []goldenAxis   `json:"axes"`
	Seeds       []int64        `json:"seeds"`
	SeedsLine   int            `json:"seeds_line"`
	Metrics     []string       `json:"metrics"`
	MetricsLine int            `json:"metrics_line"`
	Derived     []goldenDerive `json:"derived"`
	Plots       []goldenPlot   `json:"plots"`
	Runs        []goldenRun    `json:"runs"`
}

type goldenAxis struct {
	Key                       string   `json:"key"`
	Path                      []string `json:"path"`
	Values                    []string `json:"values"` // config.TOMLValue of each
	Zip                       string   `json:"zip"`
	Labels                    []string `json:"labels"`
	Line, KeyLine, ValuesLine int
}

type goldenDerive struct {
	Name, Metric, Kind, Baseline string
	Line                         int
}

type goldenPlot struct {
	X, Y       string
	Series     []string
	Where      string
	Kind       string
	Title      string
	XLabel     string
	YLabel     string
	XLog, YLog bool
	File       string
	Line       int
}

type goldenRun struct {
	Label string `json:"label"`
	ID    string `json:"id"`
}

func golden(t *testing.T, file string) goldenExperiment {
	t.Helper()
	e, err := Load(file)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	g := goldenExperiment{
		File: filepath.ToSlash(file), Name: e.Name, Description: e.Description, Kind: e.Kind.Name, KindLine: e.KindLine,
		HitRatio: e.HitRatio.SynthTrain, BasePath: filepath.ToSlash(e.BasePath), BaseLine: e.BaseLine,
		Seeds: e.Seeds, SeedsLine: e.seedsLine, Metrics: e.Metrics, MetricsLine: e.metricsLine,
	}
	for _, a := range e.Axes {
		ga := goldenAxis{Key: a.Key, Path: a.Path, Zip: a.Zip, Labels: a.Labels, Line: a.Line, KeyLine: a.KeyLine, ValuesLine: a.ValuesLine}
		for _, v := range a.Values {
			ga.Values = append(ga.Values, config.TOMLValue(v))
		}
		g.Axes = append(g.Axes, ga)
	}
	for _, d := range e.Derived {
		g.Derived = append(g.Derived, goldenDerive{d.Name, d.Metric, d.Kind, config.TOMLValue(d.Baseline), d.Line})
	}
	for _, p := range e.Plots {
		w := ""
		if p.Where != nil {
			w = config.TOMLValue(p.Where)
		}
		g.Plots = append(g.Plots, goldenPlot{p.X, p.Y, p.Series, w, p.Kind, p.Title, p.XLabel, p.YLabel, p.XLog, p.YLog, p.File, p.Line})
	}
	// The version is fixed so that the hashes depend on the configs only.
	p, err := NewPlan(context.Background(), e, "golden", nil)
	if err != nil {
		t.Fatalf("%s: NewPlan: %v", file, err)
	}
	for _, r := range p.Runs {
		g.Runs = append(g.Runs, goldenRun{r.Label(), r.ID})
	}
	return g
}

// TestPublishedExperimentsGolden: every published experiment
// (experiments/*.toml) parses to the experiment and the runs, with their
// content hashes, recorded in testdata/published.golden.json. The golden
// file was written by the hand-written parser that the strict decoder
// replaced; resuming depends on the hashes staying the same.
func TestPublishedExperimentsGolden(t *testing.T) {
	files, err := filepath.Glob("../*.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no published experiments (%v)", err)
	}
	var all []goldenExperiment
	for _, f := range files {
		all = append(all, golden(t, f))
	}
	got, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "published.golden.json")
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		var w []goldenExperiment
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		for i := range max(len(w), len(all)) {
			if i >= len(w) || i >= len(all) {
				t.Errorf("%d experiments, golden has %d", len(all), len(w))
				break
			}
			a, _ := json.Marshal(all[i])
			b, _ := json.Marshal(w[i])
			if !bytes.Equal(a, b) {
				t.Errorf("%s differs from the golden file:\n got: %s\nwant: %s", all[i].File, a, b)
			}
		}
		if !t.Failed() {
			t.Errorf("output differs from %s in form only; rerun with -update if intended", path)
		}
	}
}

// TestPublishedCheckSubsets: every published experiment says what it
// mirrors and declares a [check] subset, with why, that CI's make
// experiments-check reruns; the subset is a part of the sweep (at most a
// third of its runs, or one run).
func TestPublishedCheckSubsets(t *testing.T) {
	files, err := filepath.Glob("../*.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no published experiments (%v)", err)
	}
	for _, f := range files {
		p := loadPlan(t, f)
		e := p.Exp
		n := len(p.Subset())
		switch {
		case e.Mirrors == "":
			t.Errorf("%s: no mirrors = \"...\" (what it reproduces, for the index of experiments/README.md)", f)
		case n == 0 || e.Check.Why == "":
			t.Errorf("%s: no [check] runs with why: declare the cheap runs make experiments-check reruns", f)
		case n > max(1, len(p.Runs)/3):
			t.Errorf("%s: the [check] subset has %d of %d runs; keep it to the cheap ones", f, n, len(p.Runs))
		}
	}
}
