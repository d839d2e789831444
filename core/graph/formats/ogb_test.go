package formats

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/graph/graphtest"
)

func TestLoadOGBTiny(t *testing.T) {
	dir := graphtest.WriteOGB(t, graphtest.TinyOGB())
	d, err := LoadOGB(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if d.NumNodes != 5 || d.Graph.NNZ() != 4 || d.FeatDim != 2 || d.NumClasses != 2 {
		t.Fatalf("got n=%d nnz=%d dim=%d classes=%d", d.NumNodes, d.Graph.NNZ(), d.FeatDim, d.NumClasses)
	}
	// "src,dst" puts src in row dst.
	if got := graphtest.RowsOf(d.Graph); fmt.Sprint(got) != "[[] [0] [1] [2] [3]]" {
		t.Errorf("rows %v", got)
	}
	wantFeat := []float32{1, 0, 0, 1, 0.5, 2, 0, 0, 1e-3, -3}
	if !slices.Equal(d.Features, wantFeat) {
		t.Errorf("features %v, want %v", d.Features, wantFeat)
	}
	if !slices.Equal(d.Labels, []int32{0, 1, 0, 1, -1}) {
		t.Errorf("labels %v", d.Labels)
	}
	if !slices.Equal(d.Train, []int32{0, 1}) || !slices.Equal(d.Valid, []int32{2}) || !slices.Equal(d.Test, []int32{3}) {
		t.Errorf("splits %v %v %v", d.Train, d.Valid, d.Test)
	}
	if d.Name != "ds" || d.Source != dir {
		t.Errorf("name %q source %q", d.Name, d.Source)
	}
	if err := d.Validate(); err != nil {
		t.Error(err)
	}
}

func TestLoadOGBPlainCSVAndOptionalFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "plain")
	for rel, content := range graphtest.TinyOGB() {
		if rel == "raw/node-feat.csv" || rel == "raw/num-edge-list.csv" {
			continue // optional
		}
		graphtest.WriteFile(t, dir, rel, []byte(content))
	}
	d, err := LoadOGB(dir, "s")
	if err != nil {
		t.Fatal(err)
	}
	if d.FeatDim != 0 || d.Features != nil || d.Graph.NNZ() != 4 || len(d.Train) != 2 {
		t.Errorf("dim %d nnz %d train %v", d.FeatDim, d.Graph.NNZ(), d.Train)
	}
}

func TestLoadOGBNoSplitDir(t *testing.T) {
	files := graphtest.TinyOGB()
	for _, s := range []string{"train", "valid", "test"} {
		files["split/s/"+s+".csv"] = "\x00missing"
	}
	d, err := LoadOGB(graphtest.WriteOGB(t, files), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Train)+len(d.Valid)+len(d.Test) != 0 {
		t.Error("expected empty splits")
	}
}

