package arch

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The write gate (docs/reliability.md, "Outputs: core/safefile"): every
// file strata creates, writes, truncates, renames or removes goes through
// core/safefile, which refuses special files, symbolic links and the
// run's inputs, locks without following links and removes only what it
// created. The test below parses every non-test Go file (go/ast, so a
// call is found however it is spelled: an alias of os, a method value)
// and fails on a direct call outside core/safefile.

// writeFuncs are the functions of package os that write the file system,
// with the safefile function to use instead. os.OpenFile is one of them
// when its flags may write (writeFlags) or cannot be read.
var writeFuncs = map[string]string{
	"Create":     "safefile.Create (atomic, committed) or safefile.CreateScratch (a scratch file)",
	"CreateTemp": "safefile.Create, safefile.CreateUnlinked or safefile.Probe",
	"OpenFile":   "safefile.Create, safefile.CreateScratch or safefile.WriteProc",
	"WriteFile":  "safefile.WriteFile",
	"Remove":     "safefile.RemoveFile, safefile.RemoveEntry, (*safefile.Scratch).Remove or safefile.RemoveStaleTemps",
	"RemoveAll":  "safefile.RemoveTree",
	"Rename":     "safefile.Create and Commit",
	"Truncate":   "safefile.CreateScratch (sized) or (*os.File).Truncate of a file safefile opened",
}

// readFuncs are the functions of package os that open or read a file at a
// path, with the safefile function to use instead: the read gate refuses
// FIFOs, devices and directories before opening and bounds what it reads.
// A constant path under /proc/ or /sys/ (the kernel's own files) may be
// read directly.
var readFuncs = map[string]string{
	"Open":     "safefile.Open",
	"ReadFile": "safefile.ReadFile, with a bound",
	"OpenFile": "safefile.Open",
}

// writeFlags are the open flags that may change a file.
var writeFlags = map[string]bool{"O_WRONLY": true, "O_RDWR": true, "O_CREATE": true, "O_TRUNC": true, "O_APPEND": true}

// pendingWrites are the direct writes left in files that other work of
// issue 36 is rewriting, each with the safefile function that replaces
// it: "path: os.Func". An entry whose call is gone fails the test, so the
// list only shrinks; it must end empty.
var pendingWrites = map[string]string{}

// writeCall is a direct write found in a file.
type writeCall struct {
	pos  token.Position
	call string // "os.Remove"
	read bool   // a direct read, not a write
}

func (w writeCall) String() string {
	fix, ok := writeFuncs[strings.TrimPrefix(w.call, "os.")]
	if w.read {
		fix, ok = readFuncs[strings.TrimPrefix(w.call, "os.")]
	}
	if !ok {
		fix = "import os by name, and core/safefile for writes and reads"
	}
	verb := "writes"
	if w.read {
		verb = "reads"
	}
	return fmt.Sprintf("%s:%d: %s %s outside core/safefile: use %s", w.pos.Filename, w.pos.Line, w.call, verb, fix)
}

// findWrites returns the direct writes of one parsed file.
func findWrites(fset *token.FileSet, f *ast.File) []writeCall { return findCalls(fset, f, false) }

// findReads returns the direct reads of one parsed file.
func findReads(fset *token.FileSet, f *ast.File) []writeCall { return findCalls(fset, f, true) }

// findCalls returns the direct writes (or, with reads, the direct reads)
// of one parsed file.
func findCalls(fset *token.FileSet, f *ast.File, reads bool) []writeCall {
	osName := ""
	var out []writeCall
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "os" {
			osName = "os"
			if imp.Name != nil {
				osName = imp.Name.Name
			}
		}
	}
	if osName == "" || osName == "_" {
		return nil
	}
	if osName == "." {
		return []writeCall{{fset.Position(f.Package), "os (dot import)", reads}}
	}
	readOnlyOpens, kernel := map[*ast.SelectorExpr]bool{}, map[*ast.SelectorExpr]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			s := osSelector(c.Fun, osName)
			if s != nil && s.Sel.Name == "OpenFile" && len(c.Args) == 3 && readOnly(c.Args[1]) {
				readOnlyOpens[s] = true
			}
			if s != nil && len(c.Args) > 0 && kernelPath(c.Args[0]) {
				kernel[s] = true
			}
		}
		s := osSelector(n, osName)
		if s == nil {
			return true
		}
		_, isWrite := writeFuncs[s.Sel.Name]
		_, isRead := readFuncs[s.Sel.Name]
		switch {
		case !reads && isWrite && !readOnlyOpens[s]:
			out = append(out, writeCall{fset.Position(s.Pos()), "os." + s.Sel.Name, false})
		case reads && isRead && !kernel[s] && (s.Sel.Name != "OpenFile" || readOnlyOpens[s]):
			out = append(out, writeCall{fset.Position(s.Pos()), "os." + s.Sel.Name, true})
		}
		return true
	})
	return out
}

// kernelPath reports whether e is a constant path under /proc/ or /sys/.
func kernelPath(e ast.Expr) bool {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return false
	}
	p, err := strconv.Unquote(lit.Value)
	return err == nil && (strings.HasPrefix(p, "/proc/") || strings.HasPrefix(p, "/sys/"))
}

