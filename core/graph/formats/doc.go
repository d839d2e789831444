// Package formats holds the built-in dataset formats other than numpy's:
// the OGB raw layout, SNAP/CSV edge lists, Matrix Market, the embedded
// datasets and the mmap'd STRATAG1 binary format (the generated graphs
// are core/graph/synth's). Each is a format.* module (graph.Format) registered from init, with its
// conformance examples; Sources lists the files a spec reads, for
// provenance. Text parsing with file:line errors is shared here.
package formats
