package train

import (
	"fmt"

	"strata/core/backend"
	"strata/core/config"
	"strata/core/tensor"
)

// compactFeatures stores the prepared feature rows in 16 bits when
// data.feature_dtype asks for it: Env.Features16 holds them (rounded to
// nearest even, once, after normalisation), and neither Env.Features nor
// the dataset keeps the float32 matrix, so the host holds half the bytes.
// The backend must read 16-bit rows (backend.HalfStorage).
func compactFeatures(cfg *config.Config, env *Env) error {
	dt, err := tensor.StorageDType(cfg.Data.FeatureDType)
	if err != nil {
		return cfg.KeyError(err.Error(), "data", "feature_dtype")
	}
	if dt == tensor.Float32 {
		return nil
	}
	if _, ok := env.Backend.(backend.HalfStorage); !ok {
		return cfg.KeyError(fmt.Sprintf("data.feature_dtype = %q: train.backend = %q cannot read 16-bit feature rows yet; use train.backend = \"cpu\" or \"sim\", or data.feature_dtype = \"float32\"", cfg.Data.FeatureDType, cfg.Train.Backend), "data", "feature_dtype")
	}
	env.FeatureDType = dt
	if env.Features == nil { // a rank that loads its own rows (rejected before: no strategy of those reads 16 bits)
		return nil
	}
	// A chunk at a time, giving a mapped file's pages back as they are
	// read: the float32 rows and their 16-bit copy are never both
	// resident in full.
	f, h := env.Features, make([]uint16, len(env.Features))
	for lo := 0; lo < len(f); lo += scanChunk {
		hi := min(len(f), lo+scanChunk)
		tensor.EncodeHalf(dt, h[lo:hi], f[lo:hi])
		if i := overflow(dt, h[lo:hi]); i >= 0 {
			return cfg.KeyError(fmt.Sprintf("data.feature_dtype = %q: feature %d of node %d is %g, beyond the format's largest value (it would become Inf); use data.feature_dtype = \"bfloat16\" (float32's range), normalise the features (data.feature_norm = \"row\"), or keep float32",
				cfg.Data.FeatureDType, (lo+i)%env.Dim, (lo+i)/env.Dim, f[lo+i]), "data", "feature_dtype")
		}
		env.Dataset.DropMappedPages()
	}
	env.Features16, env.Features = h, nil
	env.Dataset.Features = nil // the float32 copy (or the mapped file's pages) is no longer referenced
	return nil
}

// overflow returns the index of the first ±Inf among 16-bit values of
// dt (a finite float32 beyond the format's range: features are checked
// finite when loaded), or -1.
func overflow(dt tensor.DType, h []uint16) int {
	inf := uint16(0x7c00) // binary16
	if dt == tensor.BFloat16 {
		inf = 0x7f80
	}
	for i, v := range h {
		if v&0x7fff == inf {
			return i
		}
	}
	return -1
}
