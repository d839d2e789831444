package cache

import (
	"context"
	"fmt"
	"slices"

	"strata/core/graph"
	"strata/core/registry"
	"strata/core/sampling"
)

// Epoch runs one sampling epoch: the seeds (the training nodes) are
// shuffled by a permutation drawn from (seed, epoch), cut into batches of
// batchSize, and each batch is sampled with s and the stream
// mix(seed, epoch, batch); fn gets each batch's blocks in order. The same
// arguments give the same calls. seeds is not modified.
func Epoch(ctx context.Context, g *graph.CSR, seeds []int32, s sampling.Sampler, batchSize int, seed uint64, epoch int, fn func(batch int, blocks []sampling.Block) error) error {
	if batchSize < 1 {
		return fmt.Errorf("batch size %d: must be >= 1", batchSize)
	}
	perm := slices.Clone(seeds)
	st := seed ^ uint64(epoch+1)*0xd1b54a32d192ed03
	for i := len(perm) - 1; i > 0; i-- {
		j := int(below(&st, uint64(i+1)))
		perm[i], perm[j] = perm[j], perm[i]
	}
	for b, lo := 0, 0; lo < len(perm); b, lo = b+1, lo+batchSize {
		if err := ctx.Err(); err != nil {
			return err
		}
		hi := min(len(perm), lo+batchSize)
		r := seed ^ uint64(epoch)<<32 ^ uint64(b)*0x9e3779b97f4a7c15
		r = mix(r)
		blocks, err := s.Sample(ctx, g, perm[lo:hi], r)
		if err != nil {
			return err
		}
		if err := fn(b, blocks); err != nil {
			return err
		}
	}
	return nil
}

// mix is the splitmix64 finaliser.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// AccessCounts runs epochs sampling epochs (see Epoch, epochs 0..epochs-1)
// and counts, per node, the mini-batches whose input nodes (blocks[0].Src,
// the rows whose features a batch reads) include it (Reads.Counts).
func AccessCounts(ctx context.Context, g *graph.CSR, seeds []int32, s sampling.Sampler, batchSize, epochs int, seed uint64) ([]int64, error) {
	r, err := readEpochs(ctx, g, seeds, s, batchSize, epochs, seed, false)
	if err != nil {
		return nil, err
	}
	return r.Counts, nil
}

// Presample is GNNLab's pre-sampling policy: it runs `epochs` sampling
// epochs of sampler.uniform over the training nodes (all nodes without a
// split) and ranks nodes by how many mini-batches read their features
// (occurrences in blocks[0].Src), ties by out-degree, then by id. Set the
// fanouts and batch size to the trainer's.
type Presample struct {
	Capacity
	Epochs    int   `toml:"epochs" range:"[1,1000]" doc:"sampling epochs to run"`
	Fanouts   []int `toml:"fanouts" range:"[1,1048576]" doc:"sampler.uniform fanouts, first layer first"`
	BatchSize int   `toml:"batch_size" range:"[1,1073741824]" doc:"seed nodes per mini-batch"`
	Seed      int64 `toml:"seed" doc:"random seed of the presampling epochs"`
}

// StrataModule registers cache.presample.
func (*Presample) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID: "cache.presample",
		New: func() registry.Module {
			return &Presample{Capacity: Capacity{Capacity: defaultCapacity}, Epochs: 1, Fanouts: []int{10, 10, 10}, BatchSize: 1024}
		},
		Doc: "cache the nodes most read in presampled epochs (GNNLab)",
	}
}

// Validate checks the options.
func (p *Presample) Validate() error {
	if err := p.Capacity.Validate(); err != nil {
		return err
	}
	if p.Epochs < 1 {
		return fmt.Errorf("epochs = %d: must be >= 1", p.Epochs)
	}
	if p.BatchSize < 1 {
		return fmt.Errorf("batch_size = %d: must be >= 1", p.BatchSize)
	}
	return sampling.CheckFanouts(p.Fanouts)
}

// Counts returns the access count of every node.
func (p *Presample) Counts(ctx context.Context, d *graph.Dataset) ([]int64, error) {
	const id = "cache.presample"
	if err := checkDataset(id, d); err != nil {
		return nil, err
	}
	seeds := d.Train
	if len(seeds) == 0 {
		seeds = make([]int32, d.NumNodes)
		for i := range seeds {
			seeds[i] = int32(i)
		}
	}
	s, err := uniform(slices.Clone(p.Fanouts))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	c, err := AccessCounts(ctx, d.Graph, seeds, s, p.BatchSize, p.Epochs, uint64(p.Seed))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	return c, nil
}

// uniform returns sampler.uniform with the given fanouts, made by the
// registry (the plugin that links strata links it) and set through the
// sampler contract (sampling.Fanned).
func uniform(fanouts []int) (sampling.Sampler, error) {
	s, err := registry.New[sampling.Sampler]("sampler.uniform")
	if err != nil {
		return nil, err
	}
	f, ok := s.(sampling.Fanned)
	if !ok {
		return nil, fmt.Errorf("sampler.uniform (a %T) takes no fanouts: it lacks the capability sampling.Fanned", s)
	}
	f.SetFanouts(fanouts)
	return s, nil
}

// Scores implements Scorer: the access count plus out-degree/(M+1), M the
// edge count, which breaks ties by out-degree without reordering counts.
func (p *Presample) Scores(ctx context.Context, d *graph.Dataset) ([]float64, error) {
	c, err := p.Counts(ctx, d)
	if err != nil {
		return nil, err
	}
	_, out := graph.Degrees(d.Graph)
	m := float64(d.Graph.NNZ()) + 1
	s := make([]float64, len(c))
	for i := range s {
		s[i] = float64(c[i]) + float64(out[i])/m
	}
	return s, nil
}

// Rank implements Policy.
func (p *Presample) Rank(ctx context.Context, d *graph.Dataset) ([]int32, error) {
	return rankScorer(ctx, "cache.presample", d, &p.Capacity, p)
}

// MatchSampling implements caching.SamplingAware: presample with the
// measured run's fanouts and batch size.
func (p *Presample) MatchSampling(fanouts []int, batchSize, epochs int, seed int64) {
	p.Fanouts, p.BatchSize, p.Epochs, p.Seed = append([]int(nil), fanouts...), batchSize, epochs, seed
}
