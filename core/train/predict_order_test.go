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
