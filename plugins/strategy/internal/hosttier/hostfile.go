package hosttier

import (
	"os"
)

// OpenFile creates (or truncates) path to size bytes for the host
// tier, read and written with positioned I/O (hostFileMat). The returned
// function closes and removes it.
func OpenFile(path string, size int64) (*os.File, func() error, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, nil, err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		os.Remove(path)
		return nil, nil, err
	}
	return f, func() error {
		err := f.Close()
		if rerr := os.Remove(path); err == nil {
			err = rerr
		}
		return err
	}, nil
}
