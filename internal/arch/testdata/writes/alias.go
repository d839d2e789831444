package writes

import sys "os"

// Writes through an alias of os: caught.
func alias(p string) error {
	if err := sys.WriteFile(p, nil, 0o644); err != nil {
		return err
	}
	return sys.Rename(p, p+".old")
}
