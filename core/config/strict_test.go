package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// strictDoc is a document schema for DecodeStrict: the field types an
// experiment file uses.
type strictDoc struct {
	Pos
	Name   string         `toml:"name" required:"true" example:"demo"`
	Colour string         `toml:"colour" enum:"red,green,blue"`
	Count  int            `toml:"count" range:"[1,)"`
	Tags   []string       `toml:"tags"`
	Raw    any            `toml:"raw"`
	Where  map[string]any `toml:"options"` // a table of numbers and booleans, as model.options
	Values strictValues   `toml:"values" example:"{ a = 1 }"`
	Either stringOrList   `toml:"either"`
	Items  []strictItem   `toml:"item"`
	Extra  strictExtra    `toml:"extra"`
}

type strictValues map[string]any

type strictItem struct {
	Pos
	ID     string  `toml:"id" required:"true" example:"a"`
	Weight float64 `toml:"weight" range:"(0,1]"`
}

type strictExtra struct {
	Pos
	On bool `toml:"on"`
}

// stringOrList is a ValueDecoder: a string or a list of strings.
type stringOrList []string

func (l *stringOrList) DecodeTOML(key string, v any) error {
	switch x := v.(type) {
	case string:
		*l = stringOrList{x}
		return nil
	case []any:
		var errs []error
		for _, e := range x {
			if s, ok := e.(string); ok {
				*l = append(*l, s)
			} else {
				errs = append(errs, fmt.Errorf("%s: expected strings, got %s", key, DescribeValue(e)))
			}
		}
		return errors.Join(errs...)
	}
	return fmt.Errorf("%s: expected a string or a list of strings, got %s", key, DescribeValue(v))
}

func TestDecodeStrict(t *testing.T) {
	text := `name = "x"
tags = ["a", "b"]
raw = [1, "two", { three = 3 }]
values = { a = "one", "b.c" = [2] }
either = "solo"
options = { heads = 8 }

[[item]]
id = "first"
weight = 0.5

[[item]]
# the second entry
id = "second"

[extra]
on = true
`
	var d strictDoc
	if err := DecodeStrict("doc.toml", []byte(text), &d); err != nil {
		t.Fatal(err)
	}
	if !d.Found() || d.Name != "x" || !slices.Equal(d.Tags, []string{"a", "b"}) || TOMLValue(d.Raw) != `[1, "two", {three = 3}]` {
		t.Errorf("decoded %+v", d)
	}
	if TOMLValue(map[string]any(d.Values)) != `{a = "one", "b.c" = [2]}` || !slices.Equal(d.Either, []string{"solo"}) || d.Where["heads"] != int64(8) {
		t.Errorf("values %v, either %v, options %v", d.Values, d.Either, d.Where)
	}
	if len(d.Items) != 2 || d.Items[0].ID != "first" || d.Items[0].Weight != 0.5 || d.Items[1].ID != "second" {
		t.Fatalf("items %+v", d.Items)
	}
	// Positions: each entry of [[item]] has its own lines.
	if l := d.KeyLine("tags"); l != 2 {
		t.Errorf("tags on line %d, want 2", l)
	}
	if it := d.Items[1]; it.Line != 12 || it.KeyLine("id") != 14 || !it.Has("id") || it.Has("weight") || it.KeyLine("weight") != 12 || it.Key != "item" {
		t.Errorf("second item: line %d, id line %d, key %q", it.Line, it.KeyLine("id"), it.Key)
	}
	if d.Items[0].KeyLine("weight") != 10 || !d.Extra.Found() || d.Extra.Line != 16 || d.Extra.KeyLine("on") != 17 {
		t.Errorf("first item weight line %d; extra found %v line %d", d.Items[0].KeyLine("weight"), d.Extra.Found(), d.Extra.Line)
	}
	if e := d.Items[1].Errorf("id", "bad %s", "id"); e.Error() != "doc.toml:14: bad id" || e.Key != "item.id" {
		t.Errorf("Pos.Errorf: %q (key %q)", e, e.Key)
	}

	var empty strictDoc
	if err := DecodeStrict("doc.toml", []byte("name = \"y\"\n"), &empty); err != nil {
		t.Fatal(err)
	}
	if empty.Extra.Found() || empty.Items != nil || empty.Values != nil {
		t.Errorf("absent keys: extra found %v, items %v, values %v", empty.Extra.Found(), empty.Items, empty.Values)
	}
}

