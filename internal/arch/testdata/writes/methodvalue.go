package writes

import "os"

// Method values and deferred calls: caught.
func methodvalue(p string) {
	rm := os.Remove
	rm(p)
	defer os.RemoveAll(p)
}
