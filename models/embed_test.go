package models

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEverySourceEmbedded lists the source directories of every kind and
// requires each to be built into the binary, with a doc line: a module
// whose build was forgotten fails here, not silently.
func TestEverySourceEmbedded(t *testing.T) {
	for _, k := range AllKinds {
		ents, err := os.ReadDir(k.Dir)
		if err != nil {
			t.Fatal(err)
		}
		var dirs []string
		for _, e := range ents {
			if e.IsDir() {
				dirs = append(dirs, e.Name())
			}
		}
		if len(dirs) == 0 {
			t.Fatalf("no %s sources under models/%s", k.Noun, k.Dir)
		}
		if got := k.Names(); !slices.Equal(got, dirs) {
			t.Errorf("embedded %s modules %v, sources %v: run `make models` (scripts/build-models.sh)", k.Noun, got, dirs)
		}
		for _, name := range dirs {
			b, err := k.Module(name)
			if err != nil {
				t.Errorf("%v", err)
				continue
			}
			if d := Doc(b); d == "" || strings.Contains(d, "\n") {
				t.Errorf("%s %s: doc %q; give its sources one `//strata:doc <one line>` directive", k.Noun, name, d)
			}
		}
	}
}

// TestMetaMalformed: a section whose size runs past the module, or a
// truncated size, is an error, not a panic or an allocation.
func TestMetaMalformed(t *testing.T) {
	head := []byte("\x00asm\x01\x00\x00\x00")
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"not wasm", []byte("hello world"), "not a WebAssembly"},
		{"size past end", append(head, 0, 0x10, 1), "runs past"},
		{"huge size", append(head, 0, 0xff, 0xff, 0xff, 0xff, 0x0f), "runs past"},
		{"truncated size", append(head, 0, 0x80), "LEB128"},
		{"bad name", append(head, 0, 2, 9, 'a'), "bad name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Meta(c.b); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Meta: %v, want an error containing %q", err, c.want)
			}
		})
	}
	m, err := Meta(append(head, 0, 13, 10, 's', 't', 'r', 'a', 't', 'a', '.', 'd', 'o', 'c', 'h', 'i'))
	if err != nil || m[MetaDoc] != "hi" {
		t.Fatalf("Meta = %v, %v; want doc hi", m, err)
	}
}

// TestUnknownModule names the shipped modules.
func TestUnknownModule(t *testing.T) {
	_, err := Layer("nope")
	if err == nil || !strings.Contains(err.Error(), "gcn") {
		t.Fatalf("Layer(nope): %v", err)
	}
	if _, _, err := Resolve(filepath.Join(t.TempDir(), "x.wasm"), os.ReadFile); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("Resolve(missing file): %v", err)
	}
}

// TestKindResolve: a decoder setting names a shipped decoder or a module
// file, and either being wrong is an error naming the kind.
func TestKindResolve(t *testing.T) {
	files := map[string][]byte{"my/ok.wasm": []byte("\x00asm\x01\x00\x00\x00"), "bad.wasm": []byte("text")}
	read := func(p string) ([]byte, error) {
		if b, ok := files[p]; ok {
			return b, nil
		}
		return nil, os.ErrNotExist
	}
	cases := []struct {
		module, name, err string
	}{
		{"dot", "dot", ""},
		{"my/ok.wasm", "ok", ""},
		{"bad.wasm", "bad", "decoder module bad.wasm is not a WebAssembly binary"},
		{"nope", "nope", `unknown decoder module "nope" (shipped: `},
		{"gone.wasm", "gone", "file does not exist"},
	}
	for _, c := range cases {
		name, b, err := Decoders.Resolve(c.module, read)
		if name != c.name {
			t.Errorf("%s: name %q, want %q", c.module, name, c.name)
		}
		if c.err == "" {
			if err != nil || len(b) < 8 {
				t.Errorf("%s: %d bytes, error %v", c.module, len(b), err)
			}
		} else if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: error %v, want %q", c.module, err, c.err)
		}
	}
}