func TestDecodeStrictErrors(t *testing.T) {
	text := `nmae = "x"
colour = "rde"
count = 0
tags = ["a", 2]
values = 3
either = [1]

[[item]]
id = "a"

[[item]]
id = 2
weight = 2.0
colour = "red"

[[item]]
weight = 0.5

[extra]
of = true
`
	var d strictDoc
	err := DecodeStrict("doc.toml", []byte(text), &d)
	if err == nil {
		t.Fatal("no error")
	}
	want := []string{
		`doc.toml: name: required key is missing: add name = "demo"`, // no line: first
		`doc.toml:1: unknown key "nmae" in the top level (did you mean "name"?)`,
		`doc.toml:2: colour = "rde": allowed values are "red", "green", "blue" (did you mean "red"?)`,
		`doc.toml:3: count = 0: must be >= 1`,
		`doc.toml:4: tags[1]: expected string, got integer 2`,
		`doc.toml:5: values: expected table, got integer 3; e.g. values = { a = 1 }`,
		`doc.toml:6: either: expected strings, got integer 1`,
		`doc.toml:12: item.id: expected string, got integer 2`,
		`doc.toml:13: item.weight = 2.0: must be in (0, 1]`,
		`doc.toml:14: unknown key "colour" in [[item]]; the keys are "id", "weight"`,
		`doc.toml:16: item.id: required key is missing: add id = "a" under [[item]]`,
		`doc.toml:20: unknown key "of" in [extra] (did you mean "on"?)`,
	}
	var got []string
	for _, e := range Errors(err) {
		got = append(got, e.Error())
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// What decoded is kept, entries with errors included.
	if len(d.Items) != 3 || d.Items[0].ID != "a" || d.Items[2].Weight != 0.5 || d.Count != 0 {
		t.Errorf("partial decode: %+v", d)
	}

	// A syntax error: nothing is decoded.
	var s strictDoc
	err = DecodeStrict("doc.toml", []byte("name = [\n"), &s)
	if err == nil || !strings.Contains(err.Error(), "doc.toml:") || !strings.Contains(err.Error(), "TOML syntax error") || s.Found() {
		t.Errorf("syntax error: %v (found %v)", err, s.Found())
	}
	// A wrong type for an array of tables names its syntax.
	err = DecodeStrict("doc.toml", []byte("name = \"x\"\nitem = 3\n"), &s)
	if err == nil || err.Error() != "doc.toml:2: item: expected array of tables ([[item]]), got integer 3" {
		t.Errorf("item = 3: %v", err)
	}
}

// TestEntryLines: the keys of every entry of an array of tables, nested
// tables of an entry and arrays of tables inside entries have their own
// lines.
func TestEntryLines(t *testing.T) {
	text := `top = 1
[[a]]
x = 1
[[a]]
x = 2
[a.sub]
y = 3
[[a.list]]
z = 4
[[a.list]]
z = 5
[[b]]
w = { k = 6 }
`
	got := scanEntryLines(text)
	want := map[string]int{
		"top": 1, "a": 2, `a."#0"`: 2, `a."#0".x`: 3, `a."#1"`: 4, `a."#1".x`: 5,
		`a."#1".sub`: 6, `a."#1".sub.y`: 7, `a."#1".list`: 8, `a."#1".list."#0"`: 8, `a."#1".list."#0".z`: 9,
		`a."#1".list."#1"`: 10, `a."#1".list."#1".z`: 11, "b": 12, `b."#0"`: 12, `b."#0".w`: 13, `b."#0".w.k`: 13,
	}
	for k, l := range want {
		if got[k] != l {
			t.Errorf("%s: line %d, want %d", k, got[k], l)
		}
	}
}
