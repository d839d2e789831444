// Package writes is the fixture of internal/arch's TestWriteRuleCatches:
// each file's direct writes (outside core/safefile) must be found.
package writes

import "os"

// A raw os.Create: caught.
func create(p string) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	return f.Close()
}
