package steprun

import (
	"fmt"

	"strata/core/backend"
	"strata/core/config"
	"strata/core/engine"
	"strata/core/ir"
	"strata/core/sampling"
)

// AllReduceParams sums the gradients of the replicas ps onto ps[0] and,
// with broadcast, gives every replica the sum: a reduce and a broadcast,
// each a Copy over the links (which the simulated backend counts as
// gradients).
func AllReduceParams(be backend.Backend, ps []*engine.Params, broadcast bool) error {
	if len(ps) < 2 {
		return nil
	}
	be = backend.ForPurpose(be, backend.PurposeGradients)
	root := ps[0].List()
	for i, p := range root {
		tmp, err := be.Alloc(p.Grad.DType(), p.Grad.Shape(), p.Grad.Tier())
		if err != nil {
			return err
		}
		for _, r := range ps[1:] {
			if err := be.Copy(tmp, r.List()[i].Grad); err != nil {
				be.Release(tmp)
				return err
			}
			if err := be.Axpby(1, tmp, 1, p.Grad); err != nil {
				be.Release(tmp)
				return err
			}
		}
		be.Release(tmp)
		for _, r := range ps[1:] {
			if !broadcast {
				break
			}
			if err := be.Copy(r.List()[i].Grad, p.Grad); err != nil {
				return err
			}
		}
	}
	return nil
}

// BatchSeed is the dropout seed of global batch n of the epoch seeded
// seed: one for the whole batch, however it is split between devices,
// trainers, ranks or micro-batches (the masks are keyed by each row's
// global id, engine.Env.NodeIDs), so every split draws the masks of the
// batch trained whole. Batch 0's is the epoch's: one batch of every
// training node over full-neighbour blocks is full-graph training.
func BatchSeed(seed uint64, n int) uint64 { return seed ^ uint64(n)*0xbf58476d1ce4e5b9 }

// Shuffled returns a seeded permutation of ids (Fisher-Yates, splitmix64).
func Shuffled(ids []int32, seed uint64) []int32 {
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

// CheckSampler checks the [sampler] of a sampled strategy: one is set,
// and it samples one block per model layer.
func CheckSampler(cfg *config.Config) error {
	if cfg.Sampler.Name == "" {
		return cfg.KeyError(fmt.Sprintf("train.mode = %q needs a neighbour sampler: add [sampler] with name = \"uniform\" and fanouts = [...] (one per model layer)", cfg.Train.Mode), "train", "mode")
	}
	s, ok := cfg.Sampler.Module.(sampling.Sampler)
	if !ok {
		return fmt.Errorf("sampler.name = %q is not a sampler", cfg.Sampler.Name)
	}
	if n := sampling.NumLayers(s); n != cfg.Model.Layers {
		return cfg.KeyError(fmt.Sprintf("%s samples %d layers but model.layers = %d; give one fanout per layer", cfg.Sampler.ID, n, cfg.Model.Layers), "sampler")
	}
	return nil
}

// GraphsPerLayer returns the graph names each layer of g reads.
func GraphsPerLayer(g *ir.Graph) []map[string]bool {
	var out []map[string]bool
	for _, op := range g.Ops {
		for int(op.Layer) >= len(out) {
			out = append(out, map[string]bool{})
		}
		if op.Kind == ir.OpGraph {
			out[op.Layer][op.Name] = true
		}
	}
	return out
}

func MiB(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func Iota32(n int) []int32 { return Iota32From(0, n) }

func Iota32From(lo, hi int) []int32 {
	out := make([]int32, hi-lo)
	for i := range out {
		out[i] = int32(lo + i)
	}
	return out
}
