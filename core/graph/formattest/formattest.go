// Package formattest is the conformance suite of dataset formats
// (graph.Format, the format.* modules): a format's examples are detected
// as its own, load as declared, survive a round trip through the binary
// file of `strata convert`, honour the memory budget before allocating,
// take splits and feature rows as the format declares, and fail with
// errors that name the file (and its line or array) when broken or
// truncated.
package formattest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/graph/formats"
	"strata/core/safefile"
)

// Test runs the suite on f, which must be registered (Open finds formats
// in the registry) and implement graph.Exampler.
func Test(t *testing.T, f graph.Format) {
	id := graph.FormatID(f)
	sup := f.Supports()
	if sup.Spec == "" || f.StrataModule().Doc == "" {
		t.Errorf("%s: Supports().Spec and the module's Doc must describe the spec form", id)
	}
	ex, ok := f.(graph.Exampler)
	if !ok {
		t.Fatalf("%s (%T) does not implement graph.Exampler: the suite needs its examples", id, f)
	}
	examples, err := ex.Examples(t.TempDir())
	if err != nil {
		t.Fatalf("%s: Examples: %v", id, err)
	}
	var valid []graph.Example
	for _, e := range examples {
		if e.Kind == nil {
			valid = append(valid, e)
		}
	}
	if len(valid) == 0 {
		t.Fatalf("%s: no valid example", id)
	}
	t.Run("Valid", func(t *testing.T) { forEach(t, valid, func(t *testing.T, e graph.Example) { testValid(t, f, e) }) })
	t.Run("Splits", func(t *testing.T) { forEach(t, valid, func(t *testing.T, e graph.Example) { testSplits(t, f, e) }) })
	t.Run("Rows", func(t *testing.T) { forEach(t, valid, func(t *testing.T, e graph.Example) { testRows(t, f, e) }) })
	t.Run("Budget", func(t *testing.T) { forEach(t, valid, func(t *testing.T, e graph.Example) { testBudget(t, f, e) }) })
	t.Run("Broken", func(t *testing.T) {
		forEach(t, examples, func(t *testing.T, e graph.Example) {
			if e.Kind != nil {
				testBroken(t, e)
			}
		})
	})
	t.Run("Truncated", func(t *testing.T) { forEach(t, valid, func(t *testing.T, e graph.Example) { testTruncated(t, e) }) })
}

func forEach(t *testing.T, examples []graph.Example, fn func(t *testing.T, e graph.Example)) {
	for _, e := range examples {
		t.Run(strings.ReplaceAll(e.Name, " ", "-"), func(t *testing.T) { fn(t, e) })
	}
}

// open opens spec through the registry with the budget (0: default).
func open(spec string, budget int64) (*graph.Dataset, error) {
	return graph.OpenContext(graph.WithMaxMemory(context.Background(), budget), spec)
}