// osSelector returns n when it is osName.X, else nil.
func osSelector(n ast.Node, osName string) *ast.SelectorExpr {
	s, ok := n.(*ast.SelectorExpr)
	if !ok {
		return nil
	}
	if id, ok := s.X.(*ast.Ident); ok && id.Name == osName && id.Obj == nil {
		return s
	}
	return nil
}

// readOnly reports whether open flags are a constant expression of flags
// none of which may write (a variable may: it is not read-only).
func readOnly(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BinaryExpr:
		return readOnly(e.X) && readOnly(e.Y)
	case *ast.ParenExpr:
		return readOnly(e.X)
	case *ast.SelectorExpr:
		return strings.HasPrefix(e.Sel.Name, "O_") && !writeFlags[e.Sel.Name]
	case *ast.BasicLit:
		return e.Value == "0"
	}
	return false
}

// writesUnder parses the non-test Go files under root (skipping testdata,
// hidden directories and the skip directories, relative to root) and
// returns their direct writes, with paths relative to root.
func writesUnder(t *testing.T, root string, skip ...string) []writeCall {
	return callsUnder(t, root, findWrites, skip...)
}

// readsUnder is writesUnder for the direct reads.
func readsUnder(t *testing.T, root string, skip ...string) []writeCall {
	return callsUnder(t, root, findReads, skip...)
}

// callsUnder parses the non-test Go files under root as writesUnder says
// and returns what find reports in them.
func callsUnder(t *testing.T, root string, find func(*token.FileSet, *ast.File) []writeCall, skip ...string) []writeCall {
	t.Helper()
	fset := token.NewFileSet()
	var out []writeCall
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || slices.Contains(skip, rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, w := range find(fset, f) {
			w.pos.Filename = rel
			out = append(out, w)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWritesThroughSafefile fails on a direct write outside core/safefile
// (listing each with the safefile function to use), and on an entry of
// pendingWrites that is no longer needed.
func TestWritesThroughSafefile(t *testing.T) {
	used := map[string]bool{}
	for _, w := range writesUnder(t, "../..", "core/safefile") {
		key := w.pos.Filename + ": " + w.call
		if _, ok := pendingWrites[key]; ok {
			used[key] = true
			continue
		}
		t.Error(w)
	}
	for key, fix := range pendingWrites {
		if !used[key] {
			t.Errorf("pendingWrites lists %q (%s), which is gone: remove the entry", key, fix)
		}
	}
	if t.Failed() {
		t.Log("every file write goes through core/safefile (docs/reliability.md, \"Outputs: core/safefile\")")
	}
}

// TestWriteRuleCatches runs the rule on the fixture package
// testdata/writes: each file's direct writes are found, however spelled,
// and its allowed uses are not.
func TestWriteRuleCatches(t *testing.T) {
	found := map[string][]string{}
	for _, w := range writesUnder(t, "testdata/writes") {
		found[w.pos.Filename] = append(found[w.pos.Filename], w.call)
	}
	cases := []struct {
		file string
		want []string // the writes found, in order
	}{
		{"create.go", []string{"os.Create"}},
		{"alias.go", []string{"os.WriteFile", "os.Rename"}},
		{"openfile.go", []string{"os.OpenFile", "os.OpenFile", "os.OpenFile"}},
		{"methodvalue.go", []string{"os.Remove", "os.RemoveAll"}},
		{"temp.go", []string{"os.CreateTemp", "os.Truncate"}},
		{"dot.go", []string{"os (dot import)"}},
		{"allowed.go", nil},
		{"skipped_test.go", nil},
	}
	for _, c := range cases {
		if _, err := os.Stat(filepath.Join("testdata/writes", c.file)); err != nil {
			t.Errorf("%s: %v", c.file, err)
		}
		if got := found[c.file]; !slices.Equal(got, c.want) {
			t.Errorf("%s: found %v, want %v", c.file, got, c.want)
		}
		delete(found, c.file)
	}
	for file, got := range found {
		t.Errorf("%s: found %v, not in the table", file, got)
	}
}

// TestReadsThroughSafefile fails on a direct read of a file outside
// core/safefile (a constant /proc/ or /sys/ path excepted), listing each
// with the safefile function to use.
func TestReadsThroughSafefile(t *testing.T) {
	for _, r := range readsUnder(t, "../..", "core/safefile") {
		t.Error(r)
	}
	if t.Failed() {
		t.Log("every file read goes through core/safefile's read gate (docs/reliability.md, \"One read gate\")")
	}
}

// TestReadRuleCatches runs the read rule on the fixture package
// testdata/reads: direct reads are found however spelled, the kernel's
// constant paths and read-only opens in the write rule's sense are
// allowed or caught as they should be.
func TestReadRuleCatches(t *testing.T) {
	found := map[string][]string{}
	for _, r := range readsUnder(t, "testdata/reads") {
		found[r.pos.Filename] = append(found[r.pos.Filename], r.call)
	}
	for _, c := range []struct {
		file string
		want []string
	}{
		{"open.go", []string{"os.Open", "os.ReadFile", "os.OpenFile"}},
		{"value.go", []string{"os.ReadFile"}},
		{"kernel.go", []string{"os.ReadFile"}},
	} {
		if got := found[c.file]; !slices.Equal(got, c.want) {
			t.Errorf("%s: found %v, want %v", c.file, got, c.want)
		}
	}
	if got := writesUnder(t, "testdata/reads"); len(got) != 0 {
		t.Errorf("the write rule finds %v in read-only code", got)
	}
}
