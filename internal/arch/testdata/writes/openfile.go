package writes

import (
	"os"
	"syscall"
)

// os.OpenFile with flags that may write, or that cannot be read: caught.
func openfile(p string, flags int) {
	os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	os.OpenFile(p, os.O_RDONLY|(syscall.O_APPEND), 0)
	os.OpenFile(p, flags, 0)
}
