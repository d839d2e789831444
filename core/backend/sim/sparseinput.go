package sim

import (
	"fmt"

	"strata/core/backend"
	"strata/core/tensor"
)

var _ backend.SparseInputs = (*Backend)(nil)

// SparseInputDensity implements backend.SparseInputs with the crossover of
// the inner backends (0 when they have none): a simulated device
// multiplies a sparse input as its host backend does, so a run on it
// computes what the run on the host computes, bit for bit.
func (b *Backend) SparseInputDensity(rows, k, n int) float64 {
	if s, ok := b.inner[tensor.Host].(backend.SparseInputs); ok {
		return s.SparseInputDensity(rows, k, n)
	}
	return 0
}

// SparseInput implements backend.SparseInputs: the inner backend of x's
// tier lists x's entries in that tier, a pass over memory the device
// holds, so nothing crosses a link. The pass runs once per binding and
// is not priced; the SpMMs over the entries are, as every SpMM.
func (b *Backend) SparseInput(x *tensor.Tensor, maxNNZ int64, tier tensor.Tier) (backend.SparseMatrix, bool, error) {
	var none backend.SparseMatrix
	if x == nil || x.Buffer() == nil || x.Tier() != tier {
		return none, false, fmt.Errorf("sim: SparseInput: x must be a tensor in tier %q", tier)
	}
	si, ok := b.of(x).(backend.SparseInputs)
	if !ok {
		return none, false, nil
	}
	m, ok, err := si.SparseInput(unwrap(x), maxNNZ, tensor.Host)
	if err != nil || !ok {
		return none, false, relabel(err, tier)
	}
	return backend.SparseMatrix{Adj: &adj{Adj: m.Adj, tier: tier}, Host: m.Host, Values: b.wrap(m.Values, tier)}, true, nil
}
