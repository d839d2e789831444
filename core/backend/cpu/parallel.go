package cpu

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
)

// grain is the work (elements touched) below which a call runs as one
// chunk; tests lower it to exercise the parallel paths on small inputs.
var grain int64 = 1 << 15

// parallel runs fn over the chunks [bounds[i], bounds[i+1]) on up to
// b.threads goroutines, claiming chunks in order from a shared counter. The
// chunks write disjoint outputs, so the result does not depend on which
// goroutine ran which chunk. ctx is checked before every chunk.
func (b *Backend) parallel(ctx context.Context, bounds []int64, fn func(lo, hi int64)) error {
	n := int64(len(bounds) - 1)
	workers := min(int64(b.threads), n)
	if workers <= 1 {
		for i := int64(0); i < n; i++ {
			if err := ctxErr(ctx); err != nil {
				return err
			}
			fn(bounds[i], bounds[i+1])
		}
		return ctxErr(ctx)
	}
	var next atomic.Int64
	var stopped atomic.Bool
	var wg sync.WaitGroup
	work := func() {
		defer wg.Done()
		for {
			if ctxErr(ctx) != nil {
				stopped.Store(true)
				return
			}
			i := next.Add(1) - 1
			if i >= n {
				return
			}
			fn(bounds[i], bounds[i+1])
		}
	}
	wg.Add(int(workers))
	for w := int64(1); w < workers; w++ {
		go work()
	}
	work()
	wg.Wait()
	if stopped.Load() {
		return ctxErr(ctx)
	}
	return nil
}

func ctxErr(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	return ctx.Err()
}

// rowBounds splits n rows of work elements in total into at most 8·threads
// equal chunks of at least grain elements each.
func (b *Backend) rowBounds(n, work int64) []int64 {
	chunks := min(int64(8*b.threads), work/grain, n)
	return evenBounds(n, max(chunks, 1))
}

// evenBounds splits [0, n) into chunks nearly equal parts.
func evenBounds(n, chunks int64) []int64 {
	if n == 0 {
		return []int64{0, 0}
	}
	bs := make([]int64, chunks+1)
	for i := range bs {
		bs[i] = n * int64(i) / chunks
	}
	return bs
}

// fixedBounds splits [0, n) into chunks of size rows (the last may be short).
// Reductions use it so that their summation order ignores the thread count.
func fixedBounds(n, rows int64) []int64 {
	bs := []int64{0}
	for lo := rows; lo < n; lo += rows {
		bs = append(bs, lo)
	}
	return append(bs, n)
}

// nnzBounds splits the rows of a CSR into about chunks parts of equal cost,
// a row costing its entries plus one.
func nnzBounds(indptr []int64, chunks int) []int64 {
	rows := len(indptr) - 1
	total := indptr[rows] + int64(rows)
	chunks = max(1, min(chunks, rows))
	bs := []int64{0}
	for j := 1; j < chunks; j++ {
		target := total * int64(j) / int64(chunks)
		r := int64(sort.Search(rows, func(i int) bool { return indptr[i]+int64(i) >= target }))
		if r > bs[len(bs)-1] && r < int64(rows) {
			bs = append(bs, r)
		}
	}
	return append(bs, int64(rows))
}