// TestLoadOGBMalformed covers the malformed inputs the loader must reject,
// each with the file, line and column in the message.
func TestLoadOGBMalformed(t *testing.T) {
	truncated := graphtest.Gz("0,1\n1,2\n2,3\n3,4\n" + strings.Repeat("1,1\n", 5000))
	truncated = truncated[:len(truncated)/2]
	badCRC := graphtest.Gz("0\n1\n0\n1\n-1\n")
	badCRC[len(badCRC)-6] ^= 0xff // inside the CRC-32 trailer
	cases := []struct {
		name   string
		split  string
		change map[string]string
		kind   error
		want   []string
	}{
		{"bad number in edge", "", map[string]string{"raw/edge.csv": "0,1\n1,x3\n2,3\n3,4\n"},
			graph.ErrFormat, []string{"raw/edge.csv.gz:2:", "column 2", `"x3" is not an integer`, "fix the value"}},
		{"edge with three columns", "", map[string]string{"raw/edge.csv": "0,1\n1,2\n2,3,4\n3,4\n"},
			graph.ErrFormat, []string{"edge.csv.gz:3:", "3 columns, expected 2"}},
		{"edge id out of range", "", map[string]string{"raw/edge.csv": "0,1\n1,2\n2,7\n3,4\n"},
			graph.ErrRange, []string{"edge.csv.gz:3:", "column 2", "node id 7 outside [0,5)"}},
		{"negative edge id", "", map[string]string{"raw/edge.csv": "0,1\n-1,2\n2,3\n3,4\n"},
			graph.ErrRange, []string{"edge.csv.gz:2:", "column 1", "-1"}},
		{"edge count mismatch", "", map[string]string{"raw/num-edge-list.csv": "5\n"},
			graph.ErrCount, []string{"edge.csv.gz", "4 edges", "num-edge-list.csv.gz says 5"}},
		{"truncated gzip", "", map[string]string{"raw/edge.csv": "\x00raw:" + string(truncated)},
			graph.ErrTruncated, []string{"edge.csv.gz", "ends early"}},
		{"gzip checksum", "", map[string]string{"raw/node-label.csv": "\x00raw:" + string(badCRC)},
			graph.ErrChecksum, []string{"node-label.csv.gz", "checksum"}},
		{"not gzip", "", map[string]string{"raw/edge.csv": "\x00raw:0,1\n"},
			graph.ErrFormat, []string{"edge.csv.gz", "not a gzip file"}},
		{"empty file", "", map[string]string{"raw/node-label.csv": "\x00raw:"},
			graph.ErrFormat, []string{"node-label.csv.gz", "empty file"}},
		{"empty gzip label file", "", map[string]string{"raw/node-label.csv": ""},
			graph.ErrCount, []string{"node-label.csv.gz", "0 lines", "5 nodes"}},
		{"missing label file", "", map[string]string{"raw/node-label.csv": "\x00missing"},
			graph.ErrMissing, []string{"raw/node-label.csv.gz", "does not exist", "OGB"}},
		{"missing edge file", "", map[string]string{"raw/edge.csv": "\x00missing"},
			graph.ErrMissing, []string{"raw/edge.csv.gz", "does not exist"}},
		{"missing node count", "", map[string]string{"raw/num-node-list.csv": "\x00missing"},
			graph.ErrMissing, []string{"num-node-list.csv.gz"}},
		{"bad node count", "", map[string]string{"raw/num-node-list.csv": "five\n"},
			graph.ErrFormat, []string{"num-node-list.csv.gz:1:", `"five" is not an integer`}},
		{"two node counts", "", map[string]string{"raw/num-node-list.csv": "5\n6\n"},
			graph.ErrFormat, []string{"num-node-list.csv.gz:2:", "2 values"}},
		{"negative node count", "", map[string]string{"raw/num-node-list.csv": "-5\n"},
			graph.ErrRange, []string{"num-node-list.csv.gz:1:"}},
		{"label negative", "", map[string]string{"raw/node-label.csv": "0\n-2\n0\n1\n-1\n"},
			graph.ErrRange, []string{"node-label.csv.gz:2:", "label -2 is negative"}},
		{"label too large", "", map[string]string{"raw/node-label.csv": "0\n1\n0\n99\n-1\n"},
			graph.ErrRange, []string{"node-label.csv.gz:4:", "label 99"}},
		{"label not integer", "", map[string]string{"raw/node-label.csv": "0\n1\n0.5\n1\n-1\n"},
			graph.ErrFormat, []string{"node-label.csv.gz:3:", `"0.5"`}},
		{"label blank line", "", map[string]string{"raw/node-label.csv": "0\n\n0\n1\n-1\n"},
			graph.ErrFormat, []string{"node-label.csv.gz:2:", "empty line"}},
		{"too many labels", "", map[string]string{"raw/node-label.csv": "0\n1\n0\n1\n-1\n0\n"},
			graph.ErrCount, []string{"node-label.csv.gz:6:", "more than 5 lines"}},
		{"too few labels", "", map[string]string{"raw/node-label.csv": "0\n1\n0\n1\n"},
			graph.ErrCount, []string{"node-label.csv.gz", "4 lines", "5 nodes"}},
		{"feature row too short", "", map[string]string{"raw/node-feat.csv": "1,0\n0,1\n0.5\n0,0\n1,3\n"},
			graph.ErrFormat, []string{"node-feat.csv.gz:3:", "1 value, expected 2"}},
		{"feature row too long", "", map[string]string{"raw/node-feat.csv": "1,0\n0,1\n0.5,2\n0,0,7\n1,3\n"},
			graph.ErrFormat, []string{"node-feat.csv.gz:4:", "3 values, expected 2"}},
		{"feature bad number", "", map[string]string{"raw/node-feat.csv": "1,0\n0,abc\n0.5,2\n0,0\n1,3\n"},
			graph.ErrFormat, []string{"node-feat.csv.gz:2:", "column 2", `"abc" is not a number`}},
		{"feature empty value", "", map[string]string{"raw/node-feat.csv": "1,0\n0,1\n,2\n0,0\n1,3\n"},
			graph.ErrFormat, []string{"node-feat.csv.gz:3:", "column 1", "empty value"}},
		{"feature trailing comma", "", map[string]string{"raw/node-feat.csv": "1,0\n0,1\n0.5,2\n0,\n1,3\n"},
			graph.ErrFormat, []string{"node-feat.csv.gz:4:", "column 2", "empty value"}},
		{"feature extra row", "", map[string]string{"raw/node-feat.csv": "1,0\n0,1\n0.5,2\n0,0\n1,3\n4,4\n"},
			graph.ErrCount, []string{"node-feat.csv.gz:6:", "more than 5 lines"}},
		{"feature missing rows", "", map[string]string{"raw/node-feat.csv": "1,0\n0,1\n"},
			graph.ErrCount, []string{"node-feat.csv.gz", "2 lines", "5 nodes"}},
		{"overlapping splits", "", map[string]string{"split/s/valid.csv": "2\n1\n"},
			graph.ErrSplit, []string{"valid.csv.gz:2:", "node 1 is also in the train split", "train.csv.gz:1"}},
		{"duplicate in split", "", map[string]string{"split/s/train.csv": "0\n1\n0\n"},
			graph.ErrSplit, []string{"train.csv.gz:3:", "node 0 is listed twice", "line 1"}},
		{"unlabeled node in split", "", map[string]string{"split/s/test.csv": "3\n4\n"},
			graph.ErrSplit, []string{"test.csv.gz:2:", "node 4 has no label"}},
		{"split id out of range", "", map[string]string{"split/s/test.csv": "3\n12\n"},
			graph.ErrRange, []string{"test.csv.gz:2:", "node id 12 outside [0,5)"}},
		{"split bad number", "", map[string]string{"split/s/test.csv": "3\nthree\n"},
			graph.ErrFormat, []string{"test.csv.gz:2:", `"three"`}},
		{"missing split file", "", map[string]string{"split/s/valid.csv": "\x00missing"},
			graph.ErrMissing, []string{"split/s/valid.csv.gz"}},
		{"unknown split", "nope", nil,
			graph.ErrMissing, []string{"split/nope", `split "nope" does not exist`, "available: s"}},
		{"ambiguous split", "", map[string]string{"split/t/train.csv": "0\n", "split/t/valid.csv": "1\n", "split/t/test.csv": "2\n"},
			graph.ErrMissing, []string{"2 splits (s, t)", "@<split>"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := graphtest.TinyOGB()
			for k, v := range c.change {
				files[k] = v
			}
			dir := graphtest.WriteOGB(t, files)
			d, err := LoadOGB(dir, c.split)
			if d != nil {
				t.Errorf("got a dataset with the error %v", err)
			}
			graphtest.WantErr(t, err, c.kind, c.want...)
			var fe *graph.FileError
			if !errors.As(err, &fe) {
				t.Errorf("error %T is not a *FileError", err)
			} else if !strings.HasPrefix(fe.File, dir) {
				t.Errorf("error file %q is not under %q", fe.File, dir)
			}
		})
	}
}

