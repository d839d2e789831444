package config

import (
	"strings"

	"strata/core/graph"
)

// linkIdentity adds to id, the identity keys of raw (a config's decoded
// canonical text), what a link-prediction model's predictions depend on
// beyond a node model's: train.task, data.edge_split resolved (its seed
// spelled out: the message-passing graph is the split's training graph),
// link.decoder (its bytes count, see IdentityText), link.embedding
// resolved (0 = model.hidden) and link.decoder_options. A node model's
// identity is left as it was.
func linkIdentity(raw map[string]any, id map[string]any) error {
	section := func(name string) map[string]any { m, _ := raw[name].(map[string]any); return m }
	tr, data, link, model := section("train"), section("data"), section("link"), section("model")
	if task, _ := tr["task"].(string); task != TaskLink {
		return nil
	}
	def := Default()
	name, _ := data["edge_split"].(string)
	if name == "" {
		name = "random-85-5-10"
	}
	spec, err := graph.ParseEdgeSplit(name)
	if err != nil {
		return err
	}
	if !spec.SeedSet {
		spec.Seed = uint64(def.Train.Seed)
		if s, ok := tr["seed"].(int64); ok {
			spec.Seed = uint64(s)
		}
	}
	emb, _ := link["embedding"].(int64)
	if emb == 0 {
		emb = int64(def.Model.Hidden)
		if h, ok := model["hidden"].(int64); ok {
			emb = h
		}
	}
	dec, _ := link["decoder"].(string)
	if dec == "" {
		dec = def.Link.Decoder
	}
	id["train.task"], id["data.edge_split"], id["link.embedding"], id[linkDecoderKey] = TaskLink, spec.String(), emb, dec
	opts, _ := link["decoder_options"].(map[string]any)
	for k, v := range opts {
		id["link.decoder_options."+k] = v
	}
	return nil
}

// linkDecoderKey is the identity key of a link model's decoder: its
// bytes' SHA-256 in a model's identity (the caller adds it), its name or
// path where a config is rebuilt from a model (FromIdentity, PathsOf).
const linkDecoderKey = "link.decoder"

// isLinkDecoderFile reports whether key = v names a decoder module file.
func isLinkDecoderFile(key string, v any) bool {
	s, ok := v.(string)
	return ok && key == linkDecoderKey && strings.HasSuffix(s, ".wasm")
}
