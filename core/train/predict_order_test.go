package train

import (
	"fmt"
	"testing"

	"strata/core/tensor"
)

// TestPredictionSumsInOrder: the predicted seconds of many purposes sum
// to the same float every time (in the order of the purposes' names), so
// that predicted_epoch_s and predicted_compute_s reproduce bit for bit
// from run to run; a sum in map order differs in its last bits.
func TestPredictionSumsInOrder(t *testing.T) {
	m := map[string]float64{}
	want := 0.0
	for i := range 24 {
		k := fmt.Sprintf("p%02d", i)
		m[k] = 1.0 / float64(3+7*i) // values whose float sum depends on the order
		want += m[k]
	}
	p := Prediction{TransferS: m, KernelS: map[tensor.Tier]map[string]float64{"device0": m}}
	for range 50 {
		if got := p.computeSeconds()["device0"]; got != want {
			t.Fatalf("computeSeconds = %v, want %v (the sum in name order)", got, want)
		}
		if _, c := p.Split(); c != 2*want {
			t.Fatalf("Split compute = %v, want %v", c, 2*want)
		}
	}
}

// TestSplitHostFirst: the host's priced kernels (a simulated CPU gather)
// add to the devices' slowest, which run in parallel with each other.
func TestSplitHostFirst(t *testing.T) {
	p := Prediction{TransferS: map[string]float64{"features": 1, "other": 0.5}, KernelS: map[tensor.Tier]map[string]float64{
		tensor.Host: {"features": 2},
		"device0":   {"features": 3, "other": 4},
		"device1":   {"features": 1, "other": 5},
	}}
	if stage, compute := p.Split(); stage != 1+2+3 || compute != 0.5+5 {
		t.Errorf("Split = %v, %v; want %v, %v", stage, compute, 1+2+3, 0.5+5)
	}
}
