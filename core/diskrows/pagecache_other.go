//go:build !linux

package diskrows

import (
	"fmt"
	"os"
	"runtime"
)

// adviseRandom is a no-op where posix_fadvise is not reached.
func adviseRandom(*os.File) {}

// dropPageCache is refused where posix_fadvise is not reached: a cold
// measurement would silently be a warm one.
func dropPageCache(*os.File, int64, int64) error {
	return fmt.Errorf("evicting a file's pages is not supported on %s", runtime.GOOS)
}
