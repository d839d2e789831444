package all

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"strata/core/config"
)

// TestConfigsRoundTrip loads every shipped config with every built-in
// plugin linked (their sections, such as a strategy's, are theirs),
// re-encodes it and parses it back.
func TestConfigsRoundTrip(t *testing.T) {
	files, err := filepath.Glob("../../configs/*.toml")
	if err != nil || len(files) < 7 {
		t.Fatalf("configs: %v %v", files, err)
	}
	hashes := map[string]string{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			c, err := config.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := os.ReadFile(f)
			if !strings.HasPrefix(string(raw), "# ") {
				t.Error("no comment header")
			}
			b, err := c.TOML()
			if err != nil {
				t.Fatal(err)
			}
			c2, err := config.Parse(f, b)
			if err != nil {
				t.Fatalf("re-parse: %v\n%s", err, b)
			}
			if b2, _ := c2.TOML(); string(b) != string(b2) || c2.Strategy.ID != c.Strategy.ID {
				t.Fatalf("round trip differs:\n%+v\n%+v", c, c2)
			}
			h1, _ := c.SHA256()
			h2, _ := c2.SHA256()
			if h1 != h2 {
				t.Fatal("hash changed in the round trip")
			}
			if other, dup := hashes[h1]; dup {
				t.Fatalf("same hash as %s", other)
			}
			hashes[h1] = f
			if spec := c.DatasetSpec(); !strings.HasPrefix(c.Data.Dataset, "../") && spec != c.Data.Dataset {
				t.Errorf("spec %q resolved to %q", c.Data.Dataset, spec)
			}
		})
	}
}

// TestStrategySectionErrors: a strategy's section is a top-level key like
// the built-in ones: a misspelt one is suggested, an unknown one lists
// the sections with the strategies', and a section that is not a table is
// refused at its line.
func TestStrategySectionErrors(t *testing.T) {
	base := "[data]\ndataset = \"embedded:cora\"\n"
	cases := []struct {
		text string
		sets []string
		want string
	}{
		{base, []string{"chunkd.chunks=4"}, `unknown key "chunkd" (did you mean "chunked"?)`},
		{base, []string{"nosuch.x=4"}, `the keys of the top level are "data"`},
		{base, []string{"nosuch.x=4"}, `"chunked"`},
		{"chunked = 5\n" + base, nil, `c.toml:1: chunked: expected table, got integer 5`},
		{base + "[train]\nmode = \"chunked\"\n[[chunked]]\nchunks = 4\n", nil, "chunked: expected table, got array of tables"},
		{base + "[train]\nmode = \"chunked\"\n[chunked]\nchunks = 3\ndedup = \"p2pp\"\n", nil, `chunked.dedup = "p2pp": allowed values are`},
		{base + "[cache]\nname = \"s3fifo\"\nsmall_ratio = 0\n", nil, `cache.small_ratio = 0: must be in (0, 1)`},
	}
	for _, c := range cases {
		_, err := config.Parse("c.toml", []byte(c.text), c.sets...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q %v: error %v, want %q", c.text, c.sets, err, c.want)
		}
	}
}
