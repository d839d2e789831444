package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"reflect"

	"github.com/BurntSushi/toml"
)

// TOML returns the resolved config, every default filled in and plugin
// sections with all their options, as TOML with sorted keys. Parsing it
// gives back an equal config.
func (c *Config) TOML() ([]byte, error) { return c.encode(false) }

// Canonical is TOML without the sections that do not change the results
// ([output]): the text that SHA256 hashes.
func (c *Config) Canonical() ([]byte, error) { return c.encode(true) }

// SHA256 returns the hex SHA-256 of Canonical, the config_sha256 of a
// run's results: two configs that resolve to the same experiment (after
// defaults, whatever the key order, comments or file name) hash the same.
func (c *Config) SHA256() (string, error) {
	b, err := c.Canonical()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

func (c *Config) encode(hashOnly bool) ([]byte, error) {
	var buf bytes.Buffer
	m := structMap(reflect.ValueOf(c).Elem(), fieldsOf(configType), hashOnly)
	if name, sm := c.strategyMap(hashOnly); sm != nil {
		m[name] = sm
	}
	if hashOnly {
		c.placeMovedKeys(m)
	}
	if err := toml.NewEncoder(&buf).Encode(m); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// defaulter is implemented by a section that knows its default: left at
// it, a section added later (hash:"omitempty") is left out of the hash
// like a zero key, so old configs keep their hash.
type defaulter interface{ IsDefault() bool }

func isDefault(v reflect.Value) bool {
	d, ok := v.Interface().(defaulter)
	return ok && d.IsDefault()
}

// structMap turns a config struct into a generic TOML tree.
func structMap(rv reflect.Value, fields []field, hashOnly bool) map[string]any {
	m := make(map[string]any, len(fields))
	for _, f := range fields {
		if hashOnly && f.nohash {
			continue
		}
		fv := rv.FieldByIndex(f.index)
		if f.unsetOutOfRange(fv) {
			continue // left out: its zero is no value a config can write
		}
		if hashOnly && f.omitzero && (fv.IsZero() || isDefault(fv)) {
			continue // a key added later: old configs keep their hash
		}
		if hashOnly && f.omitdef && rv.Type() == configType && reflect.DeepEqual(fv.Interface(), reflect.ValueOf(Default()).Elem().FieldByIndex(f.index).Interface()) {
			continue // a section added later: old configs keep their hash
		}
		switch {
		case f.typ == pluginType:
			p := fv.Interface().(Plugin)
			if p.ID == "" {
				continue
			}
			pm := map[string]any{}
			if fields, target := moduleFields(p.Module); target.IsValid() {
				pm = structMap(target, fields, hashOnly)
			}
			pm["name"] = p.Name
			m[f.key] = pm
		case f.typ == anyMapType:
			if fv.Len() > 0 {
				m[f.key] = fv.Interface()
			}
		case f.typ.Kind() == reflect.Struct:
			m[f.key] = structMap(fv, fieldsOf(f.typ), hashOnly)
		case f.word != nil && fv.CanInt() && fv.Int() == f.word.value,
			f.word != nil && fv.CanFloat() && fv.Float() == float64(f.word.value):
			m[f.key] = f.word.text
		default:
			m[f.key] = fv.Interface()
		}
	}
	return m
}
