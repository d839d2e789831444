// Command opgen writes the files derived from the op table (see package
// strata/internal/opgen). Run it with `go generate ./core/ir`.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"strata/core/safefile"
	"strata/internal/opgen"
)

func main() {
	root, err := moduleRoot()
	if err == nil {
		err = write(root)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "opgen:", err)
		os.Exit(1)
	}
}

func write(root string) error {
	files, err := opgen.Files()
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := safefile.WriteFile(filepath.Join(root, f.Path), f.Data); err != nil {
			return err
		}
	}
	return nil
}

// moduleRoot finds the directory holding go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}
