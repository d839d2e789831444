package train

import (
	"context"

	"strata/core/config"
	"strata/core/graph"
	"strata/core/modhost"
)

// This file is where a run's plugin modules live their lifecycle: each
// entry point (Run, Check, Predict) provisions the config's modules once
// before anything uses them (config.Config.Provision; strategies and
// steppers receive them provisioned) and cleans them up when it returns,
// on every path: success, error, divergence, cancellation.

// Run trains the configured model full-graph and returns the result summary.
func Run(ctx context.Context, cfg *config.Config, opts Options) (*Result, error) {
	return config.Provisioned(ctx, cfg, func() (*Result, error) { return run(ctx, cfg, opts) })
}

// Check does everything Run does before training, by the same code: it
// checks the config against the strategy and backend, opens the dataset,
// prepares the features, opens the backend, builds the model and the
// strategy's stepper (then releases them). With skipData it runs the
// config checks and builds the model with nominal sizes, without data
// (and without provisioning the config's modules).
func Check(ctx context.Context, cfg *config.Config, host modhost.Host, skipData bool) error {
	if skipData {
		return check(ctx, cfg, host, true)
	}
	_, err := config.Provisioned(ctx, cfg, func() (struct{}, error) { return struct{}{}, check(ctx, cfg, host, false) })
	return err
}

// Predict rebuilds cfg's model, loads the parameters saved at modelPath
// (output.model) and predicts every node of cfg's dataset (labelled or
// not) with dropout off. A config, module or dataset that differs from
// the model on a key of its Identity is refused (*IdentityError, naming
// each key); the schedule, the strategy and the data path may differ.
// A link-prediction model (train.task = "link") predicts its node
// embeddings and its split's test figures instead, and scores pairs (nil:
// none); pairs given to another model are refused.
func Predict(ctx context.Context, cfg *config.Config, modelPath string, host modhost.Host, pairs *graph.PairFile) (*Predictions, error) {
	return config.Provisioned(ctx, cfg, func() (*Predictions, error) { return predict(ctx, cfg, modelPath, host, pairs) })
}
