package train

import "strata/core/config"

// RunInputs returns the files a run of cfg reads (the config, the dataset
// and the files it is made of, the module), which no file the run writes
// may be: strategies check their own outputs and scratch files against
// them (chunked.host_file).
func RunInputs(cfg *config.Config) []string { return outputInputs(cfg) }
