package cpu

/*
#include "kernels.h"
*/
import "C"

import (
	"context"
	"fmt"
	"unsafe"

	"strata/core/backend"
	"strata/core/tensor"
)

// SpMMBiasAct computes y = act(A·x + bias) (backend.SpMMBiasActer): each
// chunk of rows gets its bias and activation as soon as the SpMM has
// written it, while it is in cache, with the arithmetic of SpMM,
// Elementwise(Add) and Apply (bit for bit).
func (b *Backend) SpMMBiasAct(ctx context.Context, a backend.Adj, w, x, bias *tensor.Tensor, act backend.Unary, alpha float64, y *tensor.Tensor) error {
	g, dt, h, err := chk.SpMM(a, false, w, x, y)
	if err != nil {
		return err
	}
	if _, err := chk.Apply(act, y, y); err != nil {
		return err
	}
	if bias == nil || bias.DType() != dt || bias.Numel() != y.Cols() {
		return fmt.Errorf("cpu: SpMMBiasAct: bias must be %v with %d elements (one per column of y)", dt, y.Cols())
	}
	c := &g.fwd
	f := x.Cols()
	wp := ptr(w)
	if w == nil {
		wp = g.values(dt, false)
	}
	if g.rows == 0 || f == 0 {
		return ctxErr(ctx)
	}
	dc, it, xp, yp := dtCode(dt), c.itCode(), ptr(x), ptr(y)
	idx, ip := c.idxPtr(), &c.indptr[0]
	return b.parallel(ctx, c.chunks(f), func(lo, hi int64) {
		cSpMM(dc, it, lo, hi, ip, idx, nil, wp, int64(h), int64(f/h), xp, 0, yp)
		r0, r1 := int(lo)*f, int(hi)*f
		if dt == tensor.Float32 {
			ys, bs := fl[float32](y)[r0:r1], fl[float32](bias)
			if act == backend.Identity || act == backend.ReLU {
				relu := 0
				if act == backend.ReLU {
					relu = 1
				}
				C.k_bias_relu_f32(C.int(relu), C.int64_t(hi-lo), C.int64_t(f), f32p(bs, 0), (*C.float)(unsafe.Pointer(&ys[0])))
				return
			}
			for r := 0; r < len(ys); r += f {
				binary(backend.Add, ys[r:r+f], bs, ys[r:r+f])
			}
			apply(act, float32(alpha), ys, ys)
			return
		}
		ys, bs := fl[float64](y)[r0:r1], fl[float64](bias)
		for r := 0; r < len(ys); r += f {
			binary(backend.Add, ys[r:r+f], bs, ys[r:r+f])
		}
		apply(act, alpha, ys, ys)
	})
}
