package ogbout_test

import (
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/graph/formats"
	"strata/core/graph/graphtest"
	"strata/core/graph/ogbout"
	"strata/core/graph/synth"
	"strata/core/safefile"
)

// awkward are float32 values whose text forms are hard to round-trip:
// the extremes, subnormals, negative zero, values needing all 9 digits.
var awkward = []float32{
	math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
	float32(math.Copysign(0, -1)), 1.17549435e-38, 1.1754942e-38, 0.1, 1.0 / 3, 16777217, 3.4028234e38,
	math.Nextafter32(1, 2), math.Nextafter32(1, 0), 1e-10, -2.5e15, 7.038531e-26,
}

// rmatDataset is an R-MAT dataset with features (some awkward), labels
// and a split that leaves a third of the nodes unlabelled (-1).
func rmatDataset(t *testing.T) *graph.Dataset {
	d, err := synth.RMAT(synth.RMATOptions{Scale: 9, EdgeFactor: 8, Seed: 3, FeatDim: 7, NumClasses: 5, TrainFrac: .3, ValidFrac: .2, TestFrac: .2})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range awkward {
		d.Features[i*3] = v
	}
	inSplit := make([]bool, d.NumNodes)
	for _, s := range [][]int32{d.Train, d.Valid, d.Test} {
		for _, v := range s {
			inSplit[v] = true
		}
	}
	for i := range d.Labels {
		if !inSplit[i] {
			d.Labels[i] = -1
		}
	}
	return d
}

// datasets are the round-trip cases: features, labels and a split; a
// multigraph (duplicate edges, self loops) with nothing else; an edgeless
// graph; 64-bit column ids.
func datasets(t *testing.T) []*graph.Dataset {
	multi := graphtest.Dataset("multigraph", graphtest.Random(60, 400, 2, true), nil)
	return []*graph.Dataset{rmatDataset(t), multi, graphtest.Dataset("edgeless", graph.FromEdges(12, nil), nil),
		graphtest.Dataset("wide", graphtest.Wide(graphtest.RMAT(7, 4, 1)), []int32{3, 1, 4})}
}

// TestRoundTrip writes each dataset and reads it back with the OGB raw
// loader: the same edges in the same order, features bit for bit, labels
// and split.
func TestRoundTrip(t *testing.T) {
	for _, d := range datasets(t) {
		t.Run(d.Name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			if _, err := ogbout.WriteDir(context.Background(), dir, d, ogbout.Options{Workers: 3}); err != nil {
				t.Fatal(err)
			}
			back, err := formats.LoadOGB(dir, "")
			if err != nil {
				t.Fatal(err)
			}
			sameDataset(t, d, back)
		})
	}
}

// sameDataset compares what the layout holds of want with got.
func sameDataset(t *testing.T, want, got *graph.Dataset) {
	t.Helper()
	if got.NumNodes != want.NumNodes || !slices.Equal(got.Graph.Indptr, want.Graph.Indptr) {
		t.Fatalf("nodes %d, indptr differs: want %d nodes", got.NumNodes, want.NumNodes)
	}
	for e := range want.Graph.NNZ() {
		if got.Graph.Col(e) != want.Graph.Col(e) {
			t.Fatalf("edge %d: column %d, want %d", e, got.Graph.Col(e), want.Graph.Col(e))
		}
	}
	if got.FeatDim != want.FeatDim || len(got.Features) != len(want.Features) {
		t.Fatalf("features %d wide (%d values), want %d (%d)", got.FeatDim, len(got.Features), want.FeatDim, len(want.Features))
	}
	for i, v := range want.Features {
		if math.Float32bits(got.Features[i]) != math.Float32bits(v) {
			t.Fatalf("feature %d: %g (%#x), want %g (%#x)", i, got.Features[i], math.Float32bits(got.Features[i]), v, math.Float32bits(v))
		}
	}
	wantLabels := want.Labels
	if wantLabels == nil {
		wantLabels = slices.Repeat([]int32{-1}, want.NumNodes)
	}
	if !slices.Equal(got.Labels, wantLabels) {
		t.Errorf("labels differ")
	}
	for i, s := range [][2][]int32{{got.Train, want.Train}, {got.Valid, want.Valid}, {got.Test, want.Test}} {
		if len(s[0])+len(s[1]) > 0 && !slices.Equal(s[0], s[1]) {
			t.Errorf("%s split: %d nodes, want %d", graph.SplitName(i), len(s[0]), len(s[1]))
		}
	}
}

