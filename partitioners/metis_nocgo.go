//go:build !cgo

package partitioners

// metisAvailable reports whether this build links METIS: not without cgo.
const metisAvailable = false

// callMetis is never reached without cgo (Metis.Partition checks
// metisAvailable first).
func callMetis(recursive bool, in *metisGraph, nparts int32, o *metisOpts, part []int32) (int32, int) {
	return 0, metisError
}

// METIS return codes (metis.h, rstatus_et).
const (
	metisOK          = 1
	metisErrorInput  = -2
	metisErrorMemory = -3
	metisError       = -4
)
