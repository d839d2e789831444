package config

import (
	"maps"
	"strings"
	"testing"
)

// TestLinkIdentity: a link config's identity holds its task, its split
// with the seed resolved, its embedding width resolved and its decoder
// options (the decoder counts by its bytes: the caller adds them), and
// a node config's identity has none of these keys, so node model files
// keep their model_sha256.
func TestLinkIdentity(t *testing.T) {
	base := "[data]\ndataset = \"embedded:cora\"\n[model]\nhidden = 24\n"
	cases := []struct {
		name string
		text string
		sets []string
		want map[string]string // the link keys; nil: none
	}{
		{"node", base, nil, nil},
		{"regression", base, []string{"train.task=regression"}, nil},
		{"link defaults", base, []string{"train.task=link"},
			map[string]string{"train.task": `"link"`, "data.edge_split": `"random-85-5-10-seed0"`, "link.embedding": "24"}},
		{"link seed and width", base, []string{"train.task=link", "train.seed=7", "link.embedding=8", "data.edge_split=random-80-10-10"},
			map[string]string{"train.task": `"link"`, "data.edge_split": `"random-80-10-10-seed7"`, "link.embedding": "8"}},
		{"link named seed", base, []string{"train.task=link", "train.seed=7", "data.edge_split=random-80-10-10-seed2", "link.decoder=hadamard-mlp", "link.decoder_options.hidden=5"},
			map[string]string{"train.task": `"link"`, "data.edge_split": `"random-80-10-10-seed2"`, "link.embedding": "24", "link.decoder_options.hidden": "5"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse("t.toml", []byte(c.text), c.sets...)
			if err != nil {
				t.Fatal(err)
			}
			canon, err := cfg.Canonical()
			if err != nil {
				t.Fatal(err)
			}
			id, err := IdentityText(string(canon))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for k, v := range id {
				if k == "train.task" || k == "data.edge_split" || strings.HasPrefix(k, "link.") {
					got[k] = v
				}
			}
			if want := c.want; !maps.Equal(got, want) && !(len(got) == 0 && want == nil) {
				t.Errorf("link keys of the identity %v, want %v", got, want)
			}
			if _, ok := id["link.decoder"]; ok {
				t.Errorf("link.decoder's name is in the identity (its bytes count, not its name)")
			}
			if c.want != nil { // a config rebuilt from the model's text splits and decodes the same
				re, err := FromIdentity("m", string(canon), map[string]string{"data.dataset": "embedded:cora"})
				if err != nil {
					t.Fatal(err)
				}
				rc, _ := re.Canonical()
				rid, err := IdentityText(string(rc))
				if err != nil || !maps.Equal(rid, id) {
					t.Errorf("rebuilt config's identity %v (%v), want %v", rid, err, id)
				}
				if re.Link.Decoder != cfg.Link.Decoder {
					t.Errorf("rebuilt link.decoder %q, want %q", re.Link.Decoder, cfg.Link.Decoder)
				}
			}
		})
	}
}