// testValid: detected as f's, loads valid and as declared, equals Want,
// and survives the binary round trip.
func testValid(t *testing.T, f graph.Format, e graph.Example) {
	if got, _, err := graph.Detect(e.Spec); err != nil || got == nil || graph.FormatID(got) != graph.FormatID(f) {
		t.Fatalf("%s is detected as %v (%v), want %s", e.Spec, got, err, graph.FormatID(f))
	}
	d, err := open(e.Spec, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(); err != nil {
		t.Fatalf("loaded an invalid dataset: %v", err)
	}
	if d.NumNodes == 0 || d.Graph.NNZ() == 0 {
		t.Fatalf("example %s is empty: %d nodes, %d edges", e.Spec, d.NumNodes, d.Graph.NNZ())
	}
	if f.Supports().GraphOnly != (d.Labels == nil && d.FeatDim == 0) {
		t.Errorf("GraphOnly is %v, but the dataset has %d classes and %d features", f.Supports().GraphOnly, d.NumClasses, d.FeatDim)
	}
	if e.Want != nil {
		if diff := Diff(d, e.Want); diff != "" {
			t.Errorf("loads differently from the example's dataset: %s", diff)
		}
	}
	bin := filepath.Join(t.TempDir(), "rt.strata")
	if err := formats.WriteBinary(bin, d); err != nil {
		t.Fatalf("WriteBinary: %v", err)
	}
	back, closer, err := formats.OpenBinary(bin)
	if err != nil {
		t.Fatalf("reopening the converted file: %v", err)
	}
	defer closer.Close()
	if diff := Diff(back, d); diff != "" {
		t.Errorf("round trip through strata convert's binary: %s", diff)
	}
}

// Diff compares what a dataset holds: nodes, edges, features, labels
// and splits ("" when equal).
func Diff(a, b *graph.Dataset) string {
	rows := func(d *graph.Dataset) [][]int64 {
		out := make([][]int64, d.Graph.NumRows)
		for r := range out {
			for e := d.Graph.Indptr[r]; e < d.Graph.Indptr[r+1]; e++ {
				out[r] = append(out[r], d.Graph.Col(e))
			}
		}
		return out
	}
	switch {
	case a.NumNodes != b.NumNodes:
		return fmt.Sprintf("%d nodes, want %d", a.NumNodes, b.NumNodes)
	case fmt.Sprint(rows(a)) != fmt.Sprint(rows(b)):
		return fmt.Sprintf("edges %v, want %v", rows(a), rows(b))
	case a.FeatDim != b.FeatDim || !slices.Equal(a.Features, b.Features):
		return fmt.Sprintf("features (%d wide) differ from the %d wide ones wanted", a.FeatDim, b.FeatDim)
	case a.NumClasses != b.NumClasses || !slices.Equal(a.Labels, b.Labels):
		return fmt.Sprintf("labels %v (%d classes), want %v (%d)", a.Labels, a.NumClasses, b.Labels, b.NumClasses)
	case !slices.Equal(a.Train, b.Train) || !slices.Equal(a.Valid, b.Valid) || !slices.Equal(a.Test, b.Test):
		return fmt.Sprintf("splits %d/%d/%d, want %d/%d/%d", len(a.Train), len(a.Valid), len(a.Test), len(b.Train), len(b.Valid), len(b.Test))
	}
	return ""
}

// testSplits: a generated split is the labels' (RandomSplit), or refused
// without labels; a named one is read or refused as declared.
func testSplits(t *testing.T, f graph.Format, e graph.Example) {
	d, err := open(e.Spec, 0)
	if err != nil {
		t.Fatal(err)
	}
	rs := graph.RandomSplit{Train: 2, Valid: 1, Seed: 0}
	got, err := open(e.Spec+"@"+rs.String(), 0)
	if d.Labels == nil {
		if !errors.Is(err, graph.ErrSplit) {
			t.Errorf("a generated split of a dataset without labels: %v, want an ErrSplit", err)
		}
	} else {
		if err != nil {
			t.Fatalf("generated split: %v", err)
		}
		if err := rs.Apply(d); err != nil {
			t.Fatal(err)
		}
		if len(got.Train) == 0 || !slices.Equal(got.Train, d.Train) || !slices.Equal(got.Valid, d.Valid) || !slices.Equal(got.Test, d.Test) {
			t.Errorf("@%s gave splits %d/%d/%d, want RandomSplit's %d/%d/%d", rs, len(got.Train), len(got.Valid), len(got.Test), len(d.Train), len(d.Valid), len(d.Test))
		}
	}
	_, err = open(e.Spec+"@no-such-split", 0)
	switch {
	case err == nil:
		t.Errorf("@no-such-split loaded")
	case !f.Supports().NamedSplits && (!errors.Is(err, graph.ErrFormat) || !strings.Contains(err.Error(), "no named splits")):
		t.Errorf("@no-such-split of a format without named splits: %v, want an ErrFormat saying it has no named splits", err)
	case f.Supports().NamedSplits && !strings.Contains(err.Error(), "no-such-split"):
		t.Errorf("@no-such-split: %v does not name the split", err)
	}
}

// testRows: WithFeatureRows keeps those rows, in order; a format that
// declares Rows reads only them itself.
func testRows(t *testing.T, f graph.Format, e graph.Example) {
	full, err := open(e.Spec, 0)
	if err != nil {
		t.Fatal(err)
	}
	rows := []int32{int32(full.NumNodes - 1), 0}
	ctx := graph.WithFeatureRows(context.Background(), rows)
	d, err := graph.OpenContext(ctx, e.Spec)
	if err != nil {
		t.Fatal(err)
	}
	dim := full.FeatDim
	want := []float32{}
	if dim > 0 {
		for _, r := range rows {
			want = append(want, full.Features[int(r)*dim:int(r+1)*dim]...)
		}
	}
	if !slices.Equal(d.FeatureNodes, rows) || !slices.Equal(d.Features, want) {
		t.Errorf("rows %v: FeatureNodes %v and %d values, want the rows' %d", rows, d.FeatureNodes, len(d.Features), len(want))
	}
	if f.Supports().Rows {
		d, err := f.Open(e.Spec, graph.LoadOptions{Ctx: ctx, Budget: graph.DefaultMaxMemory(), Rows: rows, Keep: true})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(d.FeatureNodes, rows) || !slices.Equal(d.Features, want) {
			t.Errorf("declares Rows, but Open with Keep returned FeatureNodes %v and %d values", d.FeatureNodes, len(d.Features))
		}
	}
}

// testBudget: a budget of one byte is refused with ErrRange, by the
// format itself when it declares Budget, otherwise by Open from the size
// of its files.
func testBudget(t *testing.T, f graph.Format, e graph.Example) {
	check := func(how string, d *graph.Dataset, err error) {
		if d != nil || !errors.Is(err, graph.ErrRange) || !strings.Contains(err.Error(), "memory budget") {
			t.Errorf("%s with a budget of 1 byte: %v, want an ErrRange naming the memory budget", how, err)
		}
	}
	if !f.Supports().Budget {
		// Open holds the format to the size of its files; a dataset
		// without files (shipped in the binary) has none to check.
		if graph.SpecBytes(e.Spec) > 1 {
			d, err := open(e.Spec, 1)
			check("Open", d, err)
		}
		return
	}
	d, err := open(e.Spec, 1)
	check("Open", d, err)
	d, err = f.Open(e.Spec, graph.LoadOptions{Ctx: context.Background(), Budget: 1})
	check("the format's Open, which declares Budget,", d, err)
}

// testBroken: the error wraps the example's sentinel, names what it
// says, and a huge declared size is refused before it is allocated.
func testBroken(t *testing.T, e graph.Example) {
	const budget = 64 << 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	d, err := open(e.Spec, budget)
	runtime.ReadMemStats(&after)
	if d != nil || !errors.Is(err, e.Kind) {
		t.Fatalf("%s: %v, want an error wrapping %v", e.Spec, err, e.Kind)
	}
	for _, frag := range e.Err {
		if !strings.Contains(err.Error(), frag) {
			t.Errorf("error %q does not mention %q", err, frag)
		}
	}
	if e.Huge && after.TotalAlloc-before.TotalAlloc > budget/4 {
		t.Errorf("refusing a huge declared size allocated %d bytes; check sizes against the budget before allocating", after.TotalAlloc-before.TotalAlloc)
	}
}

// testTruncated cuts each file of an example at a few lengths: the copy
// loads a valid dataset or fails with a *graph.FileError naming a file of
// the copy, never a panic.
func testTruncated(t *testing.T, e graph.Example) {
	st, err := os.Stat(e.Spec)
	if err != nil {
		return // a spec, not a path
	}
	var files []string
	filepath.WalkDir(e.Spec, func(p string, de os.DirEntry, err error) error {
		if err == nil && de.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	for _, file := range files {
		b, err := safefile.ReadFile(file, 64<<20) // an example input: small
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(e.Spec, file)
		for _, n := range slices.Compact([]int{0, 1, len(b) / 2, max(len(b)-1, 0)}) {
			root := filepath.Join(t.TempDir(), filepath.Base(e.Spec))
			if st.IsDir() {
				if err := os.CopyFS(root, os.DirFS(e.Spec)); err != nil {
					t.Fatal(err)
				}
			}
			cut := filepath.Join(root, rel)
			if !st.IsDir() {
				cut = root
			}
			if err := safefile.WriteFile(cut, b[:n]); err != nil {
				t.Fatal(err)
			}
			d, err := open(root, 64<<20)
			var fe *graph.FileError
			switch {
			case err == nil:
				if verr := d.Validate(); verr != nil {
					t.Errorf("%s cut to %d bytes loaded an invalid dataset: %v", rel, n, verr)
				}
			case !errors.As(err, &fe) || !strings.HasPrefix(fe.File, filepath.Dir(root)):
				t.Errorf("%s cut to %d bytes: %v does not name the file at fault", rel, n, err)
			}
		}
	}
}
