package train

import (
	"fmt"
	"math"

	"strata/core/jsonfloat"
)

// StatusDiverged is Result.Status of a run stopped by a non-finite loss
// or parameter.
const StatusDiverged = "diverged"

// DivergedError stops a run whose loss or parameters became NaN or
// infinite. Run returns it with the partial Result (Status "diverged"),
// which the CLI still prints before exiting with code 1.
type DivergedError struct {
	Epoch int     // 0-based epoch where it was detected
	What  string  // "the loss" or "parameter l0.W"
	Value float64 // the non-finite value
}

func (e *DivergedError) Error() string {
	return fmt.Sprintf("training diverged at epoch %d: %s is %v; lower train.lr, check train.weight_decay and the features, or use float64", e.Epoch, e.What, e.Value)
}

// MarshalJSON encodes the result as encoding/json would, except that
// non-finite numbers (a diverged loss) become the strings "NaN", "+Inf"
// and "-Inf" instead of failing the whole encoding.
func (r Result) MarshalJSON() ([]byte, error) { return jsonfloat.Marshal(r) }

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// checkFinite returns a *DivergedError for the first non-finite value in
// the parameter snapshot, in name order.
func checkFinite(epoch int, snap map[string][]float64) error {
	var bad *DivergedError
	for name, vs := range snap {
		for _, v := range vs {
			if !finite(v) {
				if bad == nil || name < bad.What[len("parameter "):] {
					bad = &DivergedError{Epoch: epoch, What: "parameter " + name, Value: v}
				}
				break
			}
		}
	}
	if bad == nil {
		return nil
	}
	return bad
}
