package graph

import (
	"cmp"
	"math"
	"slices"
)

// DegreeShape is how concentrated a graph's edges are: the shares of all
// edge endpoints (in- plus out-degree) held by the 1% and the 10% of
// nodes of highest degree. A regular graph has 0.01 and 0.1.
type DegreeShape struct {
	Top1  float64 `json:"top1_share"`
	Top10 float64 `json:"top10_share"`
}

// Shape returns the degree shape of the stored edges of g.
func (c *CSR) Shape() DegreeShape {
	in, out := Degrees(c)
	return shapeOf(in, out)
}

// shapeOf returns the degree shape of in- and out-degree sequences.
func shapeOf(in, out []int32) DegreeShape {
	total := make([]int64, len(in))
	var sum int64
	for i := range in {
		total[i] = int64(in[i])
		if i < len(out) {
			total[i] += int64(out[i])
		}
		sum += total[i]
	}
	if sum == 0 {
		return DegreeShape{}
	}
	slices.SortFunc(total, func(a, b int64) int { return cmp.Compare(b, a) })
	share := func(f float64) float64 {
		var s int64
		for _, d := range total[:int(math.Ceil(f*float64(len(total))))] {
			s += d
		}
		return float64(s) / float64(sum)
	}
	return DegreeShape{Top1: share(0.01), Top10: share(0.1)}
}
