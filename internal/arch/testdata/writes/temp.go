package writes

import "os"

// A temporary file and a truncation: caught.
func temp(dir string) {
	f, _ := os.CreateTemp(dir, "x-*")
	os.Truncate(f.Name(), 0)
}
