package main

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strata/core/graph"
	"strings"
	"testing"
	"time"

	"codeberg.org/sbinet/npyio/npz"
)

// shchurNPZ writes a 12-node graph in the Shchur et al. .npz layout (a
// ring, sparse one-hot attributes, 3 classes) with npyio and returns its
// path. edit may change the arrays first.
func shchurNPZ(t *testing.T, edit func(m map[string]any)) string {
	t.Helper()
	const n = 12
	var indptr, indices []int32
	var data []float32
	for i := 0; i < n; i++ {
		indptr = append(indptr, int32(len(indices)))
		indices = append(indices, int32((i+1)%n), int32((i+n-1)%n))
		data = append(data, 1, 1)
	}
	indptr = append(indptr, int32(len(indices)))
	attrPtr, attrIdx, attrData, labels := []int32{0}, []int32{}, []float32{}, []int64{}
	for i := 0; i < n; i++ {
		attrIdx = append(attrIdx, int32(i%3))
		attrData = append(attrData, 1)
		attrPtr = append(attrPtr, int32(len(attrIdx)))
		labels = append(labels, int64(i%3))
	}
	m := map[string]any{
		"adj_data.npy": data, "adj_indices.npy": indices, "adj_indptr.npy": indptr, "adj_shape.npy": []int64{n, n},
		"attr_data.npy": attrData, "attr_indices.npy": attrIdx, "attr_indptr.npy": attrPtr, "attr_shape.npy": []int64{n, 3},
		"labels.npy": labels,
	}
	if edit != nil {
		edit(m)
	}
	path := filepath.Join(t.TempDir(), "amazon_tiny.npz")
	if err := npz.Write(path, m); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDatasetFormats runs the CLI on the dataset formats of docs/datasets.md:
// each good case exits 0, each bad one exits 2 naming the file, the array
// or key at fault, and the fix.
func TestDatasetFormats(t *testing.T) {
	train := func(t *testing.T, sets ...string) []string {
		args := append([]string{"train", "-c", conf(t, cora), "--set", "train.epochs=2", "--set", "output.progress=off"}, wasmArgs()...)
		for _, s := range sets {
			args = append(args, "--set", s)
		}
		return args
	}
	cases := []struct {
		name string
		args func(t *testing.T) []string
		code int
		want []string // in stdout for exit 0, in stderr otherwise
	}{
		{"npz/with-split", func(t *testing.T) []string {
			return train(t, "data.dataset="+shchurNPZ(t, nil), "data.split=random-2-1-seed0")
		}, 0, []string{`"dataset":"amazon_tiny"`}},
		{"npz/split-in-spec", func(t *testing.T) []string {
			return train(t, "data.dataset="+shchurNPZ(t, nil)+"@random-2-1-seed0")
		}, 0, []string{`"dataset":"amazon_tiny"`}},
		{"npz/no-config-file", func(t *testing.T) []string {
			// strata train --set data.dataset=X.npz --set data.split=...: the defaults.
			return append([]string{"train", "--set", "data.dataset=" + shchurNPZ(t, nil), "--set", "data.split=random-2-1-seed0",
				"--set", "train.epochs=2", "--set", "output.progress=off"}, wasmArgs()...)
		}, 0, []string{`"dataset":"amazon_tiny"`, `"model":"gcn"`}},
		{"npz/inspect", func(t *testing.T) []string {
			return []string{"inspect", "-i", shchurNPZ(t, nil)}
		}, 0, []string{"nodes     12", "features  3", "classes   3"}},
		{"npz/no-split", func(t *testing.T) []string {
			return train(t, "data.dataset="+shchurNPZ(t, nil))
		}, 2, []string{"has no training nodes", `data.split = "random-20-30-seed0"`}},
		{"npz/bad-split-key", func(t *testing.T) []string {
			return train(t, "data.dataset="+shchurNPZ(t, nil), "data.split=random-20-seed0")
		}, 2, []string{"--set data.split=random-20-seed0", "random-<train>-<valid>-seed<k>"}},
		{"npz/declared-size-too-large", func(t *testing.T) []string {
			path := shchurNPZ(t, nil)
			// Rewrite labels.npy with a header that declares 1000 labels.
			corruptNPZ(t, path, "labels.npy", func(b []byte) []byte {
				return []byte(strings.Replace(string(b), "(12,), }  ", "(1000,), }", 1)) // same header length
			})
			return []string{"inspect", "-i", path}
		}, 2, []string{"amazon_tiny.npz", `array "labels"`, "needs 8000 bytes", "truncated"}},
		{"npz/wrong-shape", func(t *testing.T) []string {
			return []string{"inspect", "-i", shchurNPZ(t, func(m map[string]any) { m["labels.npy"] = []int64{0, 1, 2} })}
		}, 2, []string{"amazon_tiny.npz", `array "labels"`, "want (12,)"}},
		{"synth/communities", func(t *testing.T) []string {
			return train(t, "data.dataset=synth:ogbn-arxiv:256:3:communities=40:mu=0.2")
		}, 0, []string{`"dataset":"synth-ogbn-arxiv-256-3-c40-mu0.2"`}},
		{"synth/fewer-communities-than-classes", func(t *testing.T) []string {
			return train(t, "data.dataset=synth:ogbn-arxiv:256:communities=8:mu=0.2")
		}, 2, []string{"--set data.dataset=synth:ogbn-arxiv:256:communities=8:mu=0.2", "fewer than the 40 classes", "use communities=40 or more"}},
		{"synth/bad-mu", func(t *testing.T) []string {
			return []string{"inspect", "-i", "synth:ogbn-arxiv:256:communities=40:mu=2"}
		}, 2, []string{"synth:ogbn-arxiv:256:communities=40:mu=2", `mu="2" is not a fraction in [0, 1]`}},
		{"csv/alone-needs-labels", func(t *testing.T) []string {
			edges := write(t, t.TempDir(), "edges.csv", "src,dst\n0,1\n1,2\n2,0\n")
			return train(t, "data.dataset="+edges, "data.synth_features=8")
		}, 2, []string{"--set data.dataset=", "0 classes", "labels", "docs/datasets.md"}},
		{"csv/inspect", func(t *testing.T) []string {
			return []string{"inspect", "-i", write(t, t.TempDir(), "edges.csv", "0,1\n1,2\n2,0\n")}
		}, 0, []string{"nodes     3", "edges     3"}},
		{"csv/bad-line", func(t *testing.T) []string {
			return []string{"inspect", "-i", write(t, t.TempDir(), "edges.csv", "0,1\n1,x\n")}
		}, 2, []string{"edges.csv:2: column 2:", `"x" is not an integer`}},
		{"ogb-csv/edges-labels-splits", func(t *testing.T) []string {
			return train(t, "data.dataset="+tinyOGB(t, nil)+"@s")
		}, 0, []string{`"dataset":"tiny"`}},
		{"mtx/inspect", func(t *testing.T) []string {
			return []string{"inspect", "-i", write(t, t.TempDir(), "g.mtx", "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 2\n")}
		}, 0, []string{"nodes     3", "edges     4"}},
		{"mtx/bad-index", func(t *testing.T) []string {
			return []string{"inspect", "-i", write(t, t.TempDir(), "g.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n0 1\n")}
		}, 2, []string{"g.mtx:3: column 1:", "1-based"}},
		{"npz-scipy/inspect", func(t *testing.T) []string {
			return []string{"inspect", "-i", scipyNPZ(t, "csr.npz")}
		}, 0, []string{"nodes     4", "features  3", "classes   2"}},
		{"npz-scipy/os-system-refused", func(t *testing.T) []string {
			evil := scipyNPZ(t, "os-system.npz")
			t.Chdir(t.TempDir()) // where the pickle would create pwned-by-pickle
			t.Cleanup(func() {
				if _, err := os.Stat("pwned-by-pickle"); !os.IsNotExist(err) {
					t.Errorf("the pickle ran: pwned-by-pickle exists (%v)", err)
				}
			})
			return []string{"inspect", "-i", evil}
		}, 2, []string{"os-system.npz", `array "adj_matrix"`, "refusing to load os.system"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := cli(t, c.args(t)...)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, c.code, stderr)
			}
			out := stdout
			if c.code != 0 {
				out = stderr
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// scipyNPZ returns the absolute path of a fixture of format.npz-scipy.
func scipyNPZ(t *testing.T, name string) string {
	p, err := filepath.Abs(filepath.Join("..", "..", "core", "graph", "numpy", "testdata", "scipy", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// corruptNPZ rewrites the member name of the archive at path with edit.
func corruptNPZ(t *testing.T, path, name string, edit func([]byte) []byte) {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	members := map[string][]byte{}
	var order []string
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, f.UncompressedSize64)
		if _, err := rc.Read(b); err != nil && len(b) > 0 && err.Error() != "EOF" {
			t.Fatal(err)
		}
		rc.Close()
		if f.Name == name {
			b = edit(b)
		}
		members[f.Name] = b
		order = append(order, f.Name)
	}
	zr.Close()
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(out)
	for _, k := range order {
		w, err := zw.Create(k)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(members[k])
	}
	zw.Close()
	out.Close()
}

// TestConvertToOGB writes Cora in the OGB raw layout and reads it back
// (inspect: the same counts and split); a second convert to the same
// output is refused (exit 2) and leaves it as it was.
func TestConvertToOGB(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cora-ogb")
	code, stdout, stderr := cli(t, "convert", "--to", "ogb", "--json", "-i", "embedded:cora", "-o", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if r := resultLine(t, stdout); r["edges_written"] != float64(5278) || r["edges_trained"] != float64(10556) {
		t.Errorf("result %v: want 5278 edges written, 10556 trained", r)
	}
	a, b := inspectJSON(t, "embedded:cora"), inspectJSON(t, dir)
	for _, k := range []string{"nodes", "edges", "features", "classes", "train", "valid", "test"} {
		if a[k] != b[k] {
			t.Errorf("%s: embedded %v, exported %v", k, a[k], b[k])
		}
	}
	code, _, stderr = cli(t, "convert", "--to", "ogb", "-i", "embedded:citeseer", "-o", dir)
	if code != exitUser || !strings.Contains(stderr, "exists") {
		t.Errorf("over an existing output: exit %d: %s", code, stderr)
	}
	if c := inspectJSON(t, dir); c["nodes"] != a["nodes"] {
		t.Errorf("the refused convert changed the output: %v nodes", c["nodes"])
	}
}

// TestConvertToNPY exports a dataset for PyG/DGL and reads it back: both
// directions of every edge by default (Cora stores each undirected edge
// once: 5278 stored, 10556 written, as PyG's edge_index), as stored with
// --as-stored; files of mode 0644; --json reports the edge counts.
func TestConvertToNPY(t *testing.T) {
	for _, c := range []struct {
		name    string
		flags   []string
		written float64
	}{{"both directions", nil, 10556}, {"as stored", []string{"--as-stored"}, 5278}} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cora-npy")
			code, stdout, stderr := cli(t, append([]string{"convert", "--to", "npy", "--json", "-i", "embedded:cora", "-o", dir}, c.flags...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			r := resultLine(t, stdout)
			if r["edges_stored"] != float64(5278) || r["edges_written"] != c.written || r["edges_trained"] != float64(10556) || r["nodes"] != float64(2708) {
				t.Errorf("result %v: want 5278 stored, %v written, 10556 trained", r, c.written)
			}
			for _, f := range []string{"edge_index.npy", "x.npy", "y.npy", "train_mask.npy", "val_mask.npy", "test_mask.npy"} {
				st, err := os.Stat(filepath.Join(dir, f))
				if err != nil || !strings.Contains(stdout, f) {
					t.Errorf("%s: %v (stdout %q)", f, err, stdout)
				} else if st.Mode().Perm() != 0o644 {
					t.Errorf("%s: mode %v, want 0644", f, st.Mode().Perm())
				}
			}
			a, b := inspectJSON(t, "embedded:cora"), inspectJSON(t, dir)
			if b["edges"] != c.written {
				t.Errorf("read back: %v edges, want %v", b["edges"], c.written)
			}
			for _, k := range []string{"nodes", "features", "classes", "train", "valid", "test"} {
				if a[k] != b[k] {
					t.Errorf("%s: embedded %v, exported %v", k, a[k], b[k])
				}
			}
		})
	}
	// A file in the way is an error, not overwritten.
	file := write(t, t.TempDir(), "taken", "x")
	if code, _, stderr := cli(t, "convert", "--to", "npy", "-i", "embedded:cora", "-o", file); code != exitUser || !strings.Contains(stderr, "not a directory") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// TestConvertToNPYTrainsTheSame trains GCN on Cora and on its convert
// --to npy directories with one config and seed. The runs must agree
// exactly: with data.symmetrize = true, Symmetrize(both directions) and
// Symmetrize(as stored) are Symmetrize(the stored graph), rows sorted,
// and features, labels and masks are copied bit for bit, so every kernel
// sees identical inputs in identical order. Without symmetrize, the
// both-directions directory (Cora has no self loops) is that same
// graph, so it trains as the original does with symmetrize.
func TestConvertToNPYTrainsTheSame(t *testing.T) {
	root := t.TempDir()
	both, stored := filepath.Join(root, "both"), filepath.Join(root, "stored")
	for _, args := range [][]string{{"-o", both}, {"-o", stored, "--as-stored"}} {
		if code, _, stderr := cli(t, append([]string{"convert", "--to", "npy", "-i", "embedded:cora"}, args...)...); code != 0 {
			t.Fatalf("convert %v: exit %d: %s", args, code, stderr)
		}
	}
	train := func(dataset string, symmetrize bool) map[string]any {
		args := append([]string{"train", "-c", "../../configs/gcn-cora.toml", "--set", "data.dataset=" + dataset,
			"--set", fmt.Sprintf("data.symmetrize=%v", symmetrize), "--set", "train.epochs=20",
			"--set", "output.progress=off", "--set", "output.json=true"}, wasmArgs()...)
		code, stdout, stderr := cli(t, args...)
		if code != 0 {
			t.Fatalf("train %s: exit %d: %s", dataset, code, stderr)
		}
		return resultLine(t, stdout)
	}
	want := train("embedded:cora", true)
	for _, c := range []struct {
		dataset    string
		symmetrize bool
	}{{both, true}, {stored, true}, {both, false}} {
		got := train(c.dataset, c.symmetrize)
		for _, k := range []string{"final_loss", "best_valid_acc", "test_acc", "train_acc", "best_epoch"} {
			if got[k] != want[k] {
				t.Errorf("%s (symmetrize %v): %s = %v, embedded:cora gives %v", filepath.Base(c.dataset), c.symmetrize, k, got[k], want[k])
			}
		}
	}
}

// TestLoadProgress: with stderr not a terminal, a load prints plain lines
// (no bar, no escape codes) ending with a "done" line; a quick load within
// the quiet time prints nothing.
func TestLoadProgress(t *testing.T) {
	if _, ok := readBytes(); !ok {
		t.Skip("no /proc/self/io: load progress is not shown on this system")
	}
	var text strings.Builder
	for i := range 20000 {
		text.WriteString(strings.Repeat("1", 1+i%3) + " 2\n")
	}
	path := write(t, t.TempDir(), "g.txt", text.String())
	var errb strings.Builder
	d, err := openDatasetEvery(context.Background(), path, "inspect: loading", &errb, 0, time.Hour)
	if err != nil || d.NumNodes == 0 {
		t.Fatal(err)
	}
	out := errb.String()
	if !strings.HasPrefix(out, "inspect: loading 100% (") || !strings.HasSuffix(out, " done\n") || strings.ContainsAny(out, "\r\x1b") {
		t.Errorf("progress output %q", out)
	}
	if n := graph.SpecBytes(path); n != int64(text.Len()) {
		t.Errorf("specBytes = %d, want %d", n, text.Len())
	}
	errb.Reset()
	if _, err := openDatasetEvery(context.Background(), path, "x", &errb, time.Hour, time.Hour); err != nil || errb.Len() != 0 {
		t.Errorf("quiet load printed %q (%v)", errb.String(), err)
	}
	if n := graph.SpecBytes("embedded:cora"); n != 0 {
		t.Errorf("graph.SpecBytes(embedded) = %d, want 0 (unknown)", n)
	}
}

// TestTrainLoadProgress: train loads its dataset through the progress
// reporting of graph.LoadProgress (here with no quiet time), so a log shows
// the load as plain lines ending with "done" before the epochs.
func TestTrainLoadProgress(t *testing.T) {
	if _, ok := readBytes(); !ok {
		t.Skip("no /proc/self/io: load progress is not shown on this system")
	}
	dir := filepath.Join(t.TempDir(), "cora-npy")
	if code, _, stderr := cli(t, "convert", "--to", "npy", "-i", "embedded:cora", "-o", dir); code != 0 {
		t.Fatalf("convert: exit %d: %s", code, stderr)
	}
	var errb, out bytes.Buffer
	ctx := graph.WithLoadProgress(context.Background(), graph.LoadProgress{W: &errb, Label: "train: loading", Every: time.Hour})
	args := append([]string{"train", "--set", "data.dataset=" + dir, "--set", "train.epochs=1", "--set", "output.json=true"}, wasmArgs()...)
	if code := run(ctx, args, &out, &errb); code != 0 {
		t.Fatalf("train: exit %d: %s", code, errb.String())
	}
	first := strings.SplitN(errb.String(), "\n", 2)[0]
	if !strings.HasPrefix(first, "train: loading 100% (") || !strings.HasSuffix(first, " done") {
		t.Errorf("first stderr line %q, want the load's done line; stderr:\n%s", first, errb.String())
	}
}
