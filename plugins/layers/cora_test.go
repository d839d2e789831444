package layers_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"strata/core/config"
	"strata/core/graph"
	"strata/core/graph/formats"
	"strata/core/registry"
	"strata/core/train"
	"strata/internal/floattol"
)

// The suites' learning checks train on the embedded Cora graph (its
// edges, labels and split) with its 1,433 bag-of-words features
// row-normalised (as data.feature_norm = "auto" does) and reduced to
// their coraDim leading singular directions (a truncated SVD, the latent
// semantic analysis of the word counts; it reads no label). A layer or
// aggregator whose cost grows with the input's width (an LSTM as wide as
// its input) then trains in a fraction of a second per epoch, and every
// module runs the same data with no option of its own.
const coraDim = 64

// cora is the narrowed Cora dataset, written where the suites' runs read
// it.
type cora struct {
	path string
	ds   *graph.Dataset
}

// narrowCora writes the narrowed Cora to a .strata file under dir.
func narrowCora(t *testing.T, dir string) cora {
	t.Helper()
	ds, err := formats.LoadEmbedded("cora")
	if err != nil {
		t.Fatal(err)
	}
	x := sparseRows(ds.Features, ds.NumNodes, ds.FeatDim)
	q := leadingRightSingular(x, ds.FeatDim, coraDim)
	out := make([]float32, ds.NumNodes*coraDim)
	for i, r := range x {
		for _, e := range r {
			for c := range coraDim {
				out[i*coraDim+c] += float32(e.v * q[e.col*coraDim+c])
			}
		}
	}
	ds.Features, ds.FeatDim = out, coraDim
	path := filepath.Join(dir, "cora-narrow.strata")
	if err := formats.WriteBinary(path, ds); err != nil {
		t.Fatal(err)
	}
	return cora{path: path, ds: ds}
}

// entry is a nonzero of a sparse row.
type entry struct {
	col int
	v   float64
}

// sparseRows returns the nonzeros of the rows×cols matrix f, each row
// divided by its sum.
func sparseRows(f []float32, rows, cols int) [][]entry {
	out := make([][]entry, rows)
	for i := range rows {
		s := 0.0
		for _, v := range f[i*cols : (i+1)*cols] {
			s += float64(v)
		}
		for k, v := range f[i*cols : (i+1)*cols] {
			if v != 0 {
				out[i] = append(out[i], entry{k, float64(v) / math.Max(s, 1)})
			}
		}
	}
	return out
}

// leadingRightSingular returns, as a cols×k row-major matrix with
// orthonormal columns, the span of x's k leading right singular vectors
// by subspace iteration (XᵀX Q, from a seeded Gaussian Q, re-orthonormalised
// each time; a few iterations settle the leading directions).
func leadingRightSingular(x [][]entry, cols, k int) []float64 {
	rng := rand.New(rand.NewPCG(31, 1))
	q := make([]float64, cols*k)
	for i := range q {
		q[i] = rng.NormFloat64()
	}
	orthonormalize(q, cols, k)
	y := make([]float64, k)
	for range 6 {
		z := make([]float64, cols*k)
		for _, r := range x {
			clear(y)
			for _, e := range r {
				for c := range k {
					y[c] += e.v * q[e.col*k+c]
				}
			}
			for _, e := range r {
				for c := range k {
					z[e.col*k+c] += e.v * y[c]
				}
			}
		}
		q = z
		orthonormalize(q, cols, k)
	}
	return q
}

// orthonormalize makes the k columns of the rows×k matrix a orthonormal
// (modified Gram-Schmidt).
func orthonormalize(a []float64, rows, k int) {
	for c := range k {
		for p := range c {
			d := 0.0
			for i := range rows {
				d += a[i*k+c] * a[i*k+p]
			}
			for i := range rows {
				a[i*k+c] -= d * a[i*k+p]
			}
		}
		n := 0.0
		for i := range rows {
			n += a[i*k+c] * a[i*k+c]
		}
		for i := range rows {
			a[i*k+c] /= math.Sqrt(n)
		}
	}
}

