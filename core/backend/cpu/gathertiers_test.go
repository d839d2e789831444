package cpu

import (
	"reflect"
	"strings"
	"testing"

	"strata/core/tensor"
)

// TestGatherTiers checks the multi-tier gather against rows picked by
// hand from the concatenation of sources held by two backends, in
// float32 and float64, and its errors.
func TestGatherTiers(t *testing.T) {
	a, b := New(Options{Threads: 2}), New(Options{Threads: 1})
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		mk := func(be *Backend, rows int, vals []float64) *tensor.Tensor {
			return floatTensor(t, be, dt, []int{rows, 2}, vals)
		}
		s0, s1 := mk(a, 2, []float64{0, 1, 2, 3}), mk(b, 3, []float64{10, 11, 12, 13, 14, 15})
		idx, _ := a.Alloc(tensor.Int32, []int{5}, tensor.Host)
		if err := a.Upload(idx, []int32{4, 0, 2, 1, 3}); err != nil {
			t.Fatal(err)
		}
		out := mk(a, 5, make([]float64, 10))
		if err := a.GatherTiers([]*tensor.Tensor{s0, s1}, idx, out); err != nil {
			t.Fatal(err)
		}
		got := make([]float64, 10)
		if dt == tensor.Float32 {
			for i, v := range F32(out) {
				got[i] = float64(v)
			}
		} else {
			copy(got, F64(out))
		}
		if want := []float64{14, 15, 0, 1, 10, 11, 2, 3, 12, 13}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: rows %v, want %v", dt, got, want)
		}
		if err := a.Upload(idx, []int32{4, 0, 5, 1, 3}); err != nil {
			t.Fatal(err)
		}
		if err := a.GatherTiers([]*tensor.Tensor{s0, s1}, idx, out); err == nil || !strings.Contains(err.Error(), "outside [0,5)") {
			t.Errorf("%s: out-of-range index: error %v", dt, err)
		}
		narrow, _ := a.Alloc(dt, []int{5, 1}, tensor.Host)
		if err := a.GatherTiers([]*tensor.Tensor{s0, s1}, idx, narrow); err == nil {
			t.Errorf("%s: sources of 2 columns gathered into 1", dt)
		}
	}
}

// floatTensor is a host tensor of dt (Float32 or Float64) holding vals.
func floatTensor(t *testing.T, be *Backend, dt tensor.DType, shape []int, vals []float64) *tensor.Tensor {
	t.Helper()
	x, err := be.Alloc(dt, shape, tensor.Host)
	if err != nil {
		t.Fatal(err)
	}
	if dt == tensor.Float32 {
		v := make([]float32, len(vals))
		for i, f := range vals {
			v[i] = float32(f)
		}
		err = be.Upload(x, v)
	} else {
		err = be.Upload(x, vals)
	}
	if err != nil {
		t.Fatal(err)
	}
	return x
}
