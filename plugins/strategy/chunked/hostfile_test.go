package chunked

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"strata/core/config"
	"strata/core/graph"
	"strata/core/graph/formats"
	"strata/core/train"
	"strata/plugins/strategy/internal/testkit"
)

// hostFileSets are the settings of a chunked run on the cpu backend with
// the host tier in path.
func hostFileSets(path string, extra ...string) []string {
	return append([]string{`train.mode="chunked"`, `train.backend="cpu"`, "chunked.chunks=3", "chunked.host_file=" + path}, extra...)
}

// TestHostFileRefused points chunked.host_file at paths that exist: a
// file of the user's, the run's own config and dataset, a symbolic link
// and a FIFO. The old code truncated, used and then deleted each of them
// (and died of a bus error on the memory-mapped dataset); now the run is
// refused before training, naming the key, and each is left as it was.
func TestHostFileRefused(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "chunk.toml")
	write(t, conf, testkit.CoraBase)
	keep := filepath.Join(dir, "keep.txt")
	write(t, keep, "keep me\n")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(keep, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ds := filepath.Join(dir, "cora.strata")
	cora, err := graph.Open("embedded:cora")
	if err == nil {
		err = formats.WriteBinary(ds, cora)
	}
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path, want string
		extra            []string
	}{
		{"a file of the user's", keep, "exists (a file)", nil},
		{"the config", conf, "the input " + conf + " of this run", nil},
		{"the dataset", ds, "the input " + ds + " of this run", []string{"data.dataset=" + ds}},
		{"a symbolic link", link, "exists (a symbolic link)", nil},
		{"a FIFO", fifo, "exists (a FIFO)", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, beforeData := snapshot(t, c.path)
			cfg, err := config.Load(conf, hostFileSets(c.path, c.extra...)...)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Output.Progress = "off"
			_, err = testkit.StepsIn(context.Background(), t, 1, cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "chunked.host_file") {
				t.Errorf("err = %v, want a refusal of chunked.host_file saying %q", err, c.want)
			}
			after, afterData := snapshot(t, c.path)
			if !os.SameFile(before, after) || after.Mode() != before.Mode() || afterData != beforeData {
				t.Errorf("%s changed: %v %q, was %v %q", c.path, after.Mode(), afterData, before.Mode(), beforeData)
			}
		})
	}
}

