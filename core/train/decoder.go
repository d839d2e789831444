package train

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"strata/core/config"
	"strata/core/ir"
	"strata/core/modhost"
	"strata/models"
)

// Decoder is a link task's decoder graph and where it came from.
type Decoder struct {
	Name   string    // the module's name ("dot", or a file's base name)
	SHA256 string    // of the module bytes
	Graph  *ir.Graph // input "x" [N, emb], graph "adj" (the pairs), output [pairs, 1]
}

// BuildDecoder loads link.decoder (a registered decoder.<name> or a .wasm
// file) and records it for embeddings of width emb with
// link.decoder_options, every one of which the module must read.
func BuildDecoder(ctx context.Context, cfg *config.Config, host modhost.Host, emb int) (*Decoder, error) {
	name, code, err := decoderBytes(cfg)
	if err != nil {
		return nil, err
	}
	opts, err := decoderOptions(cfg)
	if err != nil {
		return nil, err
	}
	dec, release, err := host.LoadDecoder(ctx, name, code)
	if err != nil {
		return nil, cfg.KeyError(fmt.Sprintf("link.decoder = %q: %v", cfg.Link.Decoder, err), "link", "decoder")
	}
	defer release()
	lc := opts.Clone()
	lc.SetInt("in_dim", int64(emb))
	spec, err := dec.DecoderSpec(ctx, lc)
	if err != nil {
		return nil, cfg.KeyError(fmt.Sprintf("link.decoder = %q: %v", cfg.Link.Decoder, err), "link", "decoder")
	}
	for _, k := range opts.Keys() {
		if !slices.Contains(spec.KeysRead, k) {
			read := slices.DeleteFunc(slices.Clone(spec.KeysRead), func(r string) bool { return r == "in_dim" })
			return nil, cfg.KeyError(fmt.Sprintf("link.decoder_options.%s: the %q decoder does not use option %q (it reads: %s); remove it or fix its spelling", k, name, k, strings.Join(read, ", ")), "link", "decoder_options", k)
		}
	}
	return &Decoder{Name: name, SHA256: dec.SHA256(), Graph: spec.Graph}, nil
}

// decoderBytes returns the module link.decoder names: a .wasm file, or a
// registered decoder.* module.
func decoderBytes(cfg *config.Config) (string, []byte, error) {
	if strings.HasSuffix(cfg.Link.Decoder, ".wasm") {
		name, b, err := models.Resolve(cfg.DecoderPath(), readModule)
		if err != nil {
			return "", nil, cfg.KeyError("link.decoder: "+err.Error(), "link", "decoder")
		}
		return name, b, nil
	}
	b, err := modhost.Lookup("decoder." + cfg.Link.Decoder)
	if err != nil {
		return "", nil, cfg.KeyError(fmt.Sprintf("link.decoder = %q: %v", cfg.Link.Decoder, err), "link", "decoder")
	}
	return cfg.Link.Decoder, b, nil
}

// decoderOptions converts link.decoder_options to the decoder's config.
func decoderOptions(cfg *config.Config) (modhost.LayerConfig, error) {
	var c modhost.LayerConfig
	for _, k := range slices.Sorted(maps.Keys(cfg.Link.DecoderOptions)) {
		if k == "in_dim" {
			return c, cfg.KeyError("link.decoder_options.in_dim is set by strata: it is the embedding width, link.embedding", "link", "decoder_options", k)
		}
		if v := cfg.Link.DecoderOptions[k]; !setOption(&c, k, v) {
			return c, cfg.KeyError(fmt.Sprintf("link.decoder_options.%s: expected integer, float, boolean or string, got %T", k, v), "link", "decoder_options", k)
		}
	}
	return c, nil
}
