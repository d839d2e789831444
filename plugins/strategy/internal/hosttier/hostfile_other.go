//go:build !linux

package hosttier

import (
	"errors"
	"os"
)

// punchHole is not available: the caller writes zeros.
func punchHole(*os.File, int64, int64) error {
	return errors.New("no hole punching on this system")
}

// mapAnon allocates n zeroed bytes (on the Go heap here).
func mapAnon(n int64) ([]byte, func(), error) {
	return make([]byte, n), func() {}, nil
}

// zeroRange is not available here: the caller writes zeros.
func zeroRange(*os.File, int64, int64) error {
	return errors.New("no zeroing of file ranges on this system")
}
