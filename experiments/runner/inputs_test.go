package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"strata/core/safefile"
)

// TestReportsNeverOverwriteInputs puts an input of the experiment (the
// experiment file, its base config, its dataset) in the results directory
// under the name of a report: Execute refuses before running anything,
// naming the input, and the file is left as it was.
func TestReportsNeverOverwriteInputs(t *testing.T) {
	const head = "name = \"clash\"\nmetrics = [\"test_acc\"]\nseeds = [0]\n[[axis]]\nkey = \"model.hidden\"\nvalues = [8, 16]\n"
	const config = "[data]\ndataset = \"embedded:cora\"\n[train]\nepochs = 2\n"
	cases := []struct {
		name  string
		files map[string]string // written into the results directory
		exp   string            // the experiment file's name there
	}{
		{"experiment file", nil, "summary.md"},
		{"base config", map[string]string{"report.html": config}, "e.toml"},
		{"dataset", map[string]string{"results.csv": "0 1\n1 2\n2 0\n"}, "e.toml"},
		{"plot", nil, "test_acc.svg"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			for name, text := range c.files {
				if err := os.WriteFile(filepath.Join(out, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			text := head + "\n" + base
			switch {
			case c.files["report.html"] != "":
				text = "base = \"report.html\"\n" + head
			case c.files["results.csv"] != "":
				text = head + "\n" + strings.Replace(base, `dataset = "embedded:cora"`, `dataset = "results.csv"`, 1)
			}
			file := filepath.Join(out, c.exp)
			if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			var f fakeTrain
			_, _, err := Execute(context.Background(), loadPlan(t, file), Options{OutDir: out, Train: f.run})
			if !errors.Is(err, safefile.ErrUnsafe) || !strings.Contains(err.Error(), "same file as the input") {
				t.Fatalf("err = %v, want a refusal naming the input", err)
			}
			if f.total() != 0 {
				t.Errorf("%d runs ran before the refusal", f.total())
			}
			if b, err := os.ReadFile(file); err != nil || string(b) != text {
				t.Errorf("the experiment file changed: %v", err)
			}
			for name, want := range c.files {
				if b, err := os.ReadFile(filepath.Join(out, name)); err != nil || string(b) != want {
					t.Errorf("%s changed: %v", name, err)
				}
			}
		})
	}
}

// TestReportFilesListed: every file the reports write is in reportFiles,
// the list checked against the inputs before the runs.
func TestReportFilesListed(t *testing.T) {
	out := t.TempDir()
	p := fakePlan(t)
	var f fakeTrain
	if _, _, err := Execute(context.Background(), p, Options{OutDir: out, Train: f.run}); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	listed := p.reportFiles()
	for _, e := range ents {
		if e.Name() == "runs" || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if !slices.Contains(listed, e.Name()) {
			t.Errorf("%s is written but not in reportFiles %v", e.Name(), listed)
		}
	}
}

// loadPlan loads an experiment file and plans it without checking the
// generated configs.
func loadPlan(t testing.TB, file string) *Plan {
	t.Helper()
	e, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(context.Background(), e, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
