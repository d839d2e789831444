package cpu

// redElems is about the number of elements per reduction chunk.
var redElems int64 = 4096

// reduceRows sums per-chunk partial results over rows [0, n): fn adds the
// contribution of rows [lo, hi) into part (f float64s, zeroed). The chunks
// have a fixed size that depends only on n and f, and the partials are added
// in chunk order, so the result is the same for any thread count.
func (b *Backend) reduceRows(n, f int64, fn func(lo, hi int64, part []float64)) []float64 {
	rows := max(1, redElems/max(f, 1))
	bounds := fixedBounds(n, rows)
	chunks := int64(len(bounds) - 1)
	parts := make([]float64, chunks*f)
	tasks := evenBounds(chunks, min(chunks, int64(8*b.threads), max(1, n*f/grain)))
	b.parallel(nil, tasks, func(lo, hi int64) {
		for j := lo; j < hi; j++ {
			if bounds[j] < bounds[j+1] {
				fn(bounds[j], bounds[j+1], parts[j*f:(j+1)*f])
			}
		}
	})
	sum := make([]float64, f)
	for j := int64(0); j < chunks; j++ {
		for c, v := range parts[j*f : (j+1)*f] {
			sum[c] += v
		}
	}
	return sum
}
