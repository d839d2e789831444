package comm

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// BenchmarkAllReduce: the rank-order all-reduce of 1M float32s over
// in-process ranks (the cost of the reduction and the copies, without a
// network).
func BenchmarkAllReduce(b *testing.B) {
	for _, n := range []int{2, 4} {
		b.Run(fmt.Sprint(n, "ranks"), func(b *testing.B) {
			ranks := NewLocal(n)
			bufs := make([][]float32, n)
			for r := range bufs {
				bufs[r] = make([]float32, 1<<20)
			}
			b.SetBytes(4 << 20)
			b.ResetTimer()
			for range b.N {
				var wg sync.WaitGroup
				for r, c := range ranks {
					wg.Go(func() {
						if err := AllReduce(context.Background(), c, "g", bufs[r]); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
			}
		})
	}
}
