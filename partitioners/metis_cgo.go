//go:build cgo

package partitioners

/*
#cgo LDFLAGS: -lmetis
#include <metis.h>

#if IDXTYPEWIDTH != 32
#error "strata/partitioners: METIS must be built with IDXTYPEWIDTH 32 (as Debian's libmetis-dev is)"
#endif
#if REALTYPEWIDTH != 32
#error "strata/partitioners: METIS must be built with REALTYPEWIDTH 32 (as Debian's libmetis-dev is)"
#endif
*/
import "C"

import (
	"sync"
	"unsafe"
)

// metisAvailable reports whether this build links METIS.
const metisAvailable = true

// metisMu serialises the calls into METIS: the library keeps some
// process-wide state (its random number generator may use the C library's
// rand, and it installs signal handlers for its error exits), so two
// concurrent calls could disturb each other's seeded results.
var metisMu sync.Mutex

// callMetis runs METIS_PartGraphKway (recursive false) or
// METIS_PartGraphRecursive on a METIS-ready graph and writes the part of
// every vertex into part. It returns METIS's objective value (edge cut or
// communication volume) and its return code. vwgt and adjwgt may be nil.
// xadj, adjncy and part must not be empty.
func callMetis(recursive bool, in *metisGraph, nparts int32, o *metisOpts, part []int32) (int32, int) {
	var options [C.METIS_NOPTIONS]C.idx_t
	C.METIS_SetDefaultOptions(&options[0])
	options[C.METIS_OPTION_NUMBERING] = 0
	options[C.METIS_OPTION_SEED] = C.idx_t(o.seed)
	if o.ufactor > 0 {
		options[C.METIS_OPTION_UFACTOR] = C.idx_t(o.ufactor)
	}
	if o.ncuts > 0 {
		options[C.METIS_OPTION_NCUTS] = C.idx_t(o.ncuts)
	}
	if o.niter > 0 {
		options[C.METIS_OPTION_NITER] = C.idx_t(o.niter)
	}
	if !recursive {
		if o.vol {
			options[C.METIS_OPTION_OBJTYPE] = C.METIS_OBJTYPE_VOL
		}
		if o.contig {
			options[C.METIS_OPTION_CONTIG] = 1
		}
		if o.minconn {
			options[C.METIS_OPTION_MINCONN] = 1
		}
	}
	nv := C.idx_t(in.n)
	ncon := C.idx_t(1)
	np := C.idx_t(nparts)
	var objval C.idx_t
	ptr := func(s []int32) *C.idx_t {
		if len(s) == 0 {
			return nil
		}
		return (*C.idx_t)(unsafe.Pointer(&s[0]))
	}
	// METIS reads adjncy even for an edgeless graph: give it a valid pointer.
	adj := in.adjncy
	if len(adj) == 0 {
		adj = []int32{0}
	}
	metisMu.Lock()
	defer metisMu.Unlock()
	var rc C.int
	if recursive {
		rc = C.METIS_PartGraphRecursive(&nv, &ncon, ptr(in.xadj), ptr(adj), ptr(in.vwgt), nil, ptr(in.adjwgt),
			&np, nil, nil, &options[0], &objval, ptr(part))
	} else {
		rc = C.METIS_PartGraphKway(&nv, &ncon, ptr(in.xadj), ptr(adj), ptr(in.vwgt), nil, ptr(in.adjwgt),
			&np, nil, nil, &options[0], &objval, ptr(part))
	}
	return int32(objval), int(rc)
}

// METIS return codes (metis.h, rstatus_et).
const (
	metisOK          = int(C.METIS_OK)
	metisErrorInput  = int(C.METIS_ERROR_INPUT)
	metisErrorMemory = int(C.METIS_ERROR_MEMORY)
	metisError       = int(C.METIS_ERROR)
)
