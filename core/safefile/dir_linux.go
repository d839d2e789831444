package safefile

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames old to new atomically unless new exists
// (renameat2 RENAME_NOREPLACE; where the file system lacks it, a check
// before the rename).
func renameNoReplace(old, new string) error {
	err := unix.Renameat2(unix.AT_FDCWD, old, unix.AT_FDCWD, new, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST):
		return fs.ErrExist
	case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS):
		return renameChecked(old, new)
	}
	return &os.LinkError{Op: "rename", Old: old, New: new, Err: err}
}
