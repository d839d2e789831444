package train

import (
	"context"
	"fmt"

	"strata/core/config"
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
	Model   *ModelMeta
	Classes []int32   // the predicted class of each node
	Logits  []float64 // nodes × Width, or nil when the strategy cannot give them
	Width   int       // the number of classes
	// Hidden is the last hidden layer (the embeddings), nodes ×
	// HiddenWidth; nil when the strategy cannot give it or the model has
	// one layer.
	Hidden      []float64
	HiddenWidth int
}

// predict is Predict with the config's modules provisioned.
func predict(ctx context.Context, cfg *config.Config, modelPath string, host modhost.Host) (*Predictions, error) {
	meta, arrays, err := ReadModel(modelPath)
	if err != nil {
		return nil, err
	}
	cfgSHA, err := cfg.SHA256()
	if err != nil {
		return nil, err
	}
	if meta.ConfigSHA256 != cfgSHA {
		return nil, fmt.Errorf("%s was trained with config %s, this config hashes to %s: predict with the config the model was trained with (the model file holds its canonical text)", modelPath, meta.ConfigSHA256, cfgSHA)
	}
	strat, err := StrategyFor(cfg)
	if err != nil {
		return nil, err
	}
	env, model, closeEnv, err := NewEnv(ctx, cfg, host)
	if err != nil {
		return nil, err
	}
	defer closeEnv()
	if meta.ModuleSHA256 != model.SHA256 {
		return nil, fmt.Errorf("%s was trained with model module %s (sha256 %s), the config's module %s has sha256 %s: predict with the module the model was trained with",
			modelPath, meta.Model, meta.ModuleSHA256, model.Name, model.SHA256)
	}
	if meta.Features != env.Dim || meta.Classes != env.Dataset.NumClasses {
		return nil, fmt.Errorf("%s was trained on %d features and %d classes, the dataset has %d and %d", modelPath, meta.Features, meta.Classes, env.Dim, env.Dataset.NumClasses)
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
	p := &Predictions{Model: meta, Classes: make([]int32, env.Dataset.NumNodes), Width: env.Dataset.NumClasses}
	if err := st.Predict(ctx, p.Classes); err != nil {
		return nil, err
	}
	if op, ok := st.(OutputPredictor); ok {
		if p.Logits, p.Hidden, p.HiddenWidth, err = op.PredictOutputs(ctx); err != nil {
			return nil, err
		}
	}
	return p, nil
}
