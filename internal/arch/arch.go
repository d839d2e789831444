// Package arch holds the test that keeps docs/architecture.md true: the
// layering of strata's packages, read from the import graph with go list.
package arch
