package strategytests

import (
	"archive/zip"
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"strata/core/config"
	"strata/core/graph"
	"strata/core/graph/numpy"
	"strata/core/train"
	"strata/plugins/strategy/internal/testkit"
)

// writeCoraSplit writes Cora as a .npy directory and, in its
// split_edge/s0, the split data.edge_split = random-85-5-10-seed0 gives
// (as strata split-edges does). It returns the split's directory.
func writeCoraSplit(t *testing.T) (string, *graph.EdgeSplit) {
	t.Helper()
	cfg := testkit.MustParse(t, linkBase, "data.edge_split=random-85-5-10-seed0")
	s, err := train.EdgeSplitOf(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := graph.Open("embedded:cora")
	if err != nil {
		t.Fatal(err)
	}
	cora := filepath.Join(t.TempDir(), "cora")
	if _, err := numpy.WriteNPYDir(cora, ds); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cora, "split_edge", "s0")
	if _, err := numpy.WriteEdgeSplitDir(context.Background(), dir, s); err != nil {
		t.Fatal(err)
	}
	return dir, s
}

// sameRun fails unless two link runs agree bit for bit in every figure.
func sameRun(t *testing.T, what string, a, b *train.Result) {
	t.Helper()
	if a.FinalLoss != b.FinalLoss || a.TrainAcc != b.TrainAcc || a.BestValidAcc != b.BestValidAcc || a.TestAcc != b.TestAcc ||
		a.BestEpoch != b.BestEpoch || !maps.Equal(a.Metrics, b.Metrics) || len(a.Metrics) == 0 {
		t.Fatalf("%s: loss %v vs %v, AUC train %v vs %v, valid %v vs %v, test %v vs %v, metrics %v vs %v", what,
			a.FinalLoss, b.FinalLoss, a.TrainAcc, b.TrainAcc, a.BestValidAcc, b.BestValidAcc, a.TestAcc, b.TestAcc, a.Metrics, b.Metrics)
	}
}

// TestLinkShippedRoundTrip writes a generated split and trains on it as
// a shipped split, named (split_edge/s0 of the dataset's directory) and
// by its path: three epochs on Cora give the generated split's run bit
// for bit (the same pairs, negatives, training sample and graph).
func TestLinkShippedRoundTrip(t *testing.T) {
	dir, _ := writeCoraSplit(t)
	cora := filepath.Dir(filepath.Dir(dir))
	sets := []string{"train.epochs=3"}
	gen := runLink(t, linkBase, append(sets, "data.edge_split=random-85-5-10-seed0")...)
	named := runLink(t, linkBase, append(sets, "data.dataset="+cora, "data.edge_split=s0")...)
	sameRun(t, "generated vs stored split, by name", gen, named)
	byPath := runLink(t, linkBase, append(sets, "data.edge_split="+dir)...)
	sameRun(t, "generated vs stored split, by path", gen, byPath)
	npz := writeSplitNPZ(t, dir)
	byNPZ := runLink(t, linkBase, append(sets, "data.edge_split="+npz)...)
	sameRun(t, "generated vs stored split, as a .npz", gen, byNPZ)
}

