package engine

import (
	"fmt"
	"math"

	"strata/core/backend"
	"strata/core/ir"
	"strata/core/tensor"
)

// splitMix is a small deterministic generator for parameter initialisation.
type splitMix struct{ s uint64 }

func newSplitMix(seed uint64) *splitMix { return &splitMix{s: seed ^ 0x9e3779b97f4a7c15} }

func (r *splitMix) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// float returns a uniform value in [0,1).
func (r *splitMix) float() float64 { return float64(r.next()>>11) / (1 << 53) }

func (r *splitMix) normal() float64 {
	u1, u2 := r.float(), r.float()
	return math.Sqrt(-2*math.Log(1-u1)) * math.Cos(2*math.Pi*u2)
}

// fans returns fan-in and fan-out as PyTorch and PyG compute them for glorot.
func fans(shape []int64) (float64, float64) {
	if len(shape) == 1 {
		return 1, float64(shape[0])
	}
	rest := float64(ir.Numel(shape[2:]))
	return float64(shape[0]) * rest, float64(shape[1]) * rest
}

// initParam fills a parameter according to its init rule.
func initParam(be backend.Backend, op *ir.Op, t *tensor.Tensor, rng *splitMix) error {
	n := t.Numel()
	v := make([]float64, n)
	fanIn, fanOut := fans(op.Shape)
	switch op.Init {
	case "zeros":
	case "ones":
		for i := range v {
			v[i] = 1
		}
	case "glorot":
		bound := math.Sqrt(6 / (fanIn + fanOut))
		for i := range v {
			v[i] = (2*rng.float() - 1) * bound
		}
	case "uniform":
		bound := 1 / math.Sqrt(fanIn)
		for i := range v {
			v[i] = (2*rng.float() - 1) * bound
		}
	case "normal":
		std := math.Sqrt(2 / (fanIn + fanOut))
		for i := range v {
			v[i] = rng.normal() * std
		}
	default:
		return fmt.Errorf("engine: param %q: unknown init %q", op.Name, op.Init)
	}
	return uploadFloats(be, t, v)
}
