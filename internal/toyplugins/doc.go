// Package toyplugins proves the extension seams: each file registers a
// toy module of one kind (partitioner, cache policy, sampler, training
// strategy, backend, dataset format) and nothing else in strata knows of it. Its test runs
// every toy through its conformance suite, `strata list-plugins`, `strata
// config explain` and a training run.
package toyplugins
