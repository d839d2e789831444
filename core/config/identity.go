package config

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// The model's identity: the keys that determine what a saved model
// computes — its whole [model] section (architecture, module, options)
// and what the inputs go through before the first layer — as opposed to
// the schedule (epochs, learning rate, seed), the outputs and the data
// path, which a model predicting on another graph need not repeat.
var (
	identitySections = []string{"model"}
	identityKeys     = []string{"data.feature_norm", "data.feature_dtype", "data.symmetrize", "data.synth_features", "train.dtype"}
)

// ModuleFile is the identity value of a model.options string that names
// a module file: the file counts by its bytes (the model's identity holds
// their SHA-256 under the same key), not by its path.
const ModuleFile = "(a module file)"

// identityOf returns the identity keys of a config's canonical text with
// their values as decoded, by dotted key.
func identityOf(canonical string) (map[string]any, error) {
	var raw map[string]any
	if _, err := toml.Decode(canonical, &raw); err != nil {
		return nil, err
	}
	out := map[string]any{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			key := prefix + k
			if sub, ok := v.(map[string]any); ok {
				walk(key+".", sub)
				continue
			}
			if slices.Contains(identityKeys, key) || slices.ContainsFunc(identitySections, func(s string) bool { return strings.HasPrefix(key, s+".") }) {
				out[key] = v
			}
		}
	}
	walk("", raw)
	if err := linkIdentity(raw, out); err != nil {
		return nil, err
	}
	return out, nil
}

// IdentityText returns the identity keys of a config's canonical text
// with their values as TOML writes them, ready to compare: model.name
// and model.module are left out (the module counts by its SHA-256, which
// the caller adds), and so is a link model's link.decoder, a module file an option names becomes ModuleFile,
// and data.feature_dtype is spelled out when left at its default.
func IdentityText(canonical string) (map[string]string, error) {
	id, err := identityOf(canonical)
	if err != nil {
		return nil, err
	}
	out := map[string]string{"data.feature_dtype": `"float32"`}
	for k, v := range id {
		switch s, isString := v.(string); {
		case k == "model.name" || k == "model.module" || k == linkDecoderKey:
		case isString && strings.HasPrefix(k, "model.options.") && strings.HasSuffix(s, ".wasm"):
			out[k] = ModuleFile
		default:
			out[k] = valueText(v)
		}
	}
	return out, nil
}

// valueText shows a value as a config writes it.
func valueText(v any) string {
	if s, isString := v.(string); isString {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}

// FromIdentity builds the config that uses a saved model: the model
// identity of its canonical config text, with the dotted keys of set
// replacing theirs (the dataset, the paths the model was built from),
// then overrides (as --set gives them). The rest are the defaults: a
// model predicts without repeating its training schedule. Relative paths
// are relative to the working directory, as on the command line. name
// labels errors.
func FromIdentity(name, canonical string, set map[string]string, overrides ...string) (*Config, error) {
	id, err := identityOf(canonical)
	if err != nil {
		return nil, fmt.Errorf("%s: the model's config: %w", name, err)
	}
	tree := map[string]any{}
	put := func(key string, v any) {
		parts := strings.Split(key, ".")
		m := tree
		for _, p := range parts[:len(parts)-1] {
			sub, ok := m[p].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[p] = sub
			}
			m = sub
		}
		m[parts[len(parts)-1]] = v
	}
	for key, v := range id {
		put(key, v)
	}
	for key, v := range set {
		put(key, v)
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(tree); err != nil {
		return nil, fmt.Errorf("%s: the model's config: %w", name, err)
	}
	cfg, err := Parse(name, buf.Bytes(), overrides...)
	if err != nil {
		return nil, err
	}
	cfg.Path = "" // paths relative to the working directory
	return cfg, nil
}

// PathsOf returns the files a config's canonical text builds a model
// from, by key, as written (data.dataset, model.module, every
// model.options string naming a .wasm file and a link.decoder that is
// one), and its data.split.
func PathsOf(canonical string) (paths map[string]string, split string, err error) {
	var raw struct {
		Data struct {
			Dataset string `toml:"dataset"`
			Split   string `toml:"split"`
		} `toml:"data"`
		Model struct {
			Module  string         `toml:"module"`
			Options map[string]any `toml:"options"`
		} `toml:"model"`
		Link struct {
			Decoder string `toml:"decoder"`
		} `toml:"link"`
	}
	if _, err := toml.Decode(canonical, &raw); err != nil {
		return nil, "", err
	}
	paths = map[string]string{"data.dataset": raw.Data.Dataset}
	if raw.Model.Module != "" {
		paths["model.module"] = raw.Model.Module
	}
	for k, v := range raw.Model.Options {
		if s, ok := v.(string); ok && strings.HasSuffix(s, ".wasm") {
			paths["model.options."+k] = s
		}
	}
	if isLinkDecoderFile(linkDecoderKey, raw.Link.Decoder) {
		paths[linkDecoderKey] = raw.Link.Decoder
	}
	return paths, raw.Data.Split, nil
}