// TestBadOutput: an existing output (a directory, empty or not, or a
// file) is refused and left as it was, as are a parent that is not a
// directory, an unwritable directory, an interrupted write and a weighted
// graph; nothing is left behind in the parent.
func TestBadOutput(t *testing.T) {
	d := rmatDataset(t)
	weighted := *d
	weighted.Graph = graphtest.Clone(d.Graph)
	weighted.Graph.Values = make([]float32, d.Graph.NNZ())
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, parent string) string // returns the output path
		ctx   context.Context
		d     *graph.Dataset
		want  error
		msg   string
	}{
		{"existing directory", func(t *testing.T, p string) string { return mkdir(t, p, "out") }, nil, d, safefile.ErrUnsafe, "exists (a directory)"},
		{"existing file", func(t *testing.T, p string) string { return writeFile(t, p, "out") }, nil, d, safefile.ErrUnsafe, "exists (a file)"},
		{"parent is a file", func(t *testing.T, p string) string { return filepath.Join(writeFile(t, p, "f"), "out") }, nil, d, safefile.ErrUnsafe, "not a directory"},
		{"interrupted", func(t *testing.T, p string) string { return filepath.Join(p, "out") }, cancelled, d, context.Canceled, "out"},
		{"weighted", func(t *testing.T, p string) string { return filepath.Join(p, "out") }, nil, &weighted, graph.ErrFormat, "edge weights"},
		{"unwritable directory", func(t *testing.T, p string) string {
			ro := mkdir(t, p, "ro")
			if err := os.Chmod(ro, 0o555); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(ro, 0o755) })
			if os.Geteuid() == 0 {
				t.Skip("root writes into a read-only directory")
			}
			return filepath.Join(ro, "out")
		}, nil, d, os.ErrPermission, "temporary directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			out := c.setup(t, parent)
			before := tree(t, parent)
			ctx := c.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			_, err := ogbout.WriteDir(ctx, out, c.d, ogbout.Options{})
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %v, want %v mentioning %q", err, c.want, c.msg)
			}
			if after := tree(t, parent); !slices.Equal(before, after) {
				t.Errorf("the parent changed: %v, was %v", after, before)
			}
		})
	}
}

// mkdir creates dir/name with a file in it and returns its path.
func mkdir(t *testing.T, dir, name string) string {
	p := filepath.Join(dir, name)
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, p, "keep")
	return p
}

