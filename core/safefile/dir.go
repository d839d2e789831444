package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// tempDirSuffix ends the name of a temporary directory of this package:
// ".<target>.strata-<pid>-<random>.tmpdir", beside the target.
const tempDirSuffix = ".tmpdir"

// CreateTempDir creates the temporary directory in which a new output
// directory target is filled before CommitDir renames it, beside target
// and named with this process's pid. It first removes the temporary
// directories of target that a killed writer left (the caller holds
// target's lock, Acquire).
func CreateTempDir(target string) (string, error) {
	parent, base := filepath.Split(filepath.Clean(target))
	if parent == "" {
		parent = "."
	}
	RemoveStaleTempDirs(parent, base)
	tmp, err := os.MkdirTemp(parent, fmt.Sprintf(".%s%s%d-*%s", base, tempMark, os.Getpid(), tempDirSuffix))
	if err != nil {
		return "", fmt.Errorf("%s: creating its temporary directory in %s: %w", target, parent, err)
	}
	return tmp, nil
}

// RemoveStaleTempDirs removes from dir the temporary directories of
// dir/target (CreateTempDir) whose writer is no longer running, and
// returns how many it removed.
func RemoveStaleTempDirs(dir, target string) int {
	names, _ := filepath.Glob(filepath.Join(dir, "."+target+tempMark+"*"+tempDirSuffix))
	k := 0
	for _, p := range names {
		rest := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "."+target+tempMark), tempDirSuffix)
		pid, random, ok := strings.Cut(rest, "-")
		if !ok || !digits(pid) || !digits(random) {
			continue
		}
		var n int
		if _, err := fmt.Sscan(pid, &n); err != nil || n <= 0 || pidAlive(n) {
			continue
		}
		if RemoveTree(p) == nil {
			k++
		}
	}
	return k
}

// CommitDir makes the complete temporary directory tmp (CreateTempDir)
// the new directory target: mode 0755, renamed to target unless target
// exists by then (refused with ErrUnsafe: an output directory is never
// replaced, even an empty one), the parent synced. On an error tmp is
// left for the caller to remove (RemoveTree).
func CommitDir(tmp, target string) error {
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("%s: %w", target, err)
	}
	if err := renameNoReplace(tmp, target); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s exists; a new output directory never replaces one: %w", target, ErrUnsafe)
		}
		return fmt.Errorf("%s: %w", target, err)
	}
	return SyncDir(filepath.Dir(filepath.Clean(target)))
}

// renameChecked renames old to new after checking that new does not
// exist (not atomic: a directory created between the two is replaced if
// empty).
func renameChecked(old, new string) error {
	if _, err := os.Lstat(new); err == nil {
		return fs.ErrExist
	}
	return os.Rename(old, new)
}
