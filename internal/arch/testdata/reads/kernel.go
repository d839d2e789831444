package reads

import (
	"os"
	"path/filepath"
)

// The kernel's own files by a constant path are allowed; a computed
// path under /sys is not.
func kernel(dir string) {
	_, _ = os.ReadFile("/proc/self/io")
	f, _ := os.Open("/proc/cpuinfo")
	f.Close()
	_, _ = os.ReadFile(filepath.Join("/sys", dir))
}
