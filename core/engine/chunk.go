package engine

import (
	"fmt"

	"strata/core/ir"
	"strata/core/tensor"
)

// What layer-by-layer (chunked) training needs of a program: the input's
// gradient, and the state a training Forward leaves for Backward, so that
// it can be kept elsewhere (the host) and put back instead of recomputed.

// InputGrad returns the gradient of the input after Backward, on a
// program bound with Env.InputGrad (zeros where the output does not
// depend on the input).
func (p *Program) InputGrad() (*tensor.Tensor, error) {
	for i, op := range p.g.Ops {
		if op.Kind != ir.OpInput {
			continue
		}
		if p.grads[i] == nil {
			return nil, fmt.Errorf("engine: the program was not bound with Env.InputGrad")
		}
		if !p.gradInit[i] {
			if err := p.be.Fill(p.grads[i], 0); err != nil {
				return nil, err
			}
			p.gradInit[i] = true
		}
		return p.grads[i], nil
	}
	return nil, fmt.Errorf("engine: the program has no input")
}

// Saved returns the buffers a training Forward writes and Backward reads
// besides the input and the parameters: op values and their saved state
// (dropout masks, max-aggregation winners, batch statistics, LSTM gates),
// in a fixed order. Copying them out after Forward and back before
// Resume replaces a second Forward.
func (p *Program) Saved() []*tensor.Tensor {
	var out []*tensor.Tensor
	for i, op := range p.g.Ops {
		switch op.Kind {
		case ir.OpInput, ir.OpParam, ir.OpGraph:
			continue
		case ir.OpDropout:
			if op.Alpha == 0 {
				continue // an alias of its argument
			}
		}
		if p.vals[i] != nil { // nil: a dropout applied inside its matmuls
			out = append(out, p.vals[i])
		}
		a := &p.aux[i]
		for _, t := range []*tensor.Tensor{a.mask, a.argmax, a.mean, a.invStd, a.gates, a.cells, a.hprev} {
			if t != nil {
				out = append(out, t)
			}
		}
	}
	return out
}

// Resume declares that the buffers of Saved hold the state of a training
// Forward in mode m (restored by the caller), so that Backward may run
// without a Forward. Batch norm's running statistics are not touched.
func (p *Program) Resume(m Mode) error {
	if !m.Train || p.env.Inference {
		return fmt.Errorf("engine: Resume needs a training mode on a training program")
	}
	p.mode, p.saved = m, true
	for i, op := range p.g.Ops {
		p.cur[i] = p.vals[i]
		if op.Kind == ir.OpDropout && op.Alpha == 0 {
			p.cur[i] = p.cur[op.Args[0]]
		}
	}
	return nil
}
