package negative

import (
	"context"
	"fmt"
	"testing"

	"strata/core/graph/graphtest"
	"strata/core/negative"
	"strata/core/negative/negativetest"
)

// BenchmarkDraw draws k = 5 negatives for each of 1024 positive edges of
// an R-MAT graph of 2^16 nodes (average degree about 16), with and
// without exclude_positives; ns/pair is the time per negative.
func BenchmarkDraw(b *testing.B) {
	g := graphtest.RMAT(16, 8, 1)
	src, dst := negativetest.Edges(g, 1024)
	const k = 5
	for _, c := range []struct {
		name string
		s    func() negative.Sampler
	}{
		{"uniform", func() negative.Sampler { return new(Uniform) }},
		{"degree", func() negative.Sampler { return &Degree{Power: 0.75} }},
		{"corrupt", func() negative.Sampler { return &Corrupt{Side: "both"} }},
	} {
		for _, exclude := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/exclude=%v", c.name, exclude), func(b *testing.B) {
				s := c.s()
				s.(negative.Excluder).SetExclude(exclude)
				if err := s.Bind(context.Background(), g); err != nil {
					b.Fatal(err)
				}
				var seed uint64
				for b.Loop() {
					seed++
					if _, _, err := s.Draw(context.Background(), src, dst, k, seed); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(src)*k), "ns/pair")
			})
		}
	}
}
