//go:build cuda

package cuda_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	_ "strata/plugins/all" // every built-in plugin
	"strata/plugins/strategy/minibatch"
	"strconv"
	"testing"

	"strata/core/config"
	"strata/core/tensor"
	"strata/core/train"
	"strata/internal/floattol"
	"strata/plugins/wasm"
)

// trainEpochs is the number of epochs of the accuracy test: 200 (the
// published GCN schedule) on a GPU. STRATA_CUDA_EPOCHS lowers it under the
// CPU mock of the driver, where every kernel thread runs sequentially.
func trainEpochs(t *testing.T) int {
	if s := os.Getenv("STRATA_CUDA_EPOCHS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("STRATA_CUDA_EPOCHS = %q: want a positive integer", s)
		}
		return n
	}
	return 200
}

// trainOn trains the config on each backend with the --set overrides.
func trainOn(t *testing.T, toml string, backends []string, sets ...string) map[string]*train.Result {
	t.Helper()
	res := map[string]*train.Result{}
	for _, be := range backends {
		cfg, err := config.Parse("test.toml", []byte(toml), append([]string{"train.backend=" + be, "output.progress=off"}, sets...)...)
		if err != nil {
			t.Fatal(err)
		}
		r, err := train.Run(context.Background(), cfg, train.Options{Host: wasm.Host{Options: wasm.Options{CacheDir: filepath.Join(t.TempDir(), "wasm")}}})
		if err != nil {
			t.Fatalf("%s: %v", be, err)
		}
		res[be] = r
	}
	return res
}

const coraGCN = `
[data]
dataset = "embedded:cora"
[model]
name = "gcn"
hidden = 16
dropout = 0.5
[train]
lr = 0.01
weight_decay = 5e-4
`

const coraSAGEMiniBatch = `
[data]
dataset = "embedded:cora"
[model]
name = "sage"
hidden = 32
dropout = 0.5
[train]
mode = "minibatch"
batch_size = 256
lr = 0.01
[sampler]
name = "uniform"
fanouts = [5, 10]
[cache]
name = "degree"
capacity = 0.2
`

// Full-graph GCN on Cora trained on the GPU reaches the CPU's accuracy
// within half a point, in float32 and float64.
func TestCoraAccuracy(t *testing.T) {
	epochs := trainEpochs(t)
	for _, dt := range []string{"float32", "float64"} {
		t.Run(dt, func(t *testing.T) {
			res := trainOn(t, coraGCN, []string{"cpu", "cuda"}, "train.dtype="+dt, "train.epochs="+strconv.Itoa(epochs))
			c, g := res["cpu"], res["cuda"]
			if g.Backend != "cuda" || g.Device == "" {
				t.Fatalf("the run reports backend %q on device %q", g.Backend, g.Device)
			}
			t.Logf("test accuracy cpu %.4f cuda %.4f; final loss cpu %.6f cuda %.6f", c.TestAcc, g.TestAcc, c.FinalLoss, g.FinalLoss)
			if math.Abs(c.TestAcc-g.TestAcc) > 0.005 {
				t.Errorf("test accuracy %.4f on the GPU, %.4f on the CPU: more than 0.5 points apart", g.TestAcc, c.TestAcc)
			}
			tol := 1e-3
			if dt == "float64" {
				tol = 1e-9
			}
			if d := math.Abs(c.FinalLoss - g.FinalLoss); d > tol*math.Max(1, c.FinalLoss) {
				t.Errorf("final loss %.9f on the GPU, %.9f on the CPU", g.FinalLoss, c.FinalLoss)
			}
		})
	}
}

// Mini-batch GraphSAGE with a degree cache on the GPU: hot feature rows in
// device memory, cold rows read from pinned host memory in place. The
// simulated device (the CPU reference with the same tiers) must agree on
// accuracy and on the cache's hit rate, which only depends on the sampler.
func TestCoraMiniBatchTiered(t *testing.T) {
	for _, overlap := range []bool{false, true} {
		t.Run(fmt.Sprintf("overlap=%v", overlap), func(t *testing.T) { testCoraMiniBatch(t, overlap) })
	}
}