// blind returns what a predictor blind to its input reaches on c: the
// training labels' entropy (the lowest mean cross-entropy of a
// distribution that is the same for every training node: Cora's 140
// training nodes, 20 a class, give ln 7) and the test split's
// majority-class rate (the best accuracy of a constant class).
func (c cora) blind() (entropy, majority float64) {
	counts := func(nodes []int32) []float64 {
		n := make([]float64, c.ds.NumClasses)
		for _, v := range nodes {
			n[c.ds.Labels[v]]++
		}
		return n
	}
	for _, n := range counts(c.ds.Train) {
		if p := n / float64(len(c.ds.Train)); p > 0 {
			entropy -= p * math.Log(p)
		}
	}
	for _, n := range counts(c.ds.Test) {
		majority = math.Max(majority, n/float64(len(c.ds.Test)))
	}
	return entropy, majority
}

// learnEpochs and learnLR are the learning checks' run: 20 Adam steps at
// twice the usual rate (0.01), dropout off, so the run is deterministic.
const (
	learnEpochs = 20
	learnLR     = 0.02
)

// run trains on c with the [model] lines model, learnEpochs full-graph
// epochs with dropout off on two threads, and the sets.
func (c cora) run(t *testing.T, model string, sets ...string) *train.Result {
	t.Helper()
	text := fmt.Sprintf("[data]\ndataset = %q\nfeature_norm = \"none\"\n[model]\n%s\nlayers = 2\nhidden = 16\ndropout = 0.0\ninput_dropout = 0.0\n"+
		"[train]\nepochs = %d\nlr = %g\neval_every = 0\nseed = 1\nthreads = 2\n[output]\nprogress = \"off\"\n", c.path, model, learnEpochs, learnLR)
	cfg, err := config.Parse(filepath.Join(filepath.Dir(c.path), "suite.toml"), []byte(text), sets...)
	if err != nil {
		t.Fatal(err)
	}
	res, err := train.Run(context.Background(), cfg, train.Options{Host: testHost})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// checkLearns requires a run on c to fit its training nodes better than
// any predictor blind to its input can: its last epoch's training loss
// (dropout off: deterministic) below the training labels' entropy, less
// the float32 rounding of the mean over the training nodes. A model that
// ignores its features gives every node the same distribution and
// cannot go below it, however it starts or however long it trains; the
// loss of the first epoch is no such bound (a glorot start sits above
// it, and shrinking the logits alone comes down to it). The test
// accuracy against the majority-class rate is logged, not checked: the
// sequence aggregators (gru, lcm) generalise slowly in 20 epochs.
func (c cora) checkLearns(t *testing.T, res *train.Result) {
	t.Helper()
	h, maj := c.blind()
	t.Logf("training loss %.4f (blind bound %.4f), test accuracy %.3f (majority class %.3f) after %d epochs", res.FinalLoss, h, res.TestAcc, maj, res.Epochs)
	if hmax := h * (1 - floattol.Gamma(len(c.ds.Train), floattol.UFloat32)); !(res.FinalLoss < hmax) {
		t.Errorf("training loss %.4f after %d epochs, not below %.4f, the training labels' entropy (what a model blind to its input reaches at best): the model does not learn", res.FinalLoss, res.Epochs, hmax)
	}
}

// minibatchSets returns the settings that select strategy.minibatch with
// its own example sampler.
func minibatchSets(t *testing.T) []string {
	t.Helper()
	info, err := registry.Lookup("strategy.minibatch")
	if err != nil {
		t.Fatal(err)
	}
	sets := []string{`train.mode="minibatch"`, "train.epochs=1"}
	if ex, ok := info.New().(train.Exampler); ok {
		sets = append(sets, ex.ExampleConfig()...)
	}
	return sets
}

// moduleModel is the [model] lines that select m: model.name for a
// registered module, model.module for a fixture's file.
func moduleModel(m module) string {
	if m.file != "" {
		return fmt.Sprintf("module = %q", m.file)
	}
	return fmt.Sprintf("name = %q", m.name)
}
