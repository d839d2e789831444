//go:build !cuda

package cuda

import "strata/core/backend"

// New reports ErrNoCUDA: this build has no GPU backend.
func New(Options) (backend.Backend, error) { return nil, ErrNoCUDA }
