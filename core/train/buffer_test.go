package train

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"strata/core/backend/cpu"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/ir"
	"strata/core/optim"
	"strata/core/tensor"
)

// TestBufferSurvivesStepAndCheckpoint: a buffer (ir.Builder.Buffer) is
// not among the parameters the loop steps, so every optimizer (with weight
// decay, which would move even a zero-gradient weight) leaves it as it
// was while the learnable weight moves; and the model state written to a
// checkpoint file ("state/<name>") restores it into a fresh model.
func TestBufferSurvivesStepAndCheckpoint(t *testing.T) {
	b := ir.NewBuilder()
	x := b.Input("x", 3)
	w := b.Param("W", []int64{3, 2}, "glorot")
	b.Output(b.Bias(b.MatMul(x, w), b.Buffer("shift", []int64{2}, "normal")))
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	be := cpu.New(cpu.Options{Threads: 1})
	newParams := func(seed uint64) *engine.Params {
		ps, err := engine.NewParams(g, be, tensor.Float64, tensor.Host, seed)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ps.Release)
		return ps
	}
	down := func(tt *tensor.Tensor) []float64 {
		v, err := engine.DownloadFloats(be, tt)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	ps := newParams(1)
	for _, name := range []string{"adam", "sgd"} {
		opt, err := optim.New(name, be, optim.Hyper{LR: 0.1, WeightDecay: 0.5, Momentum: 0.9})
		if err != nil {
			t.Fatal(err)
		}
		buf, wv := down(ps.Buffer("shift")), down(ps.List()[0].Value)
		if err := be.Fill(ps.List()[0].Grad, 1); err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(ps.List()); err != nil {
			t.Fatal(err)
		}
		if got := down(ps.Buffer("shift")); !slices.Equal(got, buf) {
			t.Errorf("%s: the step changed the buffer: %v -> %v", name, buf, got)
		}
		if got := down(ps.List()[0].Value); slices.Equal(got, wv) {
			t.Errorf("%s: the step left the learnable weight unchanged", name)
		}
	}
	want := down(ps.Buffer("shift"))
	state, err := ps.SnapshotState()
	if err != nil {
		t.Fatal(err)
	}
	arrays := map[string][]float64{}
	addPrefixed(arrays, "state/", state)
	path := filepath.Join(t.TempDir(), "m.ckpt")
	if err := writeArrays(path, "checkpoint", map[string]int{}, arrays); err != nil {
		t.Fatal(err)
	}
	back, err := readArrays(path, "checkpoint", &map[string]int{})
	if err != nil {
		t.Fatal(err)
	}
	fresh := newParams(2) // another seed: another initial buffer
	if slices.Equal(down(fresh.Buffer("shift")), want) {
		t.Fatal("the fresh model's buffer already holds the saved values; the test cannot tell a restore")
	}
	if err := fresh.RestoreState(prefixed(back, "state/")); err != nil {
		t.Fatal(err)
	}
	if got := down(fresh.Buffer("shift")); !slices.Equal(got, want) {
		t.Fatalf("restored buffer %v, want %v", got, want)
	}
}

// TestBindGraphsWithoutSelfLoops: adjacencies built for a model that
// reads only adj cannot serve one that reads adj_self: BindGraphs says
// so instead of uploading a nil graph; built for it, they can.
func TestBindGraphsWithoutSelfLoops(t *testing.T) {
	ds := &graph.Dataset{NumNodes: 3, Graph: graph.MakeCSR(3, 3, []int64{0, 1, 2, 2}, []int32{1, 0})}
	reads := &ir.Graph{Ops: []ir.Op{{Kind: ir.OpGraph, Name: "adj_self"}}}
	only := &ir.Graph{Ops: []ir.Op{{Kind: ir.OpGraph, Name: "adj"}}}
	if a := BuildModelAdjacencies(ds, true, only); a.AdjSelf != nil || a.Adj.NNZ() != 2 {
		t.Fatalf("for a model reading adj: AdjSelf %v, adj %d edges; want nil and 2", a.AdjSelf, a.Adj.NNZ())
	}
	be := cpu.New(cpu.Options{Threads: 1})
	_, err := BindGraphs(reads, BuildModelAdjacencies(ds, true, only), be, tensor.Float32, tensor.Host)
	if err == nil || !strings.Contains(err.Error(), "adj_self") {
		t.Fatalf("binding adj_self without it: %v, want an error naming adj_self", err)
	}
	graphs, err := BindGraphs(reads, BuildModelAdjacencies(ds, true, reads), be, tensor.Float32, tensor.Host)
	if err != nil {
		t.Fatal(err)
	}
	ReleaseGraphs(be, graphs)
}
