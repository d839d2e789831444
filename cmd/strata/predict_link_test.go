package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/graph/numpy"
	"strata/internal/floattol"
)

// linkModel is Cora link prediction (GCN 32-16, the dot decoder, no
// dropout) for a few epochs; trainModel adds output.model.
const linkModel = cora + "[model]\nname = \"gcn\"\nhidden = 32\ndropout = 0\ninput_dropout = 0\n" +
	"[train]\ntask = \"link\"\nepochs = 3\nweight_decay = 0\n[link]\nembedding = 16\n"

// miniLinkSets train linkModel on sampled mini-batches of edges.
var miniLinkSets = []string{"train.mode=minibatch", "sampler.name=uniform", "sampler.fanouts=[10, 10]", "minibatch.batch_size=512"}

// setArgs turns key=value pairs into --set flags.
func setArgs(sets []string) []string {
	var out []string
	for _, s := range sets {
		out = append(out, "--set", s)
	}
	return out
}

// pairsNPY writes pairs as a .npy array of shape, dtype descr (<i4 or
// <i8) with the values vals.
func pairsNPY(t *testing.T, dir, name, descr string, shape []int, vals []int64) string {
	t.Helper()
	b := numpy.NPYHeader(shape, descr)
	for _, v := range vals {
		if descr == "<i4" {
			b = binary.LittleEndian.AppendUint32(b, uint32(int32(v)))
		} else {
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
	}
	return write(t, dir, name, string(b))
}

// readFloats32 reads a float32 .npy file written by predict.
func readFloats32(t *testing.T, path string) ([]int, []float32) {
	t.Helper()
	shape, data, err := numpy.ReadNPY(path)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := data.([]float32)
	if !ok {
		t.Fatalf("%s: %T, want float32", path, data)
	}
	return shape, v
}

// TestPredictLink trains link models on Cora, full-graph and on
// mini-batches, and predicts with them: the test AUC and AP predict
// recomputes are the run's (the best epoch's, whose parameters the model
// file holds), embeddings.npy is nodes × link.embedding, and the scores
// of a pair file (.csv and .npy alike) are the dot products of the
// written embeddings (the dot decoder) within the float32 bound of a dot
// product of their width; an unlabelled copy of Cora (-i) is split and
// predicted the same.
func TestPredictLink(t *testing.T) {
	pairs := [][2]int64{{0, 1}, {5, 7}, {2707, 0}, {100, 100}, {1, 0}}
	for _, c := range []struct {
		name string
		sets []string
	}{{"fullgraph", nil}, {"minibatch", miniLinkSets}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := write(t, dir, "link.toml", linkModel)
			model, res := trainModel(t, dir, append([]string{"-c", cfg}, setArgs(c.sets)...)...)
			var csv strings.Builder
			csv.WriteString("src,dst\r\n")
			var flat []int64
			for _, p := range pairs {
				csv.WriteString(strconv.FormatInt(p[0], 10) + ", " + strconv.FormatInt(p[1], 10) + "\n")
				flat = append(flat, p[0], p[1])
			}
			csvPath := write(t, dir, "pairs.csv", csv.String())
			npyPath := pairsNPY(t, dir, "pairs.npy", "<i8", []int{len(pairs), 2}, flat)
			// The strategy the model trained with scores as its run did.
			args := append([]string{"-m", model}, setArgs(c.sets)...)
			code, pr, stderr := predictRun(t, append(args, "-o", filepath.Join(dir, "csv"), "--pairs", csvPath)...)
			if code != 0 {
				t.Fatalf("predict: exit %d: %s", code, stderr)
			}
			metrics, _ := res["metrics"].(map[string]any)
			if l := pr.Link; l == nil || l.TestAUC == nil || *l.TestAUC != res["test_acc"] || l.TestAP == nil || *l.TestAP != metrics["test_ap"] || l.Pairs != len(pairs) ||
				l.Embedding != 16 || l.EdgeSplit != "random-85-5-10-seed0" || l.Test == 0 {
				t.Fatalf("predict's link result %+v, want test AUC %v and AP %v (the run's) of %d pairs", pr.Link, res["test_acc"], metrics["test_ap"], len(pairs))
			}
			shape, emb := readFloats32(t, filepath.Join(dir, "csv", "embeddings.npy"))
			if len(shape) != 2 || shape[0] != 2708 || shape[1] != 16 || pr.Nodes != 2708 {
				t.Fatalf("embeddings.npy shape %v (nodes %d), want [2708 16]", shape, pr.Nodes)
			}
			checkDotScores(t, filepath.Join(dir, "csv"), emb, 16, pairs)
			if code, _, stderr := predictRun(t, append(args, "-o", filepath.Join(dir, "npy"), "--pairs", npyPath)...); code != 0 {
				t.Fatalf("predict --pairs .npy: exit %d: %s", code, stderr)
			}
			// -i names a copy of Cora without labels: it is split the same
			// way, so it predicts the same.
			copied := coraVariant(t, dir, "copy.strata", func(d *graph.Dataset) { d.Labels, d.NumClasses, d.Train, d.Valid, d.Test = nil, 0, nil, nil, nil })
			code, other, stderr := predictRun(t, append(args, "-o", filepath.Join(dir, "copy"), "-i", copied, "--pairs", npyPath)...)
			if code != 0 || other.Link == nil || *other.Link.TestAUC != *pr.Link.TestAUC {
				t.Fatalf("predict -i a copy: exit %d, %+v, want test AUC %v: %s", code, other.Link, *pr.Link.TestAUC, stderr)
			}
			for _, out := range []string{"npy", "copy"} {
				for _, f := range []string{"embeddings.npy", "scores.npy", "scores.csv"} {
					if !bytes.Equal(slurp(t, filepath.Join(dir, "csv", f)), slurp(t, filepath.Join(dir, out, f))) {
						t.Errorf("%s differs between -o csv and -o %s", f, out)
					}
				}
			}
		})
	}
}