// testCoraMiniBatch runs the comparison; with overlap the transfer stage
// drives the backend from its own goroutine while training runs.
func testCoraMiniBatch(t *testing.T, overlap bool) {
	epochs := max(trainEpochs(t)/10, 2)
	res := trainOn(t, coraSAGEMiniBatch, []string{"sim", "cuda"}, "train.epochs="+strconv.Itoa(epochs), "minibatch.overlap="+strconv.FormatBool(overlap))
	s, g := res["sim"], res["cuda"]
	t.Logf("test accuracy sim %.4f cuda %.4f; cache hit rate sim %.4f cuda %.4f", s.TestAcc, g.TestAcc, s.Figures["minibatch"].(*minibatch.Figures).CacheHitRate, g.Figures["minibatch"].(*minibatch.Figures).CacheHitRate)
	if math.Abs(s.TestAcc-g.TestAcc) > 0.005 {
		t.Errorf("test accuracy %.4f on the GPU, %.4f on the simulated device", g.TestAcc, s.TestAcc)
	}
	if s.Figures["minibatch"].(*minibatch.Figures).CacheHitRate != g.Figures["minibatch"].(*minibatch.Figures).CacheHitRate || g.Figures["minibatch"].(*minibatch.Figures).CacheHitRate == 0 {
		t.Errorf("cache hit rate %.6f on the GPU, %.6f on the simulated device", g.Figures["minibatch"].(*minibatch.Figures).CacheHitRate, s.Figures["minibatch"].(*minibatch.Figures).CacheHitRate)
	}
}

// HongTu's chunked training (strategy.chunked) on the GPU: layer by layer
// over 4 chunks, the vertex data in host memory, gives the CPU's
// full-graph loss and accuracy (float64, every dropout on: a row draws its
// masks by its global id on either backend, in any chunk).
func TestCoraChunked(t *testing.T) {
	epochs := strconv.Itoa(max(trainEpochs(t)/10, 2))
	sets := []string{"train.dtype=float64", "model.dropout=0.5", "model.input_dropout=0.3", "train.epochs=" + epochs}
	full := trainOn(t, coraGCN, []string{"cpu"}, sets...)["cpu"]
	// The runs differ in the order of their float64 sums only (cuBLAS,
	// chunks): two orders of the longest, a weight gradient's over the
	// 2708 rows, differ by 2γ_2708; each Adam step carries a relative
	// change δ of a gradient into the parameters as at most lr·δ
	// (plugins/strategy/internal/testkit's SplitTol), so the loss after
	// the epochs' steps is within epochs·2γ_2708, times 100 for magnitude against
	// cancellation (observed on an H100: equal to 12 digits).
	n, _ := strconv.Atoi(epochs)
	tol := floattol.Orders(floattol.Gamma(2708, floattol.UFloat64)) * 100 * float64(n)
	for _, inter := range []string{"cache", "recompute"} {
		g := trainOn(t, coraGCN, []string{"cuda"}, append(sets, "train.mode=chunked", "chunked.chunks=4", "chunked.intermediates="+inter)...)["cuda"]
		t.Logf("%s: test accuracy cpu full-graph %.4f cuda chunked %.4f; final loss %.12f / %.12f", inter, full.TestAcc, g.TestAcc, full.FinalLoss, g.FinalLoss)
		// The host tier (features, both layers' outputs and their
		// gradients, float64) is pinned: counted in the host tier.
		const nodes, features, hidden, classes = 2708, 1433, 16, 7
		if got, want := g.PeakTierBytes[string(tensor.Host)], int64(nodes*(features+2*hidden+2*classes)*8); got < want {
			t.Errorf("%s: %d bytes of pinned host memory at the peak, want the host tier's %d at least", inter, got, want)
		}
		if g.TestAcc != full.TestAcc || math.Abs(g.FinalLoss-full.FinalLoss) > tol*full.FinalLoss {
			t.Errorf("%s: chunked on the GPU: accuracy %.4f, loss %.12f; full graph on the CPU %.4f, %.12f", inter, g.TestAcc, g.FinalLoss, full.TestAcc, full.FinalLoss)
		}
	}
}