// TestHostFileInUse runs a second chunked run with the host file of one
// that is training: the old code let both use one file (both exited 0
// with wrong losses); now the second is refused naming the first's pid,
// and once the first ends the path is free again.
func TestHostFileInUse(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "host.bin")
	cfg := testkit.MustParse(t, testkit.CoraBase, hostFileSets(path)...)
	env, _, closeEnv, err := train.NewEnv(ctx, cfg, testkit.TestHost(t))
	if err != nil {
		t.Fatal(err)
	}
	defer closeEnv()
	strat, err := train.StrategyFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	first, err := strat.NewStepper(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	_, err = testkit.StepsIn(ctx, t, 1, testkit.MustParse(t, testkit.CoraBase, hostFileSets(path)...))
	if want := fmt.Sprintf("a running strata, process %d", os.Getpid()); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("second run: err = %v, want a refusal naming %q", err, want)
	}
	first.Release()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("host file left after the run: %v", err)
	}
	if _, err := testkit.StepsIn(ctx, t, 1, testkit.MustParse(t, testkit.CoraBase, hostFileSets(path)...)); err != nil {
		t.Errorf("after the first run ended: %v", err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("host file left after the second run: %v", err)
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshot returns path's file info (not followed) and, for a regular
// file, its content.
func snapshot(t *testing.T, path string) (os.FileInfo, string) {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if !st.Mode().IsRegular() {
		return st, ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return st, string(b)
}

// TestHostFileNotAnOutput: chunked.host_file at the path of one of the
// run's own outputs (which does not exist yet) is refused by name, in
// either spelling of the path.
func TestHostFileNotAnOutput(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "chunk.toml")
	write(t, conf, testkit.CoraBase)
	for _, c := range []struct{ key, set, host string }{
		{"output.csv", "output.csv=out.csv", "out.csv"},
		{"output.log", "output.log=" + filepath.Join(dir, "out.log"), dir + "/./out.log"},
		{"output.model", "output.model=" + filepath.Join(dir, "m.model"), dir + "/sub/../m.model"},
		{"output.checkpoint", "output.checkpoint=ck.bin", "ck.bin"},
	} {
		t.Run(c.key, func(t *testing.T) {
			cfg, err := config.Load(conf, hostFileSets(c.host, c.set, "train.checkpoint_every=1")...)
			if err != nil {
				t.Fatal(err)
			}
			err = (&Chunked{HostFile: c.host, Chunks: 3}).CheckConfig(cfg)
			if err == nil || !strings.Contains(err.Error(), "is also "+c.key) || !strings.Contains(err.Error(), "chunked.host_file") {
				t.Errorf("err = %v, want chunked.host_file refused as %s", err, c.key)
			}
		})
	}
}

// TestHostFileTraffic checks the host file's figures after an epoch of
// GCN on Cora (float32, 3 chunks): the least traffic is the hand-derived
// bound (h_1 written once and read by forward 1 and backward 1, dh_1
// written and read once, dh_2 the loss gradient of the destinations of
// the chunks that hold training nodes; with split intermediates also
// the aggregations the two layers keep in the file, Â·X·W_0 of 16
// columns and Â·h_1·W_1 of 7, each written once and read once; with
// layer 0's X·W_0 computed once per node, the default on the cpu, z_0 =
// X·W_0 and dz_0, 16 columns each, written once and read once, and z_0
// again by a recomputing backward, unless they fit an eighth of the
// memory budget: then they stay in RAM, ram_bytes), the measured bytes
// are at least that, all that is written is the bound, and without a
// host file the result has no such figures (the published experiments'
// results keep their fields).
func TestHostFileTraffic(t *testing.T) {
	for _, c := range []struct {
		file       bool
		inter, pre string
		tight      bool // a 1 MiB memory budget: z_0 and dz_0 do not fit in RAM
	}{{true, "recompute", "off", false}, {false, "recompute", "", false}, {true, "split", "off", false}, {true, "recompute", "", true},
		{true, "split", "", true}, {true, "recompute", "", false}} {
		file := c.file
		sets := append(testkit.ModelSets("gcn"), `train.mode="chunked"`, `train.backend="cpu"`, "chunked.chunks=3", `chunked.intermediates="`+c.inter+`"`, `train.dtype="float32"`,
			`chunked.premultiply="`+c.pre+`"`)
		if file {
			sets = append(sets, "chunked.host_file="+filepath.Join(t.TempDir(), "host.bin"))
		}
		ctx := context.Background()
		if c.tight {
			ctx = graph.WithMaxMemory(ctx, 1<<20)
		}
		r, _ := newTestRunCtx(t, ctx, testkit.MustParse(t, testkit.CoraBase, sets...))
		if _, err := r.Epoch(context.Background(), 1, func() error { return nil }); err != nil {
			t.Fatal(err)
		}
		var res train.Result
		r.ReportResult(&res)
		got := res.Figures["chunked"].(*ChunkedFigures).HostFile
		if !file {
			if got != nil {
				t.Errorf("host tier in RAM: host_file figures %+v, want none", got)
			}
			continue
		}
		const n, s = 2708, 4
		hidden, classes := int64(r.widths[1]), int64(r.widths[2])
		var nt int64 // Cora's 140 training nodes are its first ids: chunk 0's
		for _, c := range r.plan.Chunks {
			if len(c.Train) > 0 {
				nt += int64(len(c.Dst))
			}
		}
		if nt == 0 || nt == n {
			t.Fatalf("%d destinations in chunks with training nodes: want some chunks without", nt)
		}
		want := HostFileFigures{MinReadBytes: 3*n*hidden*s + nt*classes*s, MinWrittenBytes: 2*n*hidden*s + nt*classes*s, FeatureBytes: n * 1433 * 4}
		if c.inter == "split" {
			kept := n*hidden*s + n*classes*s
			want.MinReadBytes += kept
			want.MinWrittenBytes += kept
		}
		if c.pre == "" {
			if !r.isPre(0) || r.isPre(1) {
				t.Fatalf("node passes %v, want layer 0's", r.preFigure())
			}
			z := n * hidden * s
			switch {
			case !c.tight:
				want.RAMBytes = 2 * ((z + 4095) / 4096 * 4096) // page-aligned matrices
			case c.inter == "recompute":
				want.MinReadBytes += 3 * z
				want.MinWrittenBytes += 2 * z
			default:
				want.MinReadBytes += 2 * z
				want.MinWrittenBytes += 2 * z
			}
		}
		if got.MinReadBytes != want.MinReadBytes || got.MinWrittenBytes != want.MinWrittenBytes || got.FeatureBytes != want.FeatureBytes || got.RAMBytes != want.RAMBytes {
			t.Errorf("bounds %+v, want %+v", *got, want)
		}
		if got.ReadBytes < got.MinReadBytes || got.WrittenBytes != got.MinWrittenBytes {
			t.Errorf("measured %d read, %d written: below the bound %d, or not the bound %d", got.ReadBytes, got.WrittenBytes, got.MinReadBytes, got.MinWrittenBytes)
		}
		t.Logf("read %d (bound %d), written %d (bound %d)", got.ReadBytes, got.MinReadBytes, got.WrittenBytes, got.MinWrittenBytes)
	}
}

// TestChunkedHybridSplitsOnHost: with the default intermediates (hybrid)
// on the cpu backend every layer that can split splits (hostSplits),
// where on simulated devices the price chooses: GCN's layer 1 (128 → 5,
// its weight first) recomputes there, as its backward reloads the input
// rows anyway and the forward is cheap on a V100.
func TestChunkedHybridSplitsOnHost(t *testing.T) {
	for _, c := range []struct{ backend, modes string }{{"cpu", "split split"}, {"sim", "split recompute"}} {
		sets := append(testkit.ModelSets("gcn"), `train.mode="chunked"`, `train.backend="`+c.backend+`"`, `data.dataset="rmat-12-8-64-5-1"`,
			"model.hidden=128", "chunked.chunks=4")
		r, _ := newTestRun(t, testkit.MustParse(t, testkit.CoraBase, sets...))
		if got := strings.Join(r.modes(), " "); got != c.modes {
			t.Errorf("%s: modes %q, want %q", c.backend, got, c.modes)
		}
	}
}

// TestHostFileTrafficPrecomputed checks the host file's figures after an
// epoch of GCN on R-MAT 2^10 (32 features, 64 hidden, 5 classes; float32,
// 4 chunks, recompute) whose layer 0 aggregation is computed once
// (chunked.precompute): the epoch reads that matrix a_0 (32 columns)
// twice, by layer 0's forward and backward node passes, and writes none
// of it; h_1 is written once and read by forward 1 and backward 1, dh_1
// written and read once, dh_2 the loss gradient of the chunks with
// training nodes; with layer 1's X·W_1 computed once per node, z_1 and
// dz_1 (5 columns) are written once and read once, z_1 again by the
// recomputing backward (in RAM within an eighth of the memory budget,
// else in the file), and layer 0's rest runs in one node pass with
// that product (fuse.go): h_1 and dh_1 never reach the file. All that is
// written is the bound.
func TestHostFileTrafficPrecomputed(t *testing.T) {
	for _, c := range []struct {
		pre   string
		tight bool // a 64 KiB memory budget: z_1 and dz_1 do not fit in RAM
	}{{"off", false}, {"", true}, {"", false}} {
		pre := c.pre
		sets := append(testkit.ModelSets("gcn"), `data.dataset="rmat-10-8-32-5-1"`, "data.symmetrize=true", "model.hidden=64", "model.input_dropout=0",
			`train.mode="chunked"`, `train.backend="cpu"`, "chunked.chunks=4", `chunked.intermediates="recompute"`, `train.dtype="float32"`,
			`chunked.premultiply="`+pre+`"`, "chunked.host_file="+filepath.Join(t.TempDir(), "host.bin"))
		ctx := context.Background()
		if c.tight {
			ctx = graph.WithMaxMemory(ctx, 64<<10)
		}
		r, _ := newTestRunCtx(t, ctx, testkit.MustParse(t, testkit.CoraBase, sets...))
		if r.fixedFigure() != 32 {
			t.Fatalf("precomputed width %d, want 32", r.fixedFigure())
		}
		if _, err := r.Epoch(context.Background(), 1, func() error { return nil }); err != nil {
			t.Fatal(err)
		}
		var res train.Result
		r.ReportResult(&res)
		got := res.Figures["chunked"].(*ChunkedFigures).HostFile
		n, s := int64(r.e.DS.NumNodes), int64(4)
		var nt int64
		for _, c := range r.plan.Chunks {
			if len(c.Train) > 0 {
				nt += int64(len(c.Dst))
			}
		}
		h, a := n*64*s, n*32*s
		want := HostFileFigures{MinReadBytes: 3*h + nt*5*s + 2*a, MinWrittenBytes: 2*h + nt*5*s, FeatureBytes: n * 32 * 4}
		if pre == "" {
			if !r.isPre(1) || r.fused == nil {
				t.Fatalf("node passes %v (fused %v), want layer 1's, fused with layer 0's", r.preFigure(), r.fused != nil)
			}
			z := n * 5 * s
			want.MinReadBytes -= 3 * h
			want.MinWrittenBytes -= 2 * h
			if c.tight {
				want.MinReadBytes += 3 * z
				want.MinWrittenBytes += 2 * z
			} else {
				want.RAMBytes = 2 * ((z + 4095) / 4096 * 4096)
			}
		}
		if got.MinReadBytes != want.MinReadBytes || got.MinWrittenBytes != want.MinWrittenBytes || got.FeatureBytes != want.FeatureBytes || got.RAMBytes != want.RAMBytes {
			t.Errorf("premultiply %q: bounds %+v, want %+v", pre, *got, want)
		}
		if got.ReadBytes < got.MinReadBytes || got.WrittenBytes != got.MinWrittenBytes {
			t.Errorf("premultiply %q: measured %d read, %d written: below the bound %d, or not the bound %d", pre, got.ReadBytes, got.WrittenBytes, got.MinReadBytes, got.MinWrittenBytes)
		}
		t.Logf("premultiply %q: read %d (bound %d), written %d (bound %d)", pre, got.ReadBytes, got.MinReadBytes, got.WrittenBytes, got.MinWrittenBytes)
	}
}
