package train

import (
	"context"
	"fmt"
	"time"

	"strata/core/backend/sim"
	"strata/core/config"
	"strata/core/store"
	"strata/core/tensor"
	"strata/plugins/cache"
	"strata/plugins/registry"
	"strata/plugins/sampler"
)

// miniBatches trains on sampled mini-batches: every epoch shuffles the
// training nodes into batches of train.batch_size, the configured sampler
// builds each batch's blocks, and each batch is one optimizer step.
//
// Sampling and feature extraction (the host gather of the input rows) run
// ahead of training on a goroutine, through a queue of train.prefetch
// batches; uploading and computing happen on the training goroutine.
type miniBatches struct {
	*blockRunner
	sampler  sampler.Sampler
	batch    int
	prefetch int
	seed     uint64
	// Time spent per stage in the last epoch, in seconds (sampling and
	// extraction overlap with training).
	sampleS, extractS, trainS float64
	sampledEdges              int64
	// store, when a cache policy is configured, holds the hot feature rows
	// on the device; hits and rows count the last epoch's gathers.
	store      *store.Store
	hits, rows int64
}

// newFeatureStore ranks the nodes with the [cache] policy and places the
// hot rows on the training device.
func newFeatureStore(ctx context.Context, cfg *config.Config, e stepEnv) (*store.Store, error) {
	pol, ok := cfg.Cache.Module.(cache.Policy)
	if !ok {
		return nil, cfg.KeyError(fmt.Sprintf("cache.name = %q decides online; mini-batch training takes a static policy that ranks the nodes (degree, rpagerank, weighted-rpagerank, presample, random, none)", cfg.Cache.Name), "cache", "name")
	}
	if e.tier == tensor.Host {
		return nil, cfg.KeyError("cache: a feature cache needs a device to cache on; set train.backend = \"sim\"", "cache", "name")
	}
	if e.dt != tensor.Float32 {
		return nil, cfg.KeyError("cache: the feature store holds float32 rows; set train.dtype = \"float32\"", "train", "dtype")
	}
	if err := registry.Provision(ctx, cfg.Cache.Module); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	rank, err := pol.Rank(ctx, e.ds)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Cache.ID, err)
	}
	setPurpose(e.be, sim.PurposeFeatures)
	return store.New(e.be, e.feats, e.dim, rank, store.Options{
		Placement: store.Interleaved,
		Devices:   []tensor.Tier{e.tier},
		Capacity:  []int64{int64(len(rank)) * int64(e.dim) * 4},
	})
}

func newMiniBatches(ctx context.Context, cfg *config.Config, e stepEnv) (*miniBatches, error) {
	if cfg.Sampler.Name == "" {
		return nil, cfg.KeyError("train.mode = \"minibatch\" needs a neighbour sampler: add [sampler] with name = \"uniform\" and fanouts = [...] (one per model layer)", "train", "mode")
	}
	s, ok := cfg.Sampler.Module.(sampler.Sampler)
	if !ok {
		return nil, fmt.Errorf("sampler.name = %q is not a sampler", cfg.Sampler.Name)
	}
	if err := registry.Provision(ctx, cfg.Sampler.Module); err != nil {
		return nil, fmt.Errorf("sampler: %w", err)
	}
	if n := sampler.NumLayers(s); n != cfg.Model.Layers {
		return nil, cfg.KeyError(fmt.Sprintf("%s samples %d layers but model.layers = %d; give one fanout per layer", cfg.Sampler.ID, n, cfg.Model.Layers), "sampler")
	}
	if cfg.Train.MicroBatches > 1 {
		return nil, cfg.KeyError("train.micro_batches > 1 with train.mode = \"minibatch\" is not available yet; micro-batches split full-graph steps", "train", "micro_batches")
	}
	// Evaluation runs over full neighbourhoods: in one piece, or, on a
	// device with a capacity, in chunks of batch_size nodes.
	evalChunks := 1
	if cfg.Devices.MemoryBytes > 0 {
		evalChunks = max(1, e.ds.NumNodes/max(cfg.Train.BatchSize, 1))
	}
	r, err := newBlockRunner(e, evalChunks)
	if err != nil {
		return nil, err
	}
	m := &miniBatches{blockRunner: r, sampler: s, batch: cfg.Train.BatchSize, prefetch: cfg.Train.Prefetch, seed: e.seed}
	if cfg.Cache.Name != "" {
		if m.store, err = newFeatureStore(ctx, cfg, e); err != nil {
			r.release()
			return nil, err
		}
	}
	return m, nil
}

