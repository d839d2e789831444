package train

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"strata/core/config"
)

// TestModuleSpecialFiles names, as model.module and as a .wasm in
// model.options (an aggregator module), a FIFO, a link to /dev/zero and a
// directory: each is refused within a second, naming the file and what it
// is (before the read gate a FIFO hung for ever and /dev/zero grew memory
// without bound, in `strata validate` too).
func TestModuleSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.wasm"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.wasm")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "dir.wasm"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"fifo.wasm": "is a FIFO", "zero.wasm": "is a character device", "dir.wasm": "is a directory"}
	keys := map[string]func(file string) (string, func(*config.Config) error){
		"model.module": func(file string) (string, func(*config.Config) error) {
			return "[model]\nmodule = \"" + file + "\"\n", func(c *config.Config) error { _, _, err := moduleBytes(c); return err }
		},
		"model.options.aggr": func(file string) (string, func(*config.Config) error) {
			return "[model]\nname = \"sage\"\n[model.options]\naggr = \"" + file + "\"\n", func(c *config.Config) error { _, err := userOptions(c); return err }
		},
	}
	for key, mk := range keys {
		for file, want := range files {
			t.Run(key+"/"+file, func(t *testing.T) {
				text, load := mk(file)
				cfgPath := filepath.Join(dir, "c.toml")
				if err := os.WriteFile(cfgPath, []byte("[data]\ndataset = \"embedded:cora\"\n"+text), 0o644); err != nil {
					t.Fatal(err)
				}
				cfg, err := config.Load(cfgPath)
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- load(cfg) }()
				select {
				case err = <-done:
				case <-time.After(2 * time.Second):
					t.Fatalf("%s = %s: not refused within 2 s", key, file)
				}
				if err == nil || !strings.Contains(err.Error(), file+" "+want) || !strings.Contains(err.Error(), "c.toml:") {
					t.Fatalf("err = %v, want c.toml:<line> and %q", err, file+" "+want)
				}
			})
		}
	}
}
