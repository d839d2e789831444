package train

import (
	"fmt"

	"strata/core/backend"
	"strata/core/tensor"
)

// ArgmaxInto writes the argmax of every row of out into pred.
func ArgmaxInto(be backend.Backend, out *tensor.Tensor, pred []int32) error {
	if len(pred) != out.Rows() {
		return fmt.Errorf("predictions for %d rows, want %d", out.Rows(), len(pred))
	}
	t, err := be.Alloc(tensor.Int32, []int{out.Rows()}, out.Tier())
	if err != nil {
		return err
	}
	defer be.Release(t)
	if err := be.ArgmaxRows(out, t); err != nil {
		return err
	}
	return backend.ForPurpose(be, backend.PurposeActivations).Download(t, pred)
}

// UploadInt32s places host int32 data on the backend.
func UploadInt32s(be backend.Backend, v []int32, tier tensor.Tier) (*tensor.Tensor, error) {
	t, err := be.Alloc(tensor.Int32, []int{len(v)}, tier)
	if err != nil {
		return nil, err
	}
	return t, be.Upload(t, v)
}

// phasePeaks measures peak memory per phase of the loop (training steps,
// evaluations) on a backend that can reset its peak, and the peak of the
// whole run so far.
type phasePeaks struct {
	be               backend.Backend
	resettable       backend.PeakResetter
	all, train, eval map[tensor.Tier]int64
}

func newPhasePeaks(be backend.Backend) *phasePeaks {
	p := &phasePeaks{be: be, all: be.Stats().Peak, train: map[tensor.Tier]int64{}, eval: map[tensor.Tier]int64{}}
	p.resettable, _ = be.(backend.PeakResetter)
	return p
}

// start begins a phase.
func (p *phasePeaks) start() {
	if p.resettable != nil {
		p.resettable.ResetPeak()
	}
}

// end closes a phase, folding its peak into into and into the run's.
func (p *phasePeaks) end(into map[tensor.Tier]int64) {
	for t, v := range p.be.Stats().Peak {
		if p.resettable != nil {
			into[t] = max(into[t], v)
		}
		p.all[t] = max(p.all[t], v)
	}
}

// trimPool gives back the free buffers a recycling backend keeps.
func trimPool(be backend.Backend) {
	if p, ok := be.(backend.PoolTrimmer); ok {
		p.TrimPool()
	}
}
