package train

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"

	"strata/core/jsonfloat"
)

// StatusDiverged is Result.Status of a run stopped by a non-finite loss
// or parameter.
const StatusDiverged = "diverged"

// StatusInterrupted is Result.Status of a run stopped by SIGINT (its
// context cancelled): the result holds the best epoch so far.
const StatusInterrupted = "interrupted"

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
//
// The accuracy of an empty valid or test split is null: absent, not 0.
func (r Result) MarshalJSON() ([]byte, error) {
	b, err := jsonfloat.Marshal(r)
	if err != nil {
		return nil, err
	}
	null := func(key string, v float64) {
		b = bytes.Replace(b, []byte(`"`+key+`":`+jsonfloat.Float(v)), []byte(`"`+key+`":null`), 1)
	}
	if r.noValid {
		null("best_valid_acc", r.BestValidAcc)
	}
	if r.noTest {
		null("test_acc", r.TestAcc)
	}
	return appendFigures(b, r.Figures)
}

// appendFigures adds each strategy's figures to the encoded result
// object b, as members named after the strategies, in name order.
func appendFigures(b []byte, figures map[string]any) ([]byte, error) {
	if len(figures) == 0 {
		return b, nil
	}
	b = bytes.TrimSuffix(bytes.TrimSpace(b), []byte("}"))
	for _, name := range slices.Sorted(maps.Keys(figures)) {
		f, err := jsonfloat.Marshal(figures[name])
		if err != nil {
			return nil, fmt.Errorf("figures of %s: %w", name, err)
		}
		key, _ := json.Marshal(name)
		b = append(append(append(append(b, ','), key...), ':'), f...)
	}
	return append(b, '}'), nil
}

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