// checkDotScores checks scores.npy and scores.csv in out against the dot
// products of the embeddings emb (nodes × w) of pairs: a float32 dot
// product of length w is within γ_w·Σ|a_i b_i| of the exact one
// (floattol.Dot), and the score is then rounded to float32 once more.
func checkDotScores(t *testing.T, out string, emb []float32, w int, pairs [][2]int64) {
	t.Helper()
	shape, scores := readFloats32(t, filepath.Join(out, "scores.npy"))
	if len(shape) != 1 || shape[0] != len(pairs) {
		t.Fatalf("scores.npy shape %v, want [%d]", shape, len(pairs))
	}
	f, err := os.Open(filepath.Join(out, "scores.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() || sc.Text() != "src,dst,score" {
		t.Fatalf("scores.csv header %q", sc.Text())
	}
	for i, p := range pairs {
		var dot, mag float64
		for k := range w {
			x := float64(emb[int(p[0])*w+k]) * float64(emb[int(p[1])*w+k])
			dot, mag = dot+x, mag+math.Abs(x)
		}
		tol := floattol.Dot(w, floattol.UFloat32, mag) + floattol.UFloat32*math.Abs(dot) + floattol.Dot(w, floattol.UFloat64, mag)
		if got := float64(scores[i]); math.Abs(got-dot) > tol || got == 0 && dot == 0 {
			t.Errorf("pair %v: score %v, dot product of the embeddings %v (tolerance %.3g)", p, got, dot, tol)
		}
		want := strconv.FormatInt(p[0], 10) + "," + strconv.FormatInt(p[1], 10) + "," + strconv.FormatFloat(float64(scores[i]), 'g', -1, 32)
		if !sc.Scan() || sc.Text() != want {
			t.Errorf("scores.csv line %d = %q, want %q", i+2, sc.Text(), want)
		}
	}
	if sc.Scan() {
		t.Errorf("scores.csv has an extra line %q", sc.Text())
	}
}

// TestPredictLinkBadInput: each mistake in a pair file, pairs given to a
// node model and a config whose link keys differ from the model's are
// exit 2 naming the file (and line) or the key, and write nothing.
func TestPredictLinkBadInput(t *testing.T) {
	dir := t.TempDir()
	cfg := write(t, dir, "link.toml", strings.Replace(linkModel, "epochs = 3", "epochs = 1", 1))
	model, _ := trainModel(t, dir, "-c", cfg)
	nodeModel, _ := trainModel(t, t.TempDir(), "-c", write(t, dir, "node.toml", cora+"[train]\nepochs = 1\n"))
	good := write(t, dir, "good.csv", "0,1\n")
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"out-of-range id", []string{"--pairs", write(t, dir, "range.csv", "src,dst\n0,1\n4,2708\n")}, []string{"range.csv:3", "target node id 2708 outside [0,2708)"}},
		{"negative id", []string{"--pairs", write(t, dir, "neg.csv", "0,-1\n")}, []string{"neg.csv:1", "-1 is not a node id"}},
		{"malformed line", []string{"--pairs", write(t, dir, "bad.csv", "0,1\n3;4\n")}, []string{"bad.csv:2", "1 comma-separated fields"}},
		{"not a number", []string{"--pairs", write(t, dir, "word.csv", "0,1\n3,x\n")}, []string{"word.csv:2", `target "x" is not an integer`}},
		{"empty line", []string{"--pairs", write(t, dir, "blank.csv", "0,1\n\n2,3\n")}, []string{"blank.csv:2"}},
		{"npy out of range", []string{"--pairs", pairsNPY(t, dir, "range.npy", "<i4", []int{2, 2}, []int64{0, 1, 9999, 2})}, []string{"range.npy", "row 1", "source node id 9999"}},
		{"npy wrong shape", []string{"--pairs", pairsNPY(t, dir, "shape.npy", "<i8", []int{4}, []int64{0, 1, 2, 3})}, []string{"shape.npy", "'shape': [4], want (P, 2)"}},
		{"npy pairs as columns", []string{"--pairs", pairsNPY(t, dir, "cols.npy", "<i8", []int{2, 3}, []int64{0, 1, 2, 3, 4, 5})}, []string{"cols.npy", "want (P, 2)"}},
		{"npy float dtype", []string{"--pairs", write(t, dir, "float.npy", string(append(numpy.NPYHeader([]int{1, 2}, "<f4"), make([]byte, 8)...)))}, []string{"float.npy", "integer dtype"}},
		{"npy truncated", []string{"--pairs", write(t, dir, "short.npy", string(append(numpy.NPYHeader([]int{1000, 2}, "<i8"), make([]byte, 8)...)))}, []string{"short.npy", "truncated"}},
		{"other extension", []string{"--pairs", write(t, dir, "pairs.txt", "0,1\n")}, []string{"pairs.txt", ".csv", ".npy"}},
		{"missing file", []string{"--pairs", filepath.Join(dir, "none.csv")}, []string{"none.csv", "does not exist"}},
		{"pairs on a node model", []string{"-m", nodeModel, "--pairs", good}, []string{"good.csv", "link-prediction model", "train.task"}},
		{"another decoder", []string{"-c", cfg, "--set", "link.decoder=distmult"}, []string{"link.decoder: model sha256", "decoder module's bytes differ"}},
		{"another split", []string{"-c", cfg, "--set", "data.edge_split=random-80-10-10"}, []string{`data.edge_split: model "random-85-5-10-seed0", config "random-80-10-10-seed0"`}},
		{"another seed's split", []string{"-c", cfg, "--set", "train.seed=3"}, []string{"data.edge_split", "seed3"}},
		{"another width", []string{"-c", cfg, "--set", "link.embedding=8"}, []string{"link.embedding: model 16, config 8"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, "out-"+strings.ReplaceAll(c.name, " ", "-"))
			args := c.args
			if !strings.HasPrefix(strings.Join(args, " "), "-m ") {
				args = append([]string{"-m", model}, args...)
			}
			code, _, stderr := predictRun(t, append(args, "-o", out)...)
			checkOutcome(t, c.name, code, stderr, c.want, "", out)
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s: wrote %s", c.name, out)
			}
		})
	}
}
