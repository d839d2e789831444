package graph

import (
	"slices"
	"testing"
)

func TestStepOrder(t *testing.T) {
	tests := []struct {
		name             string
		indptr           []int64
		order, rank, off []int64
	}{
		// degrees 2, 0, 3, 2: by degree descending, ties by id
		{"mixed", []int64{0, 2, 2, 5, 7}, []int64{2, 0, 3, 1}, []int64{1, 3, 0, 2}, []int64{0, 3, 6, 7}},
		{"no edges", []int64{0, 0, 0}, []int64{0, 1}, []int64{0, 1}, []int64{0}},
		{"no rows", []int64{0}, []int64{}, []int64{}, []int64{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			order, rank, off := StepOrder(tc.indptr)
			if !slices.Equal(order, tc.order) || !slices.Equal(rank, tc.rank) || !slices.Equal(off, tc.off) {
				t.Errorf("StepOrder(%v) = %v %v %v, want %v %v %v", tc.indptr, order, rank, off, tc.order, tc.rank, tc.off)
			}
		})
	}
}

func TestSteps(t *testing.T) {
	s := Steps{0, 3, 6, 7} // 3, 3 and 1 rows
	if s.Len() != 3 {
		t.Errorf("Len() = %d, want 3", s.Len())
	}
	for step, want := range map[int]int{-1: 0, 0: 3, 1: 3, 2: 1, 3: 0, 9: 0} {
		if got := s.Rows(step); got != want {
			t.Errorf("Rows(%d) = %d, want %d", step, got, want)
		}
	}
	if e := (Steps{0}); e.Len() != 0 || e.Rows(0) != 0 {
		t.Errorf("no steps: Len %d, Rows(0) %d", e.Len(), e.Rows(0))
	}
}
