package strategytests

import (
	"strings"
	"testing"

	"strata/core/config"
)

// TestSharedOptionsKeepTheirHash pins config_sha256 of configs that set
// the options several strategies took over from [train] (batch_size,
// prefetch as prefetch_depth, micro_batches), in the old and the new
// spelling: the hashes were printed by the code before the move (9aa86c9),
// so every published run ID stays the same.
func TestSharedOptionsKeepTheirHash(t *testing.T) {
	const cora = "[data]\ndataset = \"embedded:cora\"\n\n[model]\nname = \"gcn\"\n\n[train]\nepochs = 2\n"
	const mini = "[data]\ndataset = \"embedded:cora\"\n\n[model]\nname = \"sage\"\nhidden = 16\n\n[train]\nmode = \"minibatch\"\nepochs = 2\nbatch_size = 256\n\n[sampler]\nname = \"uniform\"\nfanouts = [5, 5]\n"
	mode := func(m string) string { return strings.Replace(mini, `"minibatch"`, `"`+m+`"`, 1) }
	for _, c := range []struct {
		text     string
		old, new []string
		want     string
	}{
		{cora, []string{"train.micro_batches=4", "partition.name=betty-reg"}, []string{"fullgraph.micro_batches=4", "partition.name=betty-reg"},
			"2ffff2bbb7318ffb9b6a68247cd580f28d0c7a168ec935284413e7c31b40d6c6"},
		{cora + "backend = \"sim\"\n[devices]\nmemory_bytes = 20000000\n", []string{"train.micro_batches=auto", "partition.name=betty-reg"}, []string{"fullgraph.micro_batches=auto", "partition.name=betty-reg"},
			"74c986065ca444c16130d4c0b2d57704119717e63645b513f73f6034103231c2"},
		{cora, []string{"train.mode=micro", "train.micro_batches=2", "partition.name=range"}, []string{"train.mode=micro", "micro.micro_batches=2", "partition.name=range"},
			"fd1070708f96fb73bcc3673d44058a7c60831b06bb237d32ca7f351d58466528"},
		// Defaults written out under a strategy that reads none of them.
		{cora, []string{"train.batch_size=1024", "train.prefetch=2", "train.micro_batches=1"}, nil,
			"40c9d638a07ba29e19ee454c903c9ebba4828a8f310b77efb3abd8068d7bcfce"},
		{mini, []string{"train.micro_batches=2", "partition.name=betty-reg"}, []string{"minibatch.micro_batches=2", "partition.name=betty-reg"},
			"de3c6ee34321ace89b86efb1f4c39788d0d34fd2a3c9cdeb8f52776e5c2d8f1b"},
		{mini, []string{"train.batch_size=512", "train.prefetch=4"}, []string{"minibatch.batch_size=512", "minibatch.prefetch_depth=4"},
			"1229b6238376edf74fc95c8378fbf4e86f0775c8e77630e57a95f11d4fe39f6c"},
		{mode("hybrid"), []string{"train.batch_size=256", "train.prefetch=3"}, []string{"hybrid.batch_size=256", "hybrid.prefetch_depth=3"},
			"9fcced0e785c3aa1c58f636811d0c5139b8cfb2810f13e1e6487ecd9d7d665f3"},
		{mode("distmini"), []string{"train.batch_size=128"}, []string{"distmini.batch_size=128"},
			"a133b0df2083febccbec4b60dd6e7b19cb36ca91ab6781b2b643395b35714a88"},
	} {
		for _, sets := range [][]string{c.old, c.new} {
			cfg, err := config.Parse("c.toml", []byte(c.text), sets...)
			if err != nil {
				t.Fatalf("%v: %v", sets, err)
			}
			if got, _ := cfg.SHA256(); got != c.want {
				canon, _ := cfg.Canonical()
				t.Errorf("%v: config_sha256 %s, want %s; canonical form:\n%s", sets, got, c.want, canon)
			}
		}
	}
}
