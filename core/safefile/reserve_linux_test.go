//go:build linux

package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestScratchNoSpace: a scratch file larger than its file system's free
// space is refused when it is created (ErrNoSpace, naming the sizes), and
// nothing is left at its path or its lock's; one that fits is reserved
// whole (its blocks allocated, not a sparse file).
func TestScratchNoSpace(t *testing.T) {
	dir := t.TempDir()
	probe, err := os.CreateTemp(dir, "probe")
	must(t, err)
	err = syscall.Fallocate(int(probe.Fd()), 0, 0, 4096)
	probe.Close()
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		t.Skipf("the file system of %s has no fallocate", dir)
	}
	var st syscall.Statfs_t
	must(t, syscall.Statfs(dir, &st))
	free := int64(st.Bavail) * st.Bsize
	path := filepath.Join(dir, "host.bin")
	s, err := CreateScratch(path, free+1<<30)
	if err == nil {
		s.Remove()
		t.Fatalf("a scratch file 1 GiB beyond the %d bytes free was created", free)
	}
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("err = %v, want ErrNoSpace", err)
	}
	for _, p := range []string{path, LockPath(path)} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s left behind: %v", p, err)
		}
	}
	const size = 1 << 20
	s, err = CreateScratch(path, size)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Remove()
	var fst syscall.Stat_t
	must(t, syscall.Fstat(int(s.File().Fd()), &fst))
	if fst.Blocks*512 < size {
		t.Errorf("%d bytes allocated for a %d-byte scratch file: not reserved", fst.Blocks*512, size)
	}
}
