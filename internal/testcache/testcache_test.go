package testcache

import (
	"os"
	"path/filepath"
	"testing"
)

func TestModuleRoot(t *testing.T) {
	root := t.TempDir()
	nested := filepath.Join(root, "a", "b")
	other := filepath.Join(root, "a", "other")
	for _, d := range []string{nested, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(dir, text string) {
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(root, "// the repository\nmodule strata\n\ngo 1.26\n")
	write(other, "module strataish\n")
	tests := []struct {
		name, from, want string
	}{
		{"the root itself", root, root},
		{"nested directory", nested, root},
		{"past another module's go.mod", other, root},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := moduleRoot(tc.from)
			if err != nil || got != tc.want {
				t.Fatalf("moduleRoot(%s) = %q, %v; want %q", tc.from, got, err, tc.want)
			}
		})
	}
	if _, err := moduleRoot(string(filepath.Separator)); err == nil {
		t.Fatal("no error without a go.mod of module strata")
	}
}

func TestWasmDirInRepository(t *testing.T) {
	dir, err := WasmDir()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(dir) != "test-wasm-cache" || filepath.Base(filepath.Dir(dir)) != "build" {
		t.Fatalf("WasmDir() = %s", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "..", "..", "go.mod")); err != nil {
		t.Fatalf("%s is not under the repository root: %v", dir, err)
	}
}
