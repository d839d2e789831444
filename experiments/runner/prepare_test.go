package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"strata/core/config"
	"strata/core/graph/formats"
)

// prepareExp is an experiment whose runs read a prepared .strata file.
func prepareExp(spec string) string {
	return `
name = "prep"
metrics = ["test_acc"]
[[prepare]]
dataset = "` + spec + `"
file = "data/cora.strata"
[[axis]]
key = "model.hidden"
values = [8, 16]
[base]
[base.data]
dataset = "data/cora.strata"
`
}

// TestPrepare makes the file once, reuses it, and refuses to replace a
// file made from another spec or not made by strata.
func TestPrepare(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "e.toml")
	run := func(spec string) error {
		e, err := Parse(file, []byte(prepareExp(spec)))
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewPlan(context.Background(), e, "test", nil)
		if err != nil {
			t.Fatal(err)
		}
		var f fakeTrain
		_, _, err = Execute(context.Background(), p, Options{OutDir: filepath.Join(dir, "out-"+spec[len(spec)-4:]), Train: f.run})
		return err
	}
	data := filepath.Join(dir, "data", "cora.strata")
	if err := run("embedded:cora"); err != nil {
		t.Fatal(err)
	}
	if !formats.IsBinary(data) {
		t.Fatalf("%s is not a .strata file", data)
	}
	st0, _ := os.Stat(data)
	time.Sleep(10 * time.Millisecond)
	if err := run("embedded:cora"); err != nil {
		t.Fatal(err)
	}
	if st1, _ := os.Stat(data); !st1.ModTime().Equal(st0.ModTime()) {
		t.Error("a prepared file with the same spec was written again")
	}
	var ce *config.Error
	if err := run("embedded:citeseer"); !errors.As(err, &ce) || ce.Key != "prepare.file" || !strings.Contains(err.Error(), "embedded:cora") {
		t.Errorf("another spec: %v, want an error on prepare.file naming the old spec", err)
	}
	if err := os.Remove(data + ".source"); err != nil {
		t.Fatal(err)
	}
	if err := run("embedded:cora"); !errors.As(err, &ce) || !strings.Contains(err.Error(), "exists") {
		t.Errorf("a file strata did not prepare: %v, want a refusal", err)
	}
	if st1, _ := os.Stat(data); !st1.ModTime().Equal(st0.ModTime()) {
		t.Error("a file strata did not prepare was overwritten")
	}
}

// TestPrepareRejects checks the [[prepare]] tables' errors.
func TestPrepareRejects(t *testing.T) {
	for _, c := range []struct{ name, tables, want string }{
		{"not .strata", "[[prepare]]\ndataset = \"embedded:cora\"\nfile = \"data/cora.bin\"\n", "ending in .strata"},
		{"absolute", "[[prepare]]\ndataset = \"embedded:cora\"\nfile = \"/tmp/cora.strata\"\n", "relative path"},
		{"empty spec", "[[prepare]]\ndataset = \" \"\nfile = \"data/cora.strata\"\n", "dataset spec"},
		{"twice", "[[prepare]]\ndataset = \"embedded:cora\"\nfile = \"a.strata\"\n[[prepare]]\ndataset = \"embedded:citeseer\"\nfile = \"a.strata\"\n", "also prepared"},
		{"no file", "[[prepare]]\ndataset = \"embedded:cora\"\n", "file"},
	} {
		_, err := Parse("exp.toml", []byte(exp("name = \"p\"\nmetrics = [\"test_acc\"]\n"+c.tables)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}
