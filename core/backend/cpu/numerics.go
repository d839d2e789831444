package cpu

/*
char* openblas_get_corename(void);
char* openblas_get_config(void);
*/
import "C"

import "strings"

// BLASCore is the kernel family OpenBLAS chose when it loaded ("Haswell",
// "SkylakeX", ...): its pick for this CPU (a DYNAMIC_ARCH build such as
// Debian's) or the one OPENBLAS_CORETYPE forced (an unknown name falls
// back to another family silently, hence make test-float checks it). The
// last bits of a GEMM depend on it, so results that must reproduce
// record it (experiments' provenance.json).
func BLASCore() string { return C.GoString(C.openblas_get_corename()) }

// BLASConfig is OpenBLAS's description of its build: version, options
// and kernel family ("OpenBLAS 0.3.21 DYNAMIC_ARCH ... Haswell ...").
func BLASConfig() string { return strings.TrimSpace(C.GoString(C.openblas_get_config())) }
