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

// TestLockstepS checks the lock-step pipeline against PipelinedS for two
// stages and against ticks worked by hand for three.
func TestLockstepS(t *testing.T) {
	two := [][2][]float64{{nil, nil}, {{2}, {3}}, {{1, 1, 1}, {3, 3, 3}}, {{4, 4, 4}, {1, 1, 1}}, {{1, 5, 1}, {2, 2, 2}}}
	for _, c := range two {
		if got, want := LockstepS(c[0], c[1]), PipelinedS(c[0], c[1]); got != want {
			t.Errorf("two stages %v: %v, PipelinedS %v", c, got, want)
		}
	}
	cases := []struct {
		name   string
		stages [][]float64
		want   float64
	}{
		{"one stage", [][]float64{{1, 2, 3}}, 6},
		// ticks: s0 | s1 s0' | c0 s1' s0'' | c1 s1'' | c2
		{"three stages", [][]float64{{4, 1, 2}, {1, 3, 1}, {2, 2, 5}}, 4 + max(1, 1) + max(2, 3, 2) + max(2, 1) + 5},
		{"sampling bound", [][]float64{{9, 9}, {1, 1}, {1, 1}}, 9 + 9 + 1 + 1},
	}
	for _, c := range cases {
		if got := LockstepS(c.stages...); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
