package engine

import (
	"fmt"

	"strata/core/backend"
	"strata/core/ir"
	"strata/core/tensor"
)

// A program's input may be stored in 16 bits (Env.Input of dtype
// tensor.Float16 or tensor.BFloat16: data.feature_dtype) while every value
// and all math stay in the program's float32. The input is read in one of
// two ways, chosen at Bind:
//
// (Matmuls that read the input's entries instead, sparse.go, read neither.)
//
//   - direct: when every reader of the input is a matmul that takes it as
//     its left operand, or a dropout of it whose readers all are (a dropout
//     multiplied inside its matmuls, fuseInputDropouts, or one that only
//     passes its input: inference, rate 0), and their scratch is smaller
//     than the input, each such matmul widens the
//     rows a region at a time inside the backend's DropoutGEMM
//     (backend.HalfStorage), in the forward product (p = 0 without a
//     dropout) and in the weight gradient. No float32 copy of the input
//     exists: the first layer of GCN and GAT.
//   - widened: otherwise (an aggregation, a narrowing or a formed dropout
//     reads the input: SAGE, GIN), the input op gets a float32 value of
//     the buffer plan, which its forward fills with the backend's Widen and
//     which lives, as any value, until its last reader.
//
// The float32 values are the widened rows either way, so a program over
// 16-bit rows computes what the float32 program computes over the widened
// rows, bit for bit. A program whose input takes a gradient
// (Env.InputGrad) or whose backward may run without its input rows
// (Env.Resumable) cannot read 16-bit input: Bind returns an error.

// planHalfInput decides how a 16-bit input is read (see above): it marks
// the matmuls that read it directly (halfX) or the input op as widened
// (p.wideIn).
func (p *Program) planHalfInput() error {
	if p.env.Input == nil {
		return nil // given by its entries, float32 values (sparse.go)
	}
	dt := p.env.Input.DType()
	if !dt.IsHalf() {
		return nil
	}
	if _, ok := p.be.(backend.HalfStorage); !ok {
		return fmt.Errorf("engine: a %v input needs a backend that reads 16-bit rows (backend.HalfStorage); the %s backend does not", dt, p.be.Name())
	}
	if p.env.DType != tensor.Float32 {
		return fmt.Errorf("engine: a %v input computes in float32, not %v", dt, p.env.DType)
	}
	if p.env.InputGrad || p.env.Resumable {
		return fmt.Errorf("engine: a %v input cannot take a gradient or be resumed without its rows (layer-by-layer training)", dt)
	}
	readers := graphReaders(p.g)
	// leftOnly reports whether every reader of v is a matmul with v as its
	// left operand only, collecting them.
	var direct []int32
	leftOnly := func(v int32) bool {
		for _, r := range readers[v] {
			if r < 0 {
				return false
			}
			op := &p.g.Ops[r]
			if op.Kind != ir.OpMatMul || op.Args[0] != v || op.Args[1] == v {
				return false
			}
			if !p.aux[r].sparseX { // a sparse matmul reads the entries (sparse.go)
				direct = append(direct, r)
			}
		}
		return true
	}
	ok := true
	for i, op := range p.g.Ops {
		if op.Kind != ir.OpInput {
			continue
		}
		in := int32(i)
		for _, r := range readers[in] {
			switch {
			case r < 0:
				ok = false
			case p.aux[r].sparseX:
			case p.g.Ops[r].Kind == ir.OpMatMul:
				ok = ok && p.g.Ops[r].Args[0] == in && p.g.Ops[r].Args[1] != in
				direct = append(direct, r)
			case p.g.Ops[r].Kind == ir.OpDropout:
				passes := p.aux[r].dropInto || p.aliasDropout(r)
				ok = ok && passes && leftOnly(r)
			default:
				ok = false
			}
		}
		if !ok {
			p.wideIn = true
			return nil
		}
	}
	// Read directly only where the matmuls' scratch is smaller than the
	// input (as fuseInputDropouts): a small input fits all its regions at
	// once, and a planned float32 value, which other values may share, is
	// then the cheaper copy.
	for _, r := range direct {
		if p.aux[r].maskedBy == 0 && p.halfScratchSize(int(p.g.Ops[r].Shape[1])) >= p.env.Input.Numel() {
			p.wideIn = true
			return nil
		}
	}
	for _, r := range direct {
		p.aux[r].halfX = true
	}
	return nil
}

// halfScratchSize is the scratch of a matmul of the 16-bit input by a
// weight of n columns: the forward product's in an inference program
// (there is no weight gradient), else the larger of the forward's and
// the weight gradient's (dropScratchSize).
func (p *Program) halfScratchSize(n int) int {
	if p.env.Inference {
		return backend.DropoutGEMMScratch(p.env.Input.Rows(), n, p.env.Input.Cols())
	}
	return p.dropScratchSize(n)
}

// bindHalfMatMul gives a matmul that reads 16-bit rows directly the
// scratch its regions are widened into (shared with a fused dropout's).
func (p *Program) bindHalfMatMul(i int, shape []int) error {
	if p.aux[i].dropScratch != nil {
		return nil
	}
	// An inference program's forward temporaries count with its values,
	// as a kernel's do (Footprint), which is what an inference estimate
	// (costmodel.betty-memory) adds up.
	kind := KindScratch
	if p.env.Inference {
		kind = KindValue
	}
	var err error
	p.aux[i].dropScratch, err = p.scratchFor(kind, p.env.DType, []int{max(p.halfScratchSize(shape[1]), 1)}, 9)
	return err
}

// halfGEMM is matmul op i over 16-bit rows x without a dropout: the
// forward product (transX false) or the weight gradient (transX true).
func (p *Program) halfGEMM(i int32, transX bool, x, b *tensor.Tensor, beta float64, c *tensor.Tensor) error {
	return p.be.(backend.DropoutGEMMer).DropoutGEMM(0, nil, 0, transX, x, b, beta, c, p.aux[i].dropScratch, nil)
}

// widenInput fills the float32 value of a widened input op i.
func (p *Program) widenInput(i int32) error {
	return p.be.(backend.HalfStorage).Widen(p.env.Input, p.vals[i])
}
