package train

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"strata/core/config"
	"strata/core/graph"
	"strata/core/modhost"
)

// OutputPredictor is a Stepper that also returns, with dropout off, the
// model's output (the logits of every node, row-major nodes × classes)
// and its last hidden layer (the input of the last layer, nodes × width;
// nil for a one-layer model).
type OutputPredictor interface {
	PredictOutputs(ctx context.Context) (logits, hidden []float64, width int, err error)
}

// Predictions are a saved model's predictions for every node.
type Predictions struct {
	Model *ModelMeta
	// Identity is the model's (its SHA256 is the file's model_sha256).
	Identity Identity
	Classes  []int32   // the predicted class of each node
	Logits   []float64 // nodes × Width, or nil when the strategy cannot give them
	Width    int       // the number of classes
	// Hidden is the last hidden layer (the embeddings), nodes ×
	// HiddenWidth; nil when the strategy cannot give it or the model has
	// one layer.
	Hidden      []float64
	HiddenWidth int
	// Labelled counts the graph's labelled nodes; Accuracy holds, when
	// there are some, "accuracy" over all of them and "train_acc",
	// "valid_acc", "test_acc" over the splits the graph has.
	Labelled int
	Accuracy map[string]float64
	// Targets names the model's float targets ("multi-label",
	// "regression"; "" for classes): Classes then mean nothing, and the
	// predictions are Logits (0/1 per label at logit >= 0, or the
	// values); Accuracy then holds the element-wise accuracy or, as
	// "r2", "train_r2" ..., R².
	Targets string
	// Link holds a link-prediction model's predictions (train.task =
	// "link"): Logits are then its node embeddings (nodes × Width), and
	// Classes, Hidden and Accuracy are empty.
	Link *LinkPredictions
}

// predict is Predict with the config's modules provisioned. The config
// must agree with the model on every key of its Identity: those the
// config and the layer module give are checked before the data is
// loaded, the widths and the aggregator modules after. pairs (nil: none)
// are scored by a link model's decoder.
func predict(ctx context.Context, cfg *config.Config, modelPath string, host modhost.Host, pairs *graph.PairFile) (*Predictions, error) {
	meta, arrays, err := ReadModel(modelPath)
	if err != nil {
		return nil, err
	}
	if cfg.Data.FeatureNorm == "auto" && meta.FeatureNorm != "" {
		cfg.Data.FeatureNorm = meta.FeatureNorm // what auto did to the training data
	}
	if err := checkIdentity(modelPath, meta, cfg); err != nil {
		return nil, err
	}
	link := cfg.Train.Task == config.TaskLink
	if pairs != nil && !link {
		return nil, fmt.Errorf("%s: pair scores come from a link-prediction model's decoder, and %s predicts nodes (it was trained with train.task = %q); score pairs with a model trained with train.task = \"link\"", pairs.Path, modelPath, cfg.Train.Task)
	}
	if meta.Targets == regressionTargets { // the model's task: y is read as values
		cfg.Train.Task = config.TaskRegression
	}
	strat, err := StrategyFor(cfg)
	if err != nil {
		return nil, err
	}
	env, model, closeEnv, err := NewEnv(withClasses(ctx, meta.Classes), cfg, host)
	if err != nil {
		return nil, err
	}
	defer closeEnv()
	if err := checkBuilt(modelPath, meta, cfg, env, model); err != nil {
		return nil, err
	}
	if !link { // a link model predicts no labels: the graph's do not matter
		if err := checkPredictTargets(cfg, modelPath, meta, env.Dataset); err != nil {
			return nil, err
		}
	}
	st, err := strat.NewStepper(ctx, env)
	if err != nil {
		return nil, err
	}
	defer st.Release()
	if err := st.Params().Restore(prefixed(arrays, "param/")); err != nil {
		return nil, fmt.Errorf("%s: %w", modelPath, err)
	}
	if err := st.Params().RestoreState(prefixed(arrays, "state/")); err != nil {
		return nil, fmt.Errorf("%s: %w", modelPath, err)
	}
	p := &Predictions{Model: meta, Width: env.Dataset.NumClasses, Targets: meta.Targets}
	if p.Identity, err = meta.Identity(); err != nil {
		return nil, err
	}
	if link {
		if err := predictLink(ctx, cfg, env, st, pairs, p); err != nil {
			return nil, err
		}
		return p, nil
	}
	p.Classes = make([]int32, env.Dataset.NumNodes)
	if err := st.Predict(ctx, p.Classes); err != nil {
		return nil, err
	}
	op, ok := st.(OutputPredictor)
	if !ok && p.Targets != "" {
		return nil, cfg.KeyError(fmt.Sprintf("%s predicts %s targets, its outputs, and train.mode = %q gives none; predict with train.mode = \"full\" (--set train.mode=full)", modelPath, p.Targets, cfg.Train.Mode), "train", "mode")
	}
	if ok {
		if p.Logits, p.Hidden, p.HiddenWidth, err = op.PredictOutputs(ctx); err != nil {
			return nil, err
		}
	}
	if p.Targets != "" {
		p.Labelled, p.Accuracy = targetPredictionScores(env.Dataset, p.Logits)
	} else {
		p.Labelled, p.Accuracy = predictionAccuracy(env.Dataset, p.Classes)
	}
	return p, nil
}