// TestLoadOGBLineNumbersAcrossChunks puts errors far beyond the first
// parse chunk, so chunk line accounting is exercised.
func TestLoadOGBLineNumbersAcrossChunks(t *testing.T) {
	const n, m = 1000, 300000
	var e strings.Builder
	for i := 0; i < m; i++ {
		if i == 250000 {
			e.WriteString("5,oops\n")
			continue
		}
		fmt.Fprintf(&e, "%d,%d\n", i%n, (i*7+1)%n)
	}
	files := graphtest.TinyOGB()
	files["raw/edge.csv"] = e.String()
	files["raw/num-edge-list.csv"] = fmt.Sprint(m)
	files["raw/num-node-list.csv"] = fmt.Sprint(n)
	files["raw/node-label.csv"] = strings.Repeat("1\n", n)
	files["raw/node-feat.csv"] = "\x00missing"
	dir := graphtest.WriteOGB(t, files)
	_, err := LoadOGB(dir, "")
	graphtest.WantErr(t, err, graph.ErrFormat, "edge.csv.gz:250001:", "column 2", `"oops"`)

	files["raw/edge.csv"] = strings.Replace(e.String(), "5,oops\n", "5,6\n", 1)
	d, err := LoadOGB(graphtest.WriteOGB(t, files), "")
	if err != nil {
		t.Fatal(err)
	}
	if d.Graph.NNZ() != m {
		t.Errorf("nnz %d, want %d", d.Graph.NNZ(), m)
	}
}

