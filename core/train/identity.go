package train

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"strata/core/config"
)

// Identity is what determines a saved model, key by key (values as TOML
// writes them): the [model] section (config.IdentityText), the layer
// module and every aggregator module by SHA-256 (not by name or path),
// the feature width, storage and normalisation (feature_norm as "auto"
// resolved on the training data), symmetrize, synth_features,
// train.dtype and the class count; for a link model (train.task =
// "link") also train.task, data.edge_split (seed resolved), link.embedding
// (resolved), link.decoder_options and the decoder module's SHA-256
// (link.decoder). The schedule, the strategy, a node split and the data
// path are not part of it. docs/checkpoints.md lists the
// keys. A key added later must be left out at its default value (as
// the config hash leaves out hash:"omitempty" keys), or the files
// written before it would no longer match their model_sha256.
type Identity map[string]string

// The keys of an Identity that come from the data and the modules rather
// than from the config's own keys; an aggregator module's key is
// model.options.<k> (a module file) or model.aggregators.<name>.
const (
	idFeatures = "data.features"
	idClasses  = "data.classes"
	idModule   = "model.module_sha256"
	idNorm     = "data.feature_norm"
	sumPrefix  = "sha256 "
)

// SHA256 is the hex SHA-256 of the identity's "key = value" lines in key
// order: a model file's model_sha256.
func (id Identity) SHA256() string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(id)) {
		fmt.Fprintf(h, "%s = %s\n", k, id[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// newIdentity is the identity of a config's canonical text with norm
// (what data.feature_norm resolved to, "" = as written), the widths and
// the module hashes (modules by identity key; nil leaves a module file an
// option names as config.ModuleFile).
func newIdentity(canonical, norm string, features, classes int, moduleSHA string, modules map[string]string) (Identity, error) {
	text, err := config.IdentityText(canonical)
	if err != nil {
		return nil, err
	}
	id := Identity(text)
	if norm != "" {
		id[idNorm] = strconv.Quote(norm)
	}
	id[idFeatures], id[idClasses], id[idModule] = strconv.Itoa(features), strconv.Itoa(classes), moduleSHA
	for k, sum := range modules {
		id[k] = sumPrefix + sum
	}
	return id, nil
}

// Identity is the model's identity from its file's fields. A file
// written before model_sha256 has no aggregator hashes or resolved
// normalisation: its identity holds what its config says.
func (m *ModelMeta) Identity() (Identity, error) {
	return newIdentity(m.Config, m.FeatureNorm, m.Features, m.Classes, m.ModuleSHA256, m.Modules)
}

// seal sets ModelSHA256 from the file's fields.
func (m *ModelMeta) seal() error {
	id, err := m.Identity()
	if err != nil {
		return err
	}
	m.ModelSHA256 = id.SHA256()
	return nil
}

// recordedPaths are the files cfg builds a model from, by key, as a run
// resolves them (ModelMeta.Paths).
func recordedPaths(cfg *config.Config) map[string]string {
	spec := cfg.DatasetSpec()
	if cfg.Data.Split != "" {
		spec = strings.TrimSuffix(spec, "@"+cfg.Data.Split)
	}
	paths := map[string]string{"data.dataset": spec}
	if cfg.Model.Module != "" {
		paths["model.module"] = cfg.ModulePath()
	}
	for k, v := range cfg.Model.Options {
		if s, ok := v.(string); ok && strings.HasSuffix(s, ".wasm") {
			paths["model.options."+k] = cfg.OptionPath(k, s)
		}
	}
	if cfg.Train.Task == config.TaskLink && strings.HasSuffix(cfg.Link.Decoder, ".wasm") {
		paths[idDecoder] = cfg.DecoderPath()
	}
	return paths
}

// checkSHA verifies a model file's model_sha256 against the identity its
// fields give (files without one, from an older strata, pass).
func (m *ModelMeta) checkSHA(path string) error {
	if m.ModelSHA256 == "" {
		return nil
	}
	id, err := m.Identity()
	if err != nil {
		return fmt.Errorf("%s: the model's config: %w", path, err)
	}
	if got := id.SHA256(); got != m.ModelSHA256 {
		return fmt.Errorf("%s: model_sha256 %s does not match the model's identity (%s): the file was edited after training; train the model again or use the file the run wrote", path, m.ModelSHA256, got)
	}
	return nil
}

// IdentityError is a model that does not fit the config or the data it
// was asked to predict with: Diffs name each differing key, the model's
// value first ("model.hidden: model 64, config 128").
type IdentityError struct {
	Model string // the model file
	Diffs []string
}

func (e *IdentityError) Error() string {
	return fmt.Sprintf("%s was trained with another model than predict was given: %s; predict without -c and without --set of these keys (the model file holds its config), on a graph of the model's feature width and at most its classes, with the module files it was trained with",
		e.Model, strings.Join(e.Diffs, "; "))
}

// diffIdentity compares a model's identity with the one predict has, over
// the keys of both; names are the model's and the config's layer module
// names, shown with the module's hash. nil when they agree.
func diffIdentity(path string, model, have Identity, names [2]string) error {
	var diffs []string
	union := maps.Clone(model)
	maps.Copy(union, have)
	for _, k := range slices.Sorted(maps.Keys(union)) {
		mv, okm := model[k]
		hv, okh := have[k]
		if okm && okh && mv == hv {
			continue
		}
		diffs = append(diffs, diffLine(k, orUnset(mv, okm), orUnset(hv, okh), names))
	}
	if len(diffs) == 0 {
		return nil
	}
	return &IdentityError{Model: path, Diffs: diffs}
}

// diffLine words one differing key.
func diffLine(k, mv, hv string, names [2]string) string {
	switch {
	case k == idFeatures || k == idClasses:
		return fmt.Sprintf("%s: model %s, dataset %s", k, mv, hv)
	case k == idModule:
		return fmt.Sprintf("%s: model %s (sha256 %.12s), config %s (sha256 %.12s): the layer module's bytes differ from the ones it was trained with", k, names[0], mv, names[1], hv)
	case k == idDecoder && strings.HasPrefix(mv, sumPrefix) && strings.HasPrefix(hv, sumPrefix):
		return fmt.Sprintf("%s: model %s, config %s: the decoder module's bytes differ from the ones it was trained with", k, shortSum(mv), shortSum(hv))
	case strings.HasPrefix(mv, sumPrefix) && strings.HasPrefix(hv, sumPrefix):
		return fmt.Sprintf("%s: model %s, config %s: the aggregator module's bytes differ from the ones it was trained with", k, shortSum(mv), shortSum(hv))
	}
	return fmt.Sprintf("%s: model %s, config %s", k, shortSum(mv), shortSum(hv))
}

// shortSum shortens an identity's module hash to its first 12 digits.
func shortSum(v string) string {
	if strings.HasPrefix(v, sumPrefix) && len(v) > len(sumPrefix)+12 {
		return v[:len(sumPrefix)+12]
	}
	return v
}

// orUnset is v, or "(not set)" when the identity lacks the key.
func orUnset(v string, ok bool) string {
	if !ok {
		return "(not set)"
	}
	return v
}

// PredictConfig is the config that predicts with the model when no
// config file is given: the model's identity keys on the defaults, the
// files it was built from as the run resolved them (Paths; the config
// text's values in older files), relative to the working directory like
// any command-line path, and its training graph with its split, unless
// overrides (key=value, as --set) name data.dataset: then that graph is
// predicted with its own split. A recorded file that is missing is an
// error naming its key and the fix.
func (m *ModelMeta) PredictConfig(path string, overrides ...string) (*config.Config, error) {
	overridden := func(key string) bool {
		return slices.ContainsFunc(overrides, func(o string) bool { return strings.HasPrefix(strings.TrimSpace(o), key+"=") })
	}
	set, split, err := config.PathsOf(m.Config)
	if err != nil {
		return nil, fmt.Errorf("%s: the model's config: %w", path, err)
	}
	maps.Copy(set, m.Paths)
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if !overridden(k) {
			if err := checkRecorded(path, k, set[k]); err != nil {
				return nil, err
			}
		}
	}
	if split != "" && !overridden("data.dataset") {
		set["data.split"] = split
	}
	return config.FromIdentity(path, m.Config, set, overrides...)
}

// checkRecorded refuses a file a model file records (key = p) that is
// not there, naming the key and the fix. Dataset specs that are not
// paths (embedded:, rmat-) pass.
func checkRecorded(model, key, p string) error {
	if p == "" || strings.Contains(p, ":") || strings.HasPrefix(p, "rmat-") {
		return nil
	}
	_, err := os.Stat(p)
	if err == nil {
		return nil
	}
	fix := fmt.Sprintf("give --set %s=PATH (a module file of the same bytes)", key)
	if key == "data.dataset" {
		fix = "name the graph with -i DATASET"
	}
	return &config.Error{File: model, Key: key, Msg: fmt.Sprintf("%s = %q, recorded in the model file (relative to the directory the training run ran in): %v; run predict in that directory, or %s",
		key, p, errors.Unwrap(err), fix)}
}