// writeFile writes a small file dir/name and returns its path.
func writeFile(t *testing.T, dir, name string) string {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// tree lists every path under dir.
func tree(t *testing.T, dir string) []string {
	var out []string
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		out = append(out, p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// peerScript parses a dataset directory with the peers' data.py (its
// own parser, _raw_arrays) and dumps the arrays as raw little-endian
// files: edges (int64 pairs), label (int64), feat (float32), the split
// (int64), and the node count data.load finds.
const peerScript = `
import os, sys
sys.path.insert(0, sys.argv[1])
import data
d, out = sys.argv[2], sys.argv[3]
_, a = data._raw_arrays(d, data._pick_split(d, None))
for k in ("edges", "label", "feat", "train", "valid", "test"):
    a[k].astype(a[k].dtype.newbyteorder("<")).tofile(os.path.join(out, k))
open(os.path.join(out, "nodes"), "w").write(str(data.load(d).num_nodes))
`

// TestPeerReadsIt writes the R-MAT dataset and parses it with the
// PyTorch peers' data.py (../shared/peers beside the repository, or
// STRATA_PEERS) when python3 with numpy is there: the same edges in file
// order, labels, split and features bit for bit.
func TestPeerReadsIt(t *testing.T) {
	py, peers := peerPython(t)
	d := rmatDataset(t)
	dir := filepath.Join(t.TempDir(), "rmat")
	if _, err := ogbout.WriteDir(context.Background(), dir, d, ogbout.Options{}); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := exec.Command(py, "-c", peerScript, peers, dir, out)
	cmd.Env = append(os.Environ(), "PEERS_CACHE="+t.TempDir())
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	var edges []int64
	for r := range d.NumNodes {
		for e := d.Graph.Indptr[r]; e < d.Graph.Indptr[r+1]; e++ {
			edges = append(edges, d.Graph.Col(e), int64(r))
		}
	}
	check := func(name string, want []int64) {
		if got := readInt64(t, filepath.Join(out, name)); !slices.Equal(got, want) {
			t.Errorf("%s: the peer read %d values, differing from the %d written", name, len(got), len(want))
		}
	}
	check("edges", edges)
	check("label", widen(d.Labels))
	check("train", widen(d.Train))
	check("valid", widen(d.Valid))
	check("test", widen(d.Test))
	b, err := os.ReadFile(filepath.Join(out, "feat"))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range d.Features {
		if got := binary.LittleEndian.Uint32(b[4*i:]); got != math.Float32bits(v) {
			t.Fatalf("feature %d: the peer read %#x, want %#x (%g)", i, got, math.Float32bits(v), v)
		}
	}
	if n, _ := os.ReadFile(filepath.Join(out, "nodes")); string(n) != "512" {
		t.Errorf("data.load: %q nodes, want 512", n)
	}
}

// peerPython returns a python3 that imports numpy and the peers'
// directory, or skips.
func peerPython(t *testing.T) (string, string) {
	peers := os.Getenv("STRATA_PEERS")
	if peers == "" {
		peers = filepath.Join(filepath.Dir(graphtest.SharedData(t)), "peers")
	}
	if _, err := os.Stat(filepath.Join(peers, "data.py")); err != nil {
		t.Skipf("the peers' data.py is not at %s (set STRATA_PEERS)", peers)
	}
	for _, py := range []string{os.Getenv("STRATA_PYTHON"), "/usr/bin/python3", "python3"} {
		if py != "" && exec.Command(py, "-c", "import numpy").Run() == nil {
			return py, peers
		}
	}
	t.Skip("no python3 with numpy (set STRATA_PYTHON)")
	return "", ""
}

// readInt64 reads a file of little-endian int64 values.
func readInt64(t *testing.T, path string) []int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, len(b)/8)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out
}

// widen converts int32 values to int64.
func widen(v []int32) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

// BenchmarkWriteDir writes an R-MAT graph of 2^15 nodes with 100
// features (about ogbn-products' row width) at gzip levels: the text
// formatting and the compression of convert --to ogb. The MB/s are of
// the uncompressed text (TextBytes).
func BenchmarkWriteDir(b *testing.B) {
	d, err := synth.RMAT(synth.RMATOptions{Scale: 15, EdgeFactor: 25, Seed: 1, FeatDim: 100, NumClasses: 47})
	if err != nil {
		b.Fatal(err)
	}
	for _, level := range []int{gzip.HuffmanOnly, gzip.BestSpeed, gzip.DefaultCompression} {
		b.Run(fmt.Sprintf("level=%d", level), func(b *testing.B) {
			b.SetBytes(ogbout.TextBytes(d))
			parent := b.TempDir()
			for i := range b.N {
				dir := filepath.Join(parent, strconv.Itoa(i))
				if _, err := ogbout.WriteDir(context.Background(), dir, d, ogbout.Options{Level: level}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				b.ReportMetric(float64(dirBytes(b, dir))/float64(ogbout.TextBytes(d)), "ratio")
				os.RemoveAll(dir)
				b.StartTimer()
			}
		})
	}
}

// dirBytes is the size of the files under dir.
func dirBytes(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			st, err := e.Info()
			if err != nil {
				return err
			}
			n += st.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}