// checkIdentity refuses, before the data is loaded, a config that does
// not describe the saved model: its identity keys (the [model] section,
// the input transforms, the layer module's SHA-256, a link model's
// decoder and split) must be the model's,
// whatever the schedule or the dataset.
func checkIdentity(modelPath string, meta *ModelMeta, cfg *config.Config) error {
	// A link model's decoder counts by its bytes, as the layer module.
	wantDec, haveDec := map[string]string{}, map[string]string{}
	if sum, ok := meta.Modules[idDecoder]; ok {
		wantDec[idDecoder] = sum
	}
	if err := addDecoderSum(cfg, haveDec); err != nil {
		return err
	}
	want, err := newIdentity(meta.Config, meta.FeatureNorm, 0, 0, meta.ModuleSHA256, wantDec)
	if err != nil {
		return fmt.Errorf("%s: the model's config: %w", modelPath, err)
	}
	name, code, err := moduleBytes(cfg)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(code)
	have, err := cfgIdentity(cfg, 0, 0, hex.EncodeToString(sum[:]), haveDec)
	if err != nil {
		return err
	}
	for _, id := range []Identity{want, have} {
		delete(id, idFeatures)
		delete(id, idClasses)
	}
	return diffIdentity(modelPath, want, have, [2]string{meta.Model, name})
}

// checkBuilt refuses a dataset or modules that do not fit the saved
// model: the feature width, the class count (a graph with fewer is
// predicted with the model's) and, where the file records them (model
// files with model_sha256), the aggregator modules' SHA-256.
func checkBuilt(modelPath string, meta *ModelMeta, cfg *config.Config, env *Env, model *Model) error {
	want, err := meta.Identity()
	if err != nil {
		return fmt.Errorf("%s: the model's config: %w", modelPath, err)
	}
	var modules map[string]string
	if meta.ModelSHA256 != "" {
		modules = model.Modules
	}
	have, err := cfgIdentity(cfg, env.Dim, env.Dataset.NumClasses, model.SHA256, modules)
	if err != nil {
		return err
	}
	return diffIdentity(modelPath, want, have, [2]string{meta.Model, model.Name})
}

// cfgIdentity is newIdentity of cfg's canonical text.
func cfgIdentity(cfg *config.Config, features, classes int, moduleSHA string, modules map[string]string) (Identity, error) {
	canon, err := cfg.Canonical()
	if err != nil {
		return nil, err
	}
	return newIdentity(string(canon), "", features, classes, moduleSHA, modules)
}

// classesKey carries the model's class count into NewEnv (withClasses).
type classesKey struct{}

// withClasses tells NewEnv that the model predicts n classes: a dataset
// with fewer (or no labelled node) is predicted with n.
func withClasses(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, classesKey{}, n)
}

// predictionAccuracy scores pred against ds's labels: the labelled nodes'
// count and the accuracies over all of them and over each split ds has
// (nil without a labelled node).
func predictionAccuracy(ds *graph.Dataset, pred []int32) (int, map[string]float64) {
	if ds.Labels == nil {
		return 0, nil
	}
	count := func(v int32, n, right *int) {
		if l := ds.Labels[v]; l >= 0 {
			*n++
			if pred[v] == l {
				*right++
			}
		}
	}
	score := func(nodes []int32) (int, float64) {
		n, right := 0, 0
		for _, v := range nodes {
			count(v, &n, &right)
		}
		return n, float64(right) / float64(max(n, 1))
	}
	labelled, right := 0, 0
	for v := range int32(len(pred)) { // every node, without a list of them
		count(v, &labelled, &right)
	}
	acc := float64(right) / float64(max(labelled, 1))
	if labelled == 0 {
		return 0, nil
	}
	out := map[string]float64{"accuracy": acc}
	for name, nodes := range map[string][]int32{"train_acc": ds.Train, "valid_acc": ds.Valid, "test_acc": ds.Test} {
		if n, a := score(nodes); n > 0 {
			out[name] = a
		}
	}
	return labelled, out
}
