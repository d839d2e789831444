package steprun

import (
	"testing"
)

func TestPipelinedS(t *testing.T) {
	cases := []struct {
		name              string
		transfer, compute []float64
		want              float64
	}{
		{"empty", nil, nil, 0},
		{"one batch", []float64{2}, []float64{3}, 5},
		{"compute bound", []float64{1, 1, 1}, []float64{3, 3, 3}, 1 + 3 + 3 + 3},
		{"transfer bound", []float64{4, 4, 4}, []float64{1, 1, 1}, 4 + 4 + 4 + 1},
		{"mixed", []float64{1, 5, 1}, []float64{2, 2, 2}, 1 + 5 + 2 + 2},
	}
	for _, c := range cases {
		if got := PipelinedS(c.transfer, c.compute); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
