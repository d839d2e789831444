// Package synth generates graphs: R-MAT graphs ("rmat-<scale>[-...]",
// RMAT) and stand-ins of published graphs that cannot be downloaded here
// ("synth:<name>[:...]", GenerateStandIn: Chung-Lu degrees fitted to a
// real graph's degree shape, optionally planted communities), with
// labels and features a GNN can learn from the neighbourhood. Each spec
// form is a format.* module (graph.Format) registered from init, so
// graph.Open reads the specs wherever this package is linked (core/train
// links it). Every output depends only on the spec (or options), never
// on GOMAXPROCS: each part draws from its own keyed random stream.
package synth