// TestLoadOGBLongLines uses feature rows longer than a parse chunk.
func TestLoadOGBLongLines(t *testing.T) {
	const dim = 700000 // about 1.4 MB per line
	row := func(v string) string {
		f := make([]string, dim)
		for i := range f {
			f[i] = "0"
		}
		f[dim-1] = v
		return strings.Join(f, ",") + "\n"
	}
	files := graphtest.TinyOGB()
	files["raw/node-feat.csv"] = row("1") + row("2.5") + row("-3") + row("4e2") + row("5")
	d, err := LoadOGB(graphtest.WriteOGB(t, files), "")
	if err != nil {
		t.Fatal(err)
	}
	if d.FeatDim != dim {
		t.Fatalf("dim %d", d.FeatDim)
	}
	for i, want := range []float32{1, 2.5, -3, 400, 5} {
		if got := d.Features[i*dim+dim-1]; got != want {
			t.Errorf("row %d last value %v, want %v", i, got, want)
		}
	}
	files["raw/node-feat.csv"] = row("1") + row("2") + row("x") + row("4") + row("5")
	_, err = LoadOGB(graphtest.WriteOGB(t, files), "")
	graphtest.WantErr(t, err, graph.ErrFormat, "node-feat.csv.gz:3:", fmt.Sprintf("column %d", dim), `"x"`)
}

func TestLoadOGBMissingDir(t *testing.T) {
	_, err := LoadOGB(filepath.Join(t.TempDir(), "nope"), "")
	graphtest.WantErr(t, err, graph.ErrMissing, "nope", "does not exist")
	f := graphtest.WriteFile(t, t.TempDir(), "file", []byte("x"))
	_, err = LoadOGB(f, "")
	graphtest.WantErr(t, err, graph.ErrFormat, "not a directory")
}

func TestParseFloatPrefixMatchesStrconv(t *testing.T) {
	inputs := []string{"0", "1", "-1", "+2", "98", "0.5", "-0.25", "1e-3", "3.4028235e38", "1.17549435e-38",
		"0.1", "0.30000001", "123456789", "16777217", "1.5E+2", "7.006492e-46", "0.000001", "-0", "1e10", "1e-10",
		"12345.678", "0.333333343267", "9999999", "4.2e1", "100000000000000000000", ".5", "5."}
	for _, s := range inputs {
		want, err := parseFloatSlow([]byte(s))
		if !err {
			t.Fatalf("strconv rejects %q", s)
		}
		got, k, ok := parseFloatPrefix([]byte(s))
		if !ok {
			continue // falls back to strconv in the loader
		}
		if k != len(s) || got != want || (got == 0 && fmt.Sprint(got) != fmt.Sprint(want)) {
			t.Errorf("parseFloatPrefix(%q) = %v (%d bytes), strconv %v", s, got, k, want)
		}
	}
	for _, s := range []string{"", "-", "e5", "abc", ".", "1e", "1e+"} {
		if _, k, ok := parseFloatPrefix([]byte(s)); ok && k == len(s) {
			t.Errorf("parseFloatPrefix(%q) accepted", s)
		}
	}
}

