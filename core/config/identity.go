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
	identityKeys     = []string{"data.feature_norm", "data.symmetrize", "data.synth_features", "train.dtype"}
)

// identityOf returns the identity keys of a config's canonical text with
// their values (TOML-encoded), by dotted key.
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
	return out, nil
}

// IdentityDiff compares the model identity of two configs' canonical
// texts (a saved model's and the one it is used with) and returns the
// keys that differ, sorted, as "key: model V, config W".
func IdentityDiff(model, cfg string) ([]string, error) {
	a, err := identityOf(model)
	if err != nil {
		return nil, fmt.Errorf("the model's config: %w", err)
	}
	b, err := identityOf(cfg)
	if err != nil {
		return nil, err
	}
	var diff []string
	for _, k := range unionKeys(a, b) {
		va, oka := a[k]
		vb, okb := b[k]
		if oka && okb && fmt.Sprint(va) == fmt.Sprint(vb) {
			continue
		}
		diff = append(diff, fmt.Sprintf("%s: model %s, config %s", k, valueText(va, oka), valueText(vb, okb)))
	}
	return diff, nil
}

// unionKeys returns the keys of a and b, sorted.
func unionKeys(a, b map[string]any) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// valueText shows a value as a config writes it, or "(not set)".
func valueText(v any, ok bool) string {
	if !ok {
		return "(not set)"
	}
	if s, isString := v.(string); isString {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}

// FromIdentity builds the config that uses a saved model: the model
// identity of its canonical config text, on dataset, then overrides (as
// --set gives them). The rest are the defaults: a model predicts without
// repeating its training schedule. name labels errors.
func FromIdentity(name, canonical, dataset string, overrides ...string) (*Config, error) {
	id, err := identityOf(canonical)
	if err != nil {
		return nil, fmt.Errorf("%s: the model's config: %w", name, err)
	}
	tree := map[string]any{"data": map[string]any{"dataset": dataset}}
	for key, v := range id {
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
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(tree); err != nil {
		return nil, fmt.Errorf("%s: the model's config: %w", name, err)
	}
	return Parse(name, buf.Bytes(), overrides...)
}

// DatasetOf returns data.dataset of a config's canonical text.
func DatasetOf(canonical string) (string, error) {
	var raw struct {
		Data struct {
			Dataset string `toml:"dataset"`
		} `toml:"data"`
	}
	if _, err := toml.Decode(canonical, &raw); err != nil {
		return "", err
	}
	return raw.Data.Dataset, nil
}
