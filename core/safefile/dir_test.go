package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestCommitDir: a filled temporary directory becomes the target (mode
// 0755); a target that exists, even empty, is refused and left; the
// temporary directories of a dead writer are removed, a live one's kept.
func TestCommitDir(t *testing.T) {
	parent := t.TempDir()
	target := filepath.Join(parent, "out")
	tmp, err := CreateTempDir(target)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(tmp, "f"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := CommitDir(tmp, target); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(target, "f")); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("the committed file: %v", err)
	}
	if st, _ := os.Stat(target); st.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want 0755", st.Mode().Perm())
	}
	empty := filepath.Join(parent, "empty")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	tmp2, err := CreateTempDir(empty)
	if err != nil {
		t.Fatal(err)
	}
	if err := CommitDir(tmp2, empty); !errors.Is(err, ErrUnsafe) {
		t.Errorf("over an existing empty directory: %v, want ErrUnsafe", err)
	}
	if _, err := os.Stat(tmp2); err != nil {
		t.Errorf("the refused temporary directory is gone: %v", err)
	}
	live, err := CreateTempDir(filepath.Join(parent, "out2"))
	if err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(parent, ".out2"+tempMark+"999999999-123"+tempDirSuffix)
	if err := os.Mkdir(dead, 0o700); err != nil {
		t.Fatal(err)
	}
	if k := RemoveStaleTempDirs(parent, "out2"); k != 1 {
		t.Errorf("removed %d, want 1 (the dead writer's)", k)
	}
	for p, want := range map[string]bool{dead: false, live: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", p, err == nil, want)
		}
	}
}
