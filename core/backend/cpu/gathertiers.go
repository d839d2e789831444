package cpu

import (
	"sort"

	"strata/core/backend"
	"strata/core/tensor"
)

var _ backend.TierGatherer = (*Backend)(nil)

// GathersFrom implements backend.TierGatherer: the cpu backend has one
// tier, the host.
func (b *Backend) GathersFrom(src, dst tensor.Tier) bool {
	return src == tensor.Host && dst == tensor.Host
}

// GatherTiers implements backend.TierGatherer: out[i,:] = row idx[i] of
// the concatenation of srcs, in one parallel pass over the rows. The
// sources may belong to other cpu backends (a simulated machine's tiers);
// Float32 and Float64.
func (b *Backend) GatherTiers(srcs []*tensor.Tensor, idx, out *tensor.Tensor) error {
	const op = "GatherTiers"
	ob, ib := hostBuf(out), hostBuf(idx)
	switch {
	case ob == nil || ib == nil:
		return errf(op, "out and idx must be live cpu tensors")
	case len(out.Shape()) != 2:
		return errf(op, "out has shape %v, want 2-D", out.Shape())
	case idx.DType() != tensor.Int32 || idx.Numel() != out.Rows():
		return errf(op, "idx is %s of %d entries, want int32 with one per row of out (%d)", idx.DType(), idx.Numel(), out.Rows())
	case out.DType() != tensor.Float32 && out.DType() != tensor.Float64:
		return errf(op, "out is %s, want float32 or float64", out.DType())
	}
	f := out.Cols()
	ends := make([]int64, len(srcs)) // ends[s]: the first combined row after source s
	bufs := make([]*buffer, len(srcs))
	var total int64
	for s, x := range srcs {
		bufs[s] = hostBuf(x)
		switch {
		case bufs[s] == nil:
			return errf(op, "source %d is not a live cpu tensor", s)
		case x.DType() != out.DType() || len(x.Shape()) != 2 || x.Cols() != f:
			return errf(op, "source %d is %s %v, want %s rows of %d columns", s, x.DType(), x.Shape(), out.DType(), f)
		}
		total += int64(x.Rows())
		ends[s] = total
	}
	if err := checkRange(op, "idx", idx, 0, total); err != nil {
		return err
	}
	n := out.Rows()
	if n == 0 || f == 0 {
		return nil
	}
	// row finds the source of combined row r and its row there.
	row := func(r int64) (int, int) {
		s := sort.Search(len(ends), func(i int) bool { return ends[i] > r })
		return s, int(r - (ends[s] - int64(srcs[s].Rows())))
	}
	return b.parallel(nil, b.rowBounds(int64(n), int64(n*f)), func(lo, hi int64) {
		for i := lo; i < hi; i++ {
			s, r := row(int64(ib.i32[i]))
			if out.DType() == tensor.Float32 {
				copy(ob.f32[int(i)*f:int(i+1)*f], bufs[s].f32[r*f:(r+1)*f])
			} else {
				copy(ob.f64[int(i)*f:int(i+1)*f], bufs[s].f64[r*f:(r+1)*f])
			}
		}
	})
}