func (m *miniBatches) release() {
	if m.store != nil {
		m.store.Close()
	}
	m.blockRunner.release()
}

// hitRate returns the share of the last epoch's feature rows that the
// device cache served.
func (m *miniBatches) hitRate() float64 {
	if m.rows == 0 {
		return 0
	}
	return float64(m.hits) / float64(m.rows)
}

// sampled is one batch made ready by the producer.
type sampled struct {
	nodes  []int32
	blocks []sampler.Block
	x      []float32
	err    error
}

func (m *miniBatches) epoch(ctx context.Context, seed uint64, update func() error) (float64, error) {
	train := shuffled(m.e.ds.Train, seed)
	var batches [][]int32
	for lo := 0; lo < len(train); lo += m.batch {
		batches = append(batches, train[lo:min(lo+m.batch, len(train))])
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue := make(chan sampled, m.prefetch)
	var sampleS, extractS float64
	var edges int64
	go func() {
		defer close(queue)
		for i, nodes := range batches {
			t0 := time.Now()
			blocks, err := m.sampler.Sample(ctx, m.e.adjs.adj, nodes, seed*0x9e3779b97f4a7c15+uint64(i))
			t1 := time.Now()
			var x []float32
			if err == nil {
				if m.store == nil {
					x = gatherRows(m.e.feats, m.e.dim, blocks[0].Src)
				}
				for _, b := range blocks {
					edges += b.NumEdges()
				}
			}
			sampleS += t1.Sub(t0).Seconds()
			extractS += time.Since(t1).Seconds()
			select {
			case queue <- sampled{nodes: nodes, blocks: blocks, x: x, err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	var loss, trainS float64
	var hits, rows int64
	n := 0
	for b := range queue {
		if b.err != nil {
			return 0, fmt.Errorf("sampling batch %d: %w", n, b.err)
		}
		t0 := time.Now()
		var input *tensor.Tensor
		if m.store != nil {
			t1 := time.Now()
			setPurpose(m.e.be, sim.PurposeFeatures)
			in, st, err := m.store.Gather(ctx, b.blocks[0].Src, m.e.tier)
			if err != nil {
				return 0, fmt.Errorf("batch %d: gathering features: %w", n, err)
			}
			input = in
			hits += int64(st.Local)
			rows += int64(st.Rows)
			extractS += time.Since(t1).Seconds()
		}
		bb, err := m.bind(b.blocks, b.x, input, false)
		if err != nil {
			return 0, fmt.Errorf("batch %d: %w", n, err)
		}
		l, err := m.trainBatch(ctx, bb, b.nodes, seed^uint64(n+1)*0xbf58476d1ce4e5b9, 1, false)
		bb.release(m.e)
		if err == nil {
			err = update()
		}
		if err != nil {
			return 0, fmt.Errorf("batch %d: %w", n, err)
		}
		trainS += time.Since(t0).Seconds()
		loss += l
		n++
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.sampleS, m.extractS, m.trainS, m.sampledEdges = sampleS, extractS, trainS, edges
	m.hits, m.rows = hits, rows
	return loss / float64(max(n, 1)), nil
}

// shuffled returns a seeded permutation of ids (Fisher-Yates, splitmix64).
func shuffled(ids []int32, seed uint64) []int32 {
	out := append([]int32(nil), ids...)
	s := seed ^ 0x2545f4914f6cdd1d
	for i := len(out) - 1; i > 0; i-- {
		s += 0x9e3779b97f4a7c15
		z := s
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		j := int(z % uint64(i+1))
		out[i], out[j] = out[j], out[i]
	}
	return out
}
