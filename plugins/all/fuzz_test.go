package all_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"strata/core/graph"
	_ "strata/plugins/all"
)

// fuzzExample is a format's valid example with one file to fuzz.
type fuzzExample struct {
	f    graph.Format
	spec string // the example as written by Examples
	file string // the file of it that the fuzzer replaces
}

// fuzzExamples returns the valid examples of every registered format that
// are files or directories, with the first file of each.
func fuzzExamples(f *testing.F) []fuzzExample {
	var out []fuzzExample
	for _, format := range graph.Formats() {
		ex, ok := format.(graph.Exampler)
		if !ok {
			continue
		}
		examples, err := ex.Examples(f.TempDir())
		if err != nil {
			f.Fatal(err)
		}
		for _, e := range examples {
			if e.Kind != nil {
				continue
			}
			file := ""
			filepath.WalkDir(e.Spec, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() && file == "" {
					file = p
				}
				return nil
			})
			if file != "" {
				out = append(out, fuzzExample{format, e.Spec, file})
			}
		}
	}
	return out
}

// FuzzFormats feeds arbitrary bytes to every registered format in place
// of one file of its first valid example (the first byte picks the
// example): none may panic or hang, or allocate beyond a 64 MiB budget
// without refusing; a dataset it loads must be valid. The targets come
// from the registry, so `make fuzz` keeps no list of formats.
func FuzzFormats(f *testing.F) {
	examples := fuzzExamples(f)
	for i, e := range examples {
		b, err := os.ReadFile(e.file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(byte(i), b)
		f.Add(byte(i), b[:len(b)/2])
	}
	f.Fuzz(func(t *testing.T, pick byte, data []byte) {
		e := examples[int(pick)%len(examples)]
		if err := os.WriteFile(e.file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := e.f.Open(e.spec, graph.LoadOptions{Ctx: context.Background(), Budget: 64 << 20})
		if err == nil {
			if err := d.Validate(); err != nil {
				t.Fatalf("%s loaded an invalid dataset: %v", graph.FormatID(e.f), err)
			}
		}
	})
}
