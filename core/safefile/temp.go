package safefile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// tempMark and tempSuffix frame the writer's pid in the name of every
// temporary file of this package: ".<target>.strata-<pid>-<random>.tmp",
// in the target's directory. The pid says which process writes it, so
// the temporary files of a writer killed before its commit (kill -9 runs
// no cleanup) are recognised as strata's and removed by the next writer
// (RemoveStaleTemps).
const (
	tempMark   = ".strata-"
	tempSuffix = ".tmp"
)

// createTemp creates the temporary file of target in target's directory.
func createTemp(target string) (*os.File, error) {
	pattern := fmt.Sprintf(".%s%s%d-*%s", filepath.Base(target), tempMark, os.Getpid(), tempSuffix)
	return os.CreateTemp(filepath.Dir(target), pattern)
}

// parseTemp splits a temporary file's name into its target's base name
// and the writer's pid; ok is false for any other name.
func parseTemp(name string) (target string, pid int, ok bool) {
	rest, found := strings.CutSuffix(name, tempSuffix)
	i := strings.LastIndex(rest, tempMark)
	if !found || i < 2 || rest[0] != '.' {
		return "", 0, false
	}
	p, random, found := strings.Cut(rest[i+len(tempMark):], "-")
	if !found || !digits(p) || !digits(random) {
		return "", 0, false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 {
		return "", 0, false
	}
	return rest[1:i], pid, true
}

// digits reports whether s is a non-empty string of decimal digits.
func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// pidAlive reports whether process pid exists (a process of another user
// counts: signalling it is refused, not unknown).
func pidAlive(pid int) bool {
	if pid == os.Getpid() {
		return true
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// RemoveStaleTemps removes from dir the temporary files of this package
// whose writer is no longer running (killed before its commit), and
// returns how many it removed. Only regular files named by createTemp are
// candidates; a file of a live process is left alone. target, when not
// empty, restricts it to the temporary files of dir/target.
func RemoveStaleTemps(dir, target string) int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		base, pid, ok := parseTemp(e.Name())
		if !ok || (target != "" && base != target) || !e.Type().IsRegular() || pidAlive(pid) {
			continue
		}
		if os.Remove(filepath.Join(dir, e.Name())) == nil {
			n++
		}
	}
	return n
}