// writeSplitNPZ packs the .npy files of the split directory dir into a
// .npz archive (numpy.savez's layout: a zip of <name>.npy entries).
func writeSplitNPZ(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "split.npz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	for _, p := range graph.EdgeSplitParts {
		b, err := os.ReadFile(filepath.Join(dir, p+".npy"))
		if err != nil {
			t.Fatal(err)
		}
		w, err := zw.Create(p + ".npy")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLinkShippedNoLeak trains on a shipped split of Cora twice: with
// Cora's graph as input, every edge in both directions (as PyG stores
// it), where message passing could see every held-out edge and its
// reverse unless the split hides them, and with every held-out edge and
// its reverse removed from that input, where it cannot. A split that left
// any of them to message passing would make its model score them
// differently: the runs must be equal bit for bit.
func TestLinkShippedNoLeak(t *testing.T) {
	dir, s := writeCoraSplit(t)
	ds, err := graph.Open("embedded:cora")
	if err != nil {
		t.Fatal(err)
	}
	held := map[[2]int64]bool{}
	for _, p := range []graph.Pairs{s.Valid, s.Test} {
		for i := range p.Src {
			u, v := int64(p.Src[i]), int64(p.Dst[i])
			held[[2]int64{u, v}], held[[2]int64{v, u}] = true, true
		}
	}
	g, _ := numpy.BothDirections(ds.Graph)
	var edges [][2]int64
	for dst := range g.NumRows {
		for e := g.Indptr[dst]; e < g.Indptr[dst+1]; e++ {
			if k := [2]int64{g.Col(e), int64(dst)}; !held[k] {
				edges = append(edges, k)
			}
		}
	}
	if removed := g.NNZ() - int64(len(edges)); removed != int64(2*(s.Valid.Len()+s.Test.Len())) {
		t.Fatalf("removed %d entries, want both directions of the %d held-out pairs", removed, s.Valid.Len()+s.Test.Len())
	}
	inputs := [2]string{filepath.Join(t.TempDir(), "cora-both-ways"), filepath.Join(t.TempDir(), "cora-without-heldout")}
	for i, gr := range []*graph.CSR{g, graph.FromEdges(ds.NumNodes, edges)} {
		ds.Graph = gr
		if _, err := numpy.WriteNPYDir(inputs[i], ds); err != nil {
			t.Fatal(err)
		}
	}
	sets := []string{"train.epochs=3", "data.edge_split=" + dir}
	seen := runLink(t, strings.Replace(linkBase, `"embedded:cora"`, `"`+inputs[0]+`"`, 1), sets...)
	unseen := runLink(t, strings.Replace(linkBase, `"embedded:cora"`, `"`+inputs[1]+`"`, 1), sets...)
	sameRun(t, "held-out edges in the input vs removed from it", seen, unseen)
}

// TestLinkShippedBadInput: each mistake of a shipped split is a config
// error naming the key (exit 2) and, for a bad file, the file.
func TestLinkShippedBadInput(t *testing.T) {
	good, _ := writeCoraSplit(t)
	cora := filepath.Dir(filepath.Dir(good)) // holds split_edge/s0
	overlap := copySplit(t, good)
	if err := os.Rename(filepath.Join(overlap, "valid.npy"), filepath.Join(overlap, "test.npy")); err != nil { // test = valid, in both
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(overlap, "test.npy"), filepath.Join(overlap, "valid.npy")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		sets []string
		key  string
		want string
	}{
		{"name without a dataset directory", []string{"data.edge_split=s0"}, "data.edge_split", "no directory"},
		{"no such named split", []string{"data.dataset=" + cora, "data.edge_split=s1"}, "data.edge_split", "available: s0"},
		{"no such path", []string{"data.edge_split=" + good + "x"}, "data.edge_split", good + "x"},
		{"pair in two splits", []string{"data.edge_split=" + overlap}, "data.edge_split", "also in " + filepath.Join(overlap, "valid.npy")},
		{"split of a larger graph", []string{"data.dataset=rmat-8", "data.edge_split=" + good}, "data.edge_split", "outside [0,256)"},
		{"shipped split with renumbered nodes", []string{"data.edge_split=" + good, "data.reorder=degree"}, "data.reorder", "renumbers"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := linkConfigError(t, c.sets...)
			if !strings.Contains(err.Error(), c.key) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v; want a config error naming %s and saying %q", err, c.key, c.want)
			}
		})
	}
}

// linkConfigError parses linkBase with sets and runs it: it returns the
// config error (exit 2) that either gives, and fails on anything else.
func linkConfigError(t *testing.T, sets ...string) error {
	t.Helper()
	cfg, err := config.Parse("test.toml", []byte(linkBase), sets...)
	if err == nil {
		cfg.Output.Progress = "off"
		_, err = train.Run(context.Background(), cfg, train.Options{Host: testkit.TestHost(t)})
	}
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v; want a config error", err)
	}
	return err
}

// copySplit copies the split directory dir into a new one.
func copySplit(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "copy")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range graph.EdgeSplitParts {
		b, err := os.ReadFile(filepath.Join(dir, p+".npy"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, p+".npy"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
