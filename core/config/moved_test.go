package config

import (
	"strings"
	"testing"

	"strata/core/registry"
)

// movedA and movedB are strategies that took over keys core once held:
// both train.zz_shared (several strategies read it), movedB also the
// section [zz_tab].
type movedA struct {
	Shared int  `toml:"shared" range:"[1,100]" moved:"train.zz_shared"`
	Own    bool `toml:"own"`
	K      int  `toml:"k" range:"[1,1048576]" word:"auto:0:chosen when training" moved:"train.zz_k"`
}

type movedB struct {
	Shared int `toml:"shared" range:"[1,100]" moved:"train.zz_shared"`
	Tab    struct {
		X int `toml:"x"`
	} `toml:"tab" moved:"zz_tab" hash:"omitdefault"`
}

func (*movedA) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "strategy.zz-a", New: func() registry.Module { return &movedA{Shared: 8, K: 1} }}
}

func (*movedB) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "strategy.zz-b", New: func() registry.Module { return &movedB{Shared: 8} }}
}

func init() {
	registry.Register(new(movedA))
	registry.Register(new(movedB))
}

// TestMovedKeys checks the keys strategies took over: the old spelling
// decodes into the strategy train.mode names (whichever of the owners),
// the canonical form keeps the key at its old place (the value, or the
// default under a strategy that does not own it), both spellings hash the
// same, and a non-default value under another strategy, or both
// spellings at once, are errors naming the key and its line.
func TestMovedKeys(t *testing.T) {
	mode := func(m string) string { return minimal + "[train]\nmode = \"" + m + "\"\n" }
	for _, c := range []struct {
		name   string
		text   string
		sets   []string
		shared int      // the strategy's Shared after decoding (0: not checked)
		canon  []string // in the canonical form
		not    []string // not in it
		err    string
	}{
		{"old key, first owner", mode("zz-a"), []string{"train.zz_shared=5"}, 5, []string{"zz_shared = 5"}, []string{"[zz-a]"}, ""},
		{"old key, second owner", mode("zz-b"), []string{"train.zz_shared=5"}, 5, []string{"zz_shared = 5"}, []string{"[zz-b]"}, ""},
		{"new key", mode("zz-b") + "[zz-b]\nshared = 5\n", nil, 5, []string{"zz_shared = 5"}, []string{"[zz-b]"}, ""},
		{"default", mode("zz-a"), nil, 8, []string{"zz_shared = 8"}, []string{"[zz-a]", "zz_tab"}, ""},
		{"not an owner, default", mode("fullgraph"), []string{"train.zz_shared=8"}, 0, []string{"zz_shared = 8"}, nil, ""},
		{"own option", mode("zz-a") + "[zz-a]\nown = true\n", nil, 8, []string{"[zz-a]", "own = true", "zz_shared = 8"}, []string{"[zz-a]\n  shared"}, ""},
		{"old section", mode("zz-b") + "[zz_tab]\nx = 3\n", nil, 8, []string{"[zz_tab]", "x = 3"}, []string{"[zz-b]"}, ""},
		{"new section", mode("zz-b") + "[zz-b.tab]\nx = 3\n", nil, 8, []string{"[zz_tab]", "x = 3"}, []string{"[zz-b]"}, ""},
		{"not an owner", mode("fullgraph"), []string{"train.zz_shared=5"}, 0, nil, nil,
			`--set train.zz_shared=5: train.zz_shared: an option of train.mode = "zz-a" or "zz-b" (now zz-a.shared, zz-b.shared), which train.mode = "fullgraph" does not read; set train.mode = "zz-a" or "zz-b" or remove it`},
		{"section of another", mode("zz-a") + "[zz_tab]\nx = 3\n", nil, 0, nil, nil,
			`m.toml:5: zz_tab: an option of train.mode = "zz-b" (now zz-b.tab)`},
		{"both spellings", mode("zz-a") + "zz_shared = 6\n[zz-a]\nshared = 5\n", nil, 0, nil, nil,
			"train.zz_shared and zz-a.shared set the same option; keep zz-a.shared"},
		{"bad value, old place", mode("zz-b") + "[zz_tab]\nx = \"three\"\n", nil, 0, nil, nil, `m.toml:6: zz_tab.x: expected integer`},
		{"override in the new spelling wins", mode("zz-a") + "zz_shared = 5\n", []string{"zz-a.shared=7"}, 7, []string{"zz_shared = 7"}, nil, ""},
		{"override in the old spelling wins", mode("zz-a") + "[zz-a]\nshared = 5\n", []string{"train.zz_shared=9"}, 9, []string{"zz_shared = 9"}, nil, ""},
		{"both spellings by override", mode("zz-a"), []string{"train.zz_shared=5", "zz-a.shared=6"}, 0, nil, nil, "train.zz_shared and zz-a.shared set the same option"},
		{"range, new place", mode("zz-a") + "[zz-a]\nshared = 500\n", nil, 0, nil, nil, `m.toml:6: zz-a.shared = 500: must be in [1, 100]`},
		{"range, old place", mode("zz-a"), []string{"train.zz_shared=500"}, 0, nil, nil, `--set train.zz_shared=500: train.zz_shared = 500: must be in [1, 100]`},
	} {
		cfg, err := Parse("m.toml", []byte(c.text), c.sets...)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := 0
		switch m := cfg.Strategy.Module.(type) {
		case *movedA:
			got = m.Shared
		case *movedB:
			got = m.Shared
		}
		if c.shared != 0 && got != c.shared {
			t.Errorf("%s: shared = %d, want %d", c.name, got, c.shared)
		}
		canon, _ := cfg.Canonical()
		for _, w := range c.canon {
			if !strings.Contains(string(canon), w) {
				t.Errorf("%s: canonical form lacks %q:\n%s", c.name, w, canon)
			}
		}
		for _, w := range c.not {
			if strings.Contains(string(canon), w) {
				t.Errorf("%s: canonical form has %q:\n%s", c.name, w, canon)
			}
		}
	}
	hash := func(text string, sets ...string) string {
		cfg, err := Parse("m.toml", []byte(text), sets...)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := cfg.SHA256()
		return h
	}
	if a, b := hash(mode("zz-b"), "train.zz_shared=5", "zz_tab.x=2"), hash(mode("zz-b")+"[zz-b]\nshared = 5\n\n[zz-b.tab]\nx = 2\n"); a != b {
		t.Errorf("the two spellings hash differently: %s, %s", a, b)
	}
	if a, b := hash(mode("zz-a")), hash(mode("zz-b")); a == b {
		t.Errorf("two strategies hash the same")
	}
}

// TestReplaceKey checks that errors respell a moved key only where it
// stands as a whole key or the head of a longer path.
func TestReplaceKey(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"a.b = 1", "x = 1"},
		{"a.b.c = 1", "x.c = 1"},
		{"set a.b.", "set x."},
		{"za.b = 1", "za.b = 1"},
		{"a.b_c = 1", "a.b_c = 1"},
		{"a.b-c and a.b", "a.b-c and x"},
		{"(a.b, a.b)", "(x, x)"},
	} {
		if got := replaceKey(c.text, "a.b", "x"); got != c.want {
			t.Errorf("replaceKey(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}
