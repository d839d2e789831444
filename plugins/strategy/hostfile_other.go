//go:build !unix

package strategy

import "errors"

// mapHostFile is not available without mmap.
func mapHostFile(string, int64) ([]byte, func() error, error) {
	return nil, nil, errors.New("memory-mapped host files need a unix system")
}
