//go:build linux

package hosttier

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestZeroRangeKeepsBlocks: a zeroed range of a reserved file reads as
// zeros and keeps its blocks allocated (a punched hole would give the
// reserved space back to the file system).
func TestZeroRangeKeepsBlocks(t *testing.T) {
	const size = 1 << 20
	f, err := os.Create(filepath.Join(t.TempDir(), "host.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		t.Skipf("no fallocate here: %v", err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{7}, size), 0); err != nil {
		t.Fatal(err)
	}
	if err := zeroRange(f, 4096, size-8192); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, size)
	if _, err := f.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte{7}, size)
	clear(want[4096 : size-4096])
	if !bytes.Equal(got, want) {
		t.Fatal("zeroRange did not zero exactly its range")
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if st.Blocks*512 < size {
		t.Errorf("%d bytes allocated after zeroRange, want the %d reserved", st.Blocks*512, size)
	}
}