func TestLoadEmbeddedCora(t *testing.T) {
	d, err := LoadEmbedded("cora")
	if err != nil {
		t.Fatal(err)
	}
	graphtest.CheckCora(t, d)
	if d.Source != "embedded:cora" || !strings.Contains(d.Citation, "McCallum") || !strings.Contains(d.Citation, "Sen et al.") {
		t.Errorf("source %q citation %q", d.Source, d.Citation)
	}
	if _, err := LoadEmbedded("nope"); !errors.Is(err, graph.ErrMissing) || !strings.Contains(err.Error(), "cora") {
		t.Errorf("unknown embedded dataset: %v", err)
	}
	if _, err := LoadEmbedded("../cora"); !errors.Is(err, graph.ErrMissing) {
		t.Errorf("path in embedded name: %v", err)
	}
}

func TestLoadSharedCora(t *testing.T) {
	d, err := LoadOGB(graphtest.SharedDataset(t, "cora"), "public")
	if err != nil {
		t.Fatal(err)
	}
	graphtest.CheckCora(t, d)
	e, err := LoadEmbedded("cora")
	if err != nil {
		t.Fatal(err)
	}
	if !graphtest.SameCSR(d.Graph, e.Graph) || !slices.Equal(d.Features, e.Features) || !slices.Equal(d.Labels, e.Labels) {
		t.Error("shared and embedded cora differ")
	}
}

// TestLoadSharedDatasets checks the smaller shared datasets against the
// numbers of shared/data/README.md.
func TestLoadSharedDatasets(t *testing.T) {
	cases := []struct {
		name                  string
		nodes, edges, symEdge int64
		dim, classes          int
		train, valid, test    int
		unlabeled             int
	}{
		{"citeseer", 3327, 4552, 9104, 3703, 6, 120, 500, 1000, 15},
		{"pubmed", 19717, 44324, 88648, 0, 3, 60, 500, 1000, 0},
		{"amazon-computers", 13752, 245861, 491722, 767, 10, 200, 300, 13252, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := LoadOGB(graphtest.SharedDataset(t, c.name), "")
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Validate(); err != nil {
				t.Fatal(err)
			}
			if int64(d.NumNodes) != c.nodes || d.Graph.NNZ() != c.edges || graph.Symmetrize(d.Graph).NNZ() != c.symEdge ||
				d.FeatDim != c.dim || d.NumClasses != c.classes {
				t.Errorf("n=%d nnz=%d dim=%d classes=%d", d.NumNodes, d.Graph.NNZ(), d.FeatDim, d.NumClasses)
			}
			if len(d.Train) != c.train || len(d.Valid) != c.valid || len(d.Test) != c.test {
				t.Errorf("splits %d/%d/%d", len(d.Train), len(d.Valid), len(d.Test))
			}
			un := 0
			for _, l := range d.Labels {
				if l < 0 {
					un++
				}
			}
			if un != c.unlabeled {
				t.Errorf("%d unlabeled, want %d", un, c.unlabeled)
			}
			if d.Citation == "" {
				t.Error("no citation")
			}
		})
	}
	t.Run("ogbn-arxiv has no edges", func(t *testing.T) {
		_, err := LoadOGB(graphtest.SharedDataset(t, "ogbn-arxiv"), "")
		graphtest.WantErr(t, err, graph.ErrMissing, "ogbn-arxiv/raw/edge.csv.gz", "does not exist")
	})
}

func TestLoadCoauthorPhysics(t *testing.T) {
	if testing.Short() {
		t.Skip("1.2 GB feature matrix")
	}
	d, err := LoadOGB(graphtest.SharedDataset(t, "coauthor-physics"), "")
	if err != nil {
		t.Fatal(err)
	}
	if d.NumNodes != 34493 || d.FeatDim != 8415 || d.NumClasses != 5 || graph.Symmetrize(d.Graph).NNZ() != 495924 {
		t.Errorf("n=%d dim=%d classes=%d", d.NumNodes, d.FeatDim, d.NumClasses)
	}
	nz := 0
	for _, v := range d.Features {
		if v != 0 {
			nz++
		}
	}
	if nz != 1137311 {
		t.Errorf("%d feature non-zeros, want 1137311", nz)
	}
	if err := d.Validate(); err != nil {
		t.Error(err)
	}
	_ = os.Getenv // keep os imported when skipped
}
