package strategytests

import (
	"math"
	"strings"
	"testing"

	"strata/plugins/strategy/internal/testkit"
)

// TestLinkMicroMatchesWhole trains Cora's links in float64 with every
// dropout on, split into micro-batches (Betty: each training edge and
// its negatives in its source's part, gradients accumulated) and whole:
// strategy.micro against full-graph training, and mini-batches of edges
// split into micro-batches against the same mini-batches whole. The
// micro-batches see the same neighbours and the same dropout masks (they
// follow the nodes), so the losses of two epochs agree to float
// rounding (testkit.SplitTol), also with a decoder that has parameters
// and with the margin loss.
func TestLinkMicroMatchesWhole(t *testing.T) {
	mini := []string{"train.mode=minibatch", "sampler.name=uniform", "sampler.fanouts=[10,10]", "minibatch.batch_size=1500"}
	cases := []struct {
		name        string
		whole, part []string
	}{
		{"micro/betty-reg", nil, []string{"train.mode=micro", "micro.micro_batches=4", "partition.name=betty-reg"}},
		{"micro/range/hadamard-mlp/margin", []string{"link.decoder=hadamard-mlp", "link.loss=margin", "link.negatives=3"},
			[]string{"train.mode=micro", "micro.micro_batches=7", "partition.name=range"}},
		{"minibatch/betty-reg/exclude", mini, []string{"minibatch.micro_batches=3", "partition.name=betty-reg"}},
		{"minibatch/range/hadamard-mlp", append([]string{"link.exclude=none", "link.decoder=hadamard-mlp"}, mini...),
			[]string{"minibatch.micro_batches=5", "partition.name=range"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sets := append([]string{"train.epochs=2", "train.dtype=float64", "train.eval_every=0"}, testkit.SplitDropouts("gcn")...)
			sets = append(sets, c.whole...)
			whole := runLink(t, linkBase, sets...)
			split := runLink(t, linkBase, append(sets, c.part...)...)
			if d := math.Abs(whole.FinalLoss-split.FinalLoss) / math.Abs(whole.FinalLoss); !(d <= testkit.SplitTol) {
				t.Fatalf("loss %v whole, %v in micro-batches: relative difference %.3g, above %g", whole.FinalLoss, split.FinalLoss, d, testkit.SplitTol)
			}
			if whole.TestAcc != split.TestAcc && math.Abs(whole.TestAcc-split.TestAcc) > 1e-9 {
				t.Fatalf("test ROC-AUC %v whole, %v in micro-batches", whole.TestAcc, split.TestAcc)
			}
		})
	}
}

// TestLinkMicroBadInput checks the micro-batch keys of a link run: each
// mistake a key error naming the key.
func TestLinkMicroBadInput(t *testing.T) {
	cases := []struct {
		name string
		sets []string
		key  string
	}{
		{"micro auto", []string{"train.mode=micro", "micro.micro_batches=auto", "partition.name=range", "train.backend=sim", "devices.memory_bytes=50000000"}, "micro.micro_batches"},
		{"minibatch micro auto", []string{"train.mode=minibatch", "sampler.name=uniform", "sampler.fanouts=[5,5]", "minibatch.micro_batches=auto", "partition.name=range", "train.backend=sim", "devices.memory_bytes=50000000"}, "minibatch.micro_batches"},
		{"more micro-batches than nodes", []string{"train.mode=micro", "micro.micro_batches=3000", "partition.name=range"}, "micro.micro_batches"},
		{"more micro-batches than a batch's edges", []string{"train.mode=minibatch", "sampler.name=uniform", "sampler.fanouts=[5,5]", "minibatch.batch_size=64", "minibatch.micro_batches=65", "partition.name=range"}, "minibatch.micro_batches"},
		{"micro without a partitioner", []string{"train.mode=micro", "micro.micro_batches=2"}, "micro.micro_batches"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := linkConfigError(t, c.sets...); !strings.Contains(err.Error(), c.key) {
				t.Fatalf("err = %v; want a config error naming %s", err, c.key)
			}
		})
	}
}
