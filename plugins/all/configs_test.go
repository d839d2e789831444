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
