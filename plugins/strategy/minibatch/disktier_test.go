package minibatch

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"strata/core/config"
	"strata/core/graph"
	"strata/core/train/strategytest"
	"strata/plugins/strategy/internal/testkit"
)

// TestDiskTierTrainsAsMemory trains mini-batches with the input rows
// read from the file behind host caches of several policies and sizes:
// the losses and parameters equal the in-memory run's bit for bit (the
// rows are the same float32 values).
func TestDiskTierTrainsAsMemory(t *testing.T) {
	path, _ := strategytest.CoraBinary(t)
	base := []string{`data.dataset="` + path + `"`, `data.feature_norm="none"`, `train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[5, 5]", "train.batch_size=512"}
	for _, c := range []struct {
		name, base string
		sets       []string
	}{
		{"nodes", testkit.CoraBase, nil},
		{"micro-batches", testkit.CoraBase, []string{"minibatch.micro_batches=2", `partition.name="random"`}},
		{"link edge batches", strategytest.LinkBase, nil},
	} {
		want := testkit.RunSteps(t, 2, c.base, append(slices.Clone(base), c.sets...)...)
		for _, pol := range []string{"cache.lru", "cache.s3fifo"} {
			for _, bytes := range []string{"0", "400000"} {
				sets := append(append(slices.Clone(base), c.sets...), `minibatch.features.tier="disk"`,
					`minibatch.features.cache_policy="`+pol+`"`, "minibatch.features.cache_bytes="+bytes)
				got := testkit.RunSteps(t, 2, c.base, sets...)
				for s := range want {
					if got[s].Loss != want[s].Loss || testkit.RelDiff(got[s].Params, want[s].Params) != 0 {
						t.Fatalf("%s, %s, %s bytes: step %d loss %v, want %v (params differ by %g)", c.name, pol, bytes, s, got[s].Loss, want[s].Loss, testkit.RelDiff(got[s].Params, want[s].Params))
					}
				}
			}
		}
	}
}

// TestDiskTierRejects checks the configs the disk tier refuses, each with
// a KeyError naming its key.
func TestDiskTierRejects(t *testing.T) {
	path, _ := strategytest.CoraBinary(t)
	base := []string{`data.feature_norm="none"`, `train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[5, 5]", "train.batch_size=512", `minibatch.features.tier="disk"`}
	for _, c := range []struct {
		name, key string
		budget    int64
		sets      []string
	}{
		{"not a binary file", "minibatch.features.tier", 0, nil},
		{"cache over the budget", "minibatch.features.cache_bytes", 1 << 20, []string{`data.dataset="` + path + `"`, "minibatch.features.cache_bytes=2000000"}},
		{"negative cache", "minibatch.features.cache_bytes", 0, []string{`data.dataset="` + path + `"`, "minibatch.features.cache_bytes=-1"}},
		{"static policy", "minibatch.features.cache_policy", 0, []string{`data.dataset="` + path + `"`, `minibatch.features.cache_policy="cache.degree"`}},
		{"normalised rows", "data.feature_norm", 0, []string{`data.dataset="` + path + `"`, `data.feature_norm="row"`}},
		{"device store", "minibatch.features.tier", 0, []string{`data.dataset="` + path + `"`, `cache.name="degree"`, `train.backend="sim"`}},
		{"host cache without the tier", "minibatch.features.cache_bytes", 0, []string{`minibatch.features.tier="memory"`, "minibatch.features.cache_bytes=4096"}},
		{"cold epochs without the tier", "minibatch.features.drop_page_cache", 0, []string{`minibatch.features.tier="memory"`, "minibatch.features.drop_page_cache=true"}},
	} {
		ctx := context.Background()
		if c.budget > 0 {
			ctx = graph.WithMaxMemory(ctx, c.budget)
		}
		cfg, err := config.Parse("test.toml", []byte(testkit.CoraBase), append(slices.Clone(base), c.sets...)...)
		if err == nil {
			_, err = testkit.StepsIn(ctx, t, 1, cfg)
		}
		var ke *config.Error
		if !errors.As(err, &ke) || !strings.Contains(ke.Key, c.key) {
			t.Errorf("%s: error %v, want a KeyError on %s", c.name, err, c.key)
		}
	}
}

// TestDiskTierCounts runs an epoch with no host cache, then one with a
// cache of every row: without a cache every input row is a miss read from
// the file; with one each row is read once; the bytes are the misses ×
// the row size (rows are read in runs of adjacent ids, no over-read).
func TestDiskTierCounts(t *testing.T) {
	path, _ := strategytest.CoraBinary(t)
	for _, c := range []struct {
		bytes    string
		wantHits bool
	}{{"0", false}, {"100000000", true}} {
		cfg := testkit.MustParse(t, testkit.CoraBase, `data.dataset="`+path+`"`, `data.feature_norm="none"`, `train.mode="minibatch"`, `sampler.name="uniform"`,
			"sampler.fanouts=[5, 5]", "train.batch_size=256", `minibatch.features.tier="disk"`, "minibatch.features.cache_bytes="+c.bytes)
		env, st := testkit.NewTestStepper(t, cfg)
		m := st.(*miniBatches)
		for e := range 2 {
			if _, err := st.Epoch(context.Background(), uint64(e+1), func() error { return nil }); err != nil {
				t.Fatal(err)
			}
		}
		s, rb := m.disk.Stats(), int64(env.Dim)*4
		if s.Misses == 0 || s.Bytes != s.Misses*rb || (s.Hits > 0) != c.wantHits {
			t.Errorf("cache %s bytes: %+v, want bytes = misses × %d, hits only with a cache", c.bytes, s, rb)
		}
		if c.wantHits && s.Misses > int64(env.Dataset.NumNodes) {
			t.Errorf("a cache of every row read %d rows of %d", s.Misses, env.Dataset.NumNodes)
		}
		if m.diskEpoch.Hits+m.diskEpoch.Misses == 0 || m.diskTierFigure() == nil {
			t.Errorf("no per-epoch disk figures: %+v", m.diskEpoch)
		}
	}
}
