package config

import (
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"strata/internal/worktest"
)

// TestDeepNesting checks that deeply nested TOML is refused with an
// error naming the line, instead of taking minutes in the decoder, and
// that the refusal's cost grows linearly with the depth (measured by what
// it allocates, so the test holds on a loaded machine).
func TestDeepNesting(t *testing.T) {
	const d = 10000
	head := "[data]\ndataset = \"embedded:cora\"\n[model.options]\n"
	cases := []struct {
		name string
		text func(d int) string
		line int
	}{
		{"inline tables", func(d int) string {
			return head + "x = " + strings.Repeat("{a=", d) + "1" + strings.Repeat("}", d) + "\n"
		}, 4},
		{"arrays", func(d int) string {
			return head + "x = " + strings.Repeat("[", d) + "1" + strings.Repeat("]", d) + "\n"
		}, 4},
		{"dotted key", func(d int) string { return head + "x" + strings.Repeat(".a", d) + " = 1\n" }, 4},
		{"table header", func(d int) string { return "[x" + strings.Repeat(".a", d) + "]\n" }, 1},
		{"multi-line inline table", func(d int) string {
			return head + "x = " + strings.Repeat("{\na=", d) + "1" + strings.Repeat("}", d) + "\n"
		}, 4 + MaxNesting - 2},
		{"unterminated", func(d int) string { return "x = " + strings.Repeat("[{a=", d) }, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("deep.toml", []byte(c.text(d)))
			errs := Errors(err)
			if len(errs) != 1 || !strings.Contains(errs[0].Msg, "nesting deeper than") {
				t.Fatalf("err = %.300v, want one nesting error", err)
			}
			if c.line > 0 && errs[0].Line != c.line {
				t.Errorf("line = %d, want %d (%.300v)", errs[0].Line, c.line, err)
			}
			worktest.Linear(t, "Parse", d/2, func(d int) { Parse("deep.toml", []byte(c.text(d))) })
		})
	}
}

// TestNestingWithinLimit checks that nesting up to the limit is accepted.
func TestNestingWithinLimit(t *testing.T) {
	lvl := MaxNesting - 3 // model.options.x
	text := "[data]\ndataset = \"embedded:cora\"\n[model.options]\nx = " + strings.Repeat("[", lvl) + "1" + strings.Repeat("]", lvl) + "\n"
	_, err := Parse("ok.toml", []byte(text))
	if err != nil && strings.Contains(err.Error(), "nesting") {
		t.Fatalf("nesting within the limit refused: %v", err)
	}
}

func TestOverrideBounds(t *testing.T) {
	base := []byte("[data]\ndataset = \"embedded:cora\"\n")
	for _, o := range []func(d int) string{
		func(d int) string { return "model.options.x=" + strings.Repeat("[", d) + strings.Repeat("]", d) },
		func(d int) string { return "a" + strings.Repeat(".a", d) + "=1" },
	} {
		_, err := Parse("c.toml", base, o(10000))
		if err == nil || !strings.Contains(err.Error(), "limit") {
			t.Errorf("err = %.300v, want a limit error", err)
		}
		worktest.Linear(t, "Parse with the override", 5000, func(d int) { Parse("c.toml", base, o(d)) })
	}
}

func TestConfigTooLarge(t *testing.T) {
	err := CheckText("big.toml", make([]byte, MaxConfigBytes+1))
	if err == nil || !strings.Contains(err.Error(), "big.toml") || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("err = %v", err)
	}
}

func TestLoadSpecialFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "c.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	for path, want := range map[string]string{fifo: "it is a FIFO", dir: "it is a directory", "/dev/zero": "it is a character device"} {
		done := make(chan error, 1)
		go func() { _, err := Load(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Load(%s): err = %v, want %q", path, err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Load(%s) blocks", path)
		}
	}
}

// TestIntegersBounded checks that every integer key of the config has an
// upper bound (the seed excepted: any int64 is a seed).
func TestIntegersBounded(t *testing.T) {
	checked := 0
	var walk func(prefix string, fs []field)
	walk = func(prefix string, fs []field) {
		for i := range fs {
			f := &fs[i]
			name := prefix + f.key
			switch k := f.typ.Kind(); {
			case k == reflect.Struct && f.typ != pluginType:
				walk(name+".", fieldsOf(f.typ))
			case k >= reflect.Int && k <= reflect.Uint64 || k == reflect.Slice && f.typ.Elem().Kind() == reflect.Int:
				if name == "train.seed" {
					continue
				}
				checked++
				if f.rng == nil || !f.rng.hasHi {
					t.Errorf("%s: integer without an upper bound", name)
				}
			}
		}
	}
	walk("", fieldsOf(configType))
	if checked < 10 {
		t.Errorf("checked %d integer keys; the walk misses fields", checked)
	}
}
