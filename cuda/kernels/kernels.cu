// kernels.cu: the graph, elementwise and NN kernels of the cuda backend.
//
// Every kernel is a grid-stride loop over its output elements, so one launch
// configuration fits any size, and each output element is written by one
// thread: no shared memory, no __syncthreads, no warp intrinsics. The same
// source compiles to PTX (make ptx, nvcc -arch=compute_80) and, for the CPU
// mock of the driver, to host code (compat.cuh). Kernel parameters are all
// 8 bytes wide (pointers, i64, u64, double), because gorgonia.org/cu copies
// 8 bytes per launch argument.
//
// Names: <op>_<float type>[_<index type>...], e.g. spmm_f32_i32. Index
// tensors are int32 or int64; float scalars arrive as double.
//
// Reductions (column sums, batch-norm statistics, the loss) run in two
// deterministic stages: partial sums over fixed chunks of rows in double,
// then one thread per column adds the partials in chunk order. Only the
// scatters (ScatterAdd, ScatterArgmax, the cross-entropy gradient of a
// repeated row) use atomics.

#include "compat.cuh"

// ---------------------------------------------------------------- helpers

DEVICE i64 gtid() { return (i64)blockIdx.x * blockDim.x + threadIdx.x; }
DEVICE i64 gstride() { return (i64)gridDim.x * blockDim.x; }

// Unary (U_*) and binary (B_*) function codes, generated from the op
// table (go generate ./core/ir): the values of backend.Unary and
// backend.Binary.
#include "codes_gen.cuh"

DEVICE double sigmoid_d(double v) {
	if (v >= 0)
		return 1 / (1 + exp(-v));
	double e = exp(v);
	return e / (1 + e);
}

template <typename T> DEVICE T unary(i64 f, T v, double alpha) {
	switch (f) {
	case U_RELU:
		return v > 0 ? v : (T)0;
	case U_LEAKYRELU:
		return v > 0 ? v : (T)(alpha * v);
	case U_ELU:
		return v > 0 ? v : (T)(alpha * expm1((double)v));
	case U_SIGMOID:
		return (T)sigmoid_d((double)v);
	case U_TANH:
		return (T)tanh((double)v);
	case U_EXP:
		return (T)exp((double)v);
	case U_NEG:
		return -v;
	case U_LOG:
		return (T)log((double)v);
	case U_SQRT:
		return (T)sqrt((double)v);
	case U_POW:
		return (T)pow((double)v, alpha);
	case U_ABS:
		return v < 0 ? -v : v;
	case U_SIGN:
		return v > 0 ? (T)1 : v < 0 ? (T)-1 : (T)0;
	case U_CLAMPMIN:
		return v < (T)alpha ? (T)alpha : v;
	case U_CLAMPMAX:
		return v > (T)alpha ? (T)alpha : v;
	case U_COS:
		return (T)cos((double)v);
	case U_SHIFT:
		return v + (T)alpha;
	}
	return v;
}

template <typename T> DEVICE T unary_grad(i64 f, T x, T y, T g, double alpha) {
	switch (f) {
	case U_RELU:
		return x > 0 ? g : (T)0;
	case U_LEAKYRELU:
		return x > 0 ? g : (T)(alpha * g);
	case U_ELU:
		return x > 0 ? g : g * (y + (T)alpha);
	case U_SIGMOID:
		return g * y * (1 - y);
	case U_TANH:
		return g * (1 - y * y);
	case U_EXP:
		return g * y;
	case U_NEG:
		return -g;
	case U_LOG:
		return g / x;
	case U_SQRT:
		return g * (T)0.5 / y;
	case U_POW:
		return g * (T)(alpha * pow((double)x, alpha - 1));
	case U_ABS:
		return x > 0 ? g : x < 0 ? -g : (T)0;
	case U_SIGN:
		return (T)0;
	case U_CLAMPMIN:
	case U_CLAMPMAX:
		return x == y ? g : (T)0;
	case U_COS:
		return -g * (T)sin((double)x);
	}
	return g;
}

template <typename T> DEVICE T binop(i64 op, T a, T b) {
	switch (op) {
	case B_SUB:
		return a - b;
	case B_MUL:
		return a * b;
	case B_DIV:
		return a / b;
	case B_MINIMUM:
		return b < a ? b : a;
	case B_MAXIMUM:
		return b > a ? b : a;
	case B_EQUAL:
		return a == b ? (T)1 : (T)0;
	}
	return a + b;
}

// flag records a bad index (its position + 1; the largest when several)
// in err[0]; the backend reads it back after the kernel.
DEVICE void flag(int *err, i64 pos) {
	if (err)
		atomicMax(err, pos + 1 > 0x7fffffff ? 0x7fffffff : (int)(pos + 1));
}

// ------------------------------------------------------- elementwise ops

template <typename T> DEVICE void fill_impl(T *y, i64 n, double v) {
	for (i64 i = gtid(); i < n; i += gstride())
		y[i] = (T)v;
}

template <typename T> DEVICE void axpby_impl(const T *x, T *y, i64 n, double alpha, double beta) {
	const T a = (T)alpha, b = (T)beta;
	for (i64 i = gtid(); i < n; i += gstride()) {
		if (beta == 0)
			y[i] = alpha == 1 ? x[i] : a * x[i];
		else
			y[i] = a * x[i] + b * y[i];
	}
}

template <typename T> DEVICE void apply_impl(i64 f, double alpha, const T *x, T *y, i64 n) {
	for (i64 i = gtid(); i < n; i += gstride())
		y[i] = unary<T>(f, x[i], alpha);
}

template <typename T>
DEVICE void apply_bwd_impl(i64 f, double alpha, const T *x, const T *y, const T *dy, T *dx, i64 n) {
	for (i64 i = gtid(); i < n; i += gstride())
		dx[i] = unary_grad<T>(f, x ? x[i] : (T)0, y ? y[i] : (T)0, dy[i], alpha);
}

// cols: 0 = b is a scalar, n = same shape, else b is a row of cols.
template <typename T> DEVICE void binary_impl(i64 op, const T *a, const T *b, T *y, i64 n, i64 cols) {
	for (i64 i = gtid(); i < n; i += gstride()) {
		T bv = cols == 0 ? b[0] : cols == n ? b[i] : b[i % cols];
		y[i] = binop<T>(op, a[i], bv);
	}
}

// dst[:, doff+j] = src[:, soff+j] for j < w.
template <typename T>
DEVICE void copy_cols_impl(T *dst, i64 dcols, i64 doff, const T *src, i64 scols, i64 soff, i64 rows, i64 w) {
	const i64 n = rows * w;
	for (i64 i = gtid(); i < n; i += gstride()) {
		i64 r = i / w, j = i % w;
		dst[r * dcols + doff + j] = src[r * scols + soff + j];
	}
}

// Dropout: the splitmix64 counter stream of the CPU backend
// (backend.DropoutMask). Element i (row i / cols, column i % cols) has the
// stream index keys[i / cols]·cols + i % cols, unsigned and wrapping, or i
// when keys is null, and is kept when (mix64(base + (index+1)·φ) >> 11) ≥
// thr, thr = ceil(p·2^53).
DEVICE u64 mix64(u64 z) {
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

// dropout_index is element i's stream index; the division by cols runs
// only with keys (keys is the same for every thread: no divergence).
DEVICE u64 dropout_index(const i64 *keys, i64 cols, i64 i) {
	if (!keys)
		return (u64)i;
	const u64 c = (u64)cols, r = (u64)i / c;
	return (u64)keys[r] * c + ((u64)i - r * c);
}

template <typename T>
DEVICE void dropout_impl(u64 base, u64 thr, double scale, T *mask, const T *x, T *y, i64 n, const i64 *keys,
			 i64 cols) {
	for (i64 i = gtid(); i < n; i += gstride()) {
		u64 k = mix64(base + (dropout_index(keys, cols, i) + 1) * 0x9E3779B97F4A7C15ULL) >> 11;
		T m = k >= thr ? (T)scale : (T)0;
		if (mask)
			mask[i] = m;
		if (y)
			y[i] = x[i] * m;
	}
}

// ------------------------------------------------------------ reductions

// Column partial sums of [n, c] in double over row chunks of `chunk` rows:
// part[b, j] for chunk b. mode 0: x; mode 1: (x - mu)²; mode 2: columns
// [0, c) get dy and [c, 2c) get dy·(x - mu)·inv (part then has 2c columns).
template <typename T>
DEVICE void colsum_impl(i64 mode, const T *x, const T *dy, const double *mu, const double *inv, i64 n, i64 c,
			i64 chunk, double *part) {
	const i64 nb = (n + chunk - 1) / chunk;
	for (i64 t = gtid(); t < nb * c; t += gstride()) {
		const i64 b = t / c, j = t % c, r1 = b * chunk + chunk < n ? b * chunk + chunk : n;
		double s = 0, s2 = 0;
		for (i64 r = b * chunk; r < r1; r++) {
			const double v = (double)x[r * c + j];
			if (mode == 0) {
				s += v;
			} else if (mode == 1) {
				const double d = v - mu[j];
				s += d * d;
			} else {
				const double g = (double)dy[r * c + j];
				s += g;
				s2 += g * (v - mu[j]) * inv[j];
			}
		}
		if (mode == 2) {
			part[b * 2 * c + j] = s;
			part[b * 2 * c + c + j] = s2;
		} else {
			part[b * c + j] = s;
		}
	}
}

// out[j] = Σ_b part[b, j] over nb chunks, in chunk order, for j < c.
DEVICE void colsum_final(const double *part, i64 nb, i64 c, i64 j, double *s) {
	double v = 0;
	for (i64 b = 0; b < nb; b++)
		v += part[b * c + j];
	*s = v;
}

template <typename T> DEVICE void sum_rows_final_impl(const double *part, i64 nb, i64 c, T *y) {
	for (i64 j = gtid(); j < c; j += gstride()) {
		double s;
		colsum_final(part, nb, c, j, &s);
		y[j] = (T)s;
	}
}

// BatchNorm statistics: mean from mode-0 partials (stage 1), then invStd
// from mode-1 partials (stage 2). The double copies drive the normalisation.
template <typename T> DEVICE void bn_mean_impl(const double *part, i64 nb, i64 c, i64 n, double *mu, T *mean) {
	for (i64 j = gtid(); j < c; j += gstride()) {
		double s;
		colsum_final(part, nb, c, j, &s);
		mu[j] = s / (double)n;
		mean[j] = (T)mu[j];
	}
}

template <typename T>
DEVICE void bn_inv_impl(const double *part, i64 nb, i64 c, i64 n, double eps, double *inv, T *invstd) {
	for (i64 j = gtid(); j < c; j += gstride()) {
		double s;
		colsum_final(part, nb, c, j, &s);
		inv[j] = 1 / sqrt(s / (double)n + eps);
		invstd[j] = (T)inv[j];
	}
}

// y = (x - mu)·inv·gamma + beta.
template <typename T>
DEVICE void bn_norm_impl(const T *x, const double *mu, const double *inv, const T *gamma, const T *beta, T *y,
			 i64 n, i64 c) {
	for (i64 i = gtid(); i < n * c; i += gstride()) {
		const i64 j = i % c;
		y[i] = (T)(((double)x[i] - mu[j]) * (inv[j] * (double)gamma[j]) + (double)beta[j]);
	}
}

// Inference: inv from the given variance.
template <typename T>
DEVICE void bn_infer_impl(const T *x, const T *gamma, const T *beta, const T *mean, const T *var, T *y, i64 n,
			  i64 c, double eps) {
	for (i64 i = gtid(); i < n * c; i += gstride()) {
		const i64 j = i % c;
		const double inv = 1 / sqrt((double)var[j] + eps);
		y[i] = (T)(((double)x[i] - (double)mean[j]) * (inv * (double)gamma[j]) + (double)beta[j]);
	}
}

// Backward, stage 2: dbeta, dgamma from mode-2 partials (2c columns).
template <typename T>
DEVICE void bn_bwd_final_impl(const double *part, i64 nb, i64 c, double *sums, T *dbeta, T *dgamma) {
	for (i64 j = gtid(); j < 2 * c; j += gstride()) {
		double s;
		colsum_final(part, nb, 2 * c, j, &s);
		sums[j] = s;
		if (j < c)
			dbeta[j] = (T)s;
		else
			dgamma[j - c] = (T)s;
	}
}

template <typename T>
DEVICE void bn_bwd_dx_impl(const T *x, const T *gamma, const T *dy, const T *mean, const T *invstd,
			   const double *sums, T *dx, i64 n, i64 c) {
	const double nf = (double)n;
	for (i64 i = gtid(); i < n * c; i += gstride()) {
		const i64 j = i % c;
		const double inv = (double)invstd[j];
		const double xh = ((double)x[i] - (double)mean[j]) * inv;
		dx[i] = (T)((double)gamma[j] * inv * ((double)dy[i] - sums[j] / nf - xh * sums[c + j] / nf));
	}
}

// y[n,h] = <x[n, h·C:(h+1)·C], a[h,:]>.
template <typename T> DEVICE void head_dot_impl(const T *x, const T *a, T *y, i64 N, i64 H, i64 C) {
	for (i64 t = gtid(); t < N * H; t += gstride()) {
		const i64 n = t / H, h = t % H;
		const T *xr = x + (n * H + h) * C, *ar = a + h * C;
		T s = 0;
		for (i64 c = 0; c < C; c++)
			s += xr[c] * ar[c];
		y[t] = s;
	}
}

// dx[n, h·C+c] += dy[n,h]·a[h,c].
template <typename T> DEVICE void head_dot_dx_impl(const T *a, const T *dy, T *dx, i64 N, i64 H, i64 C) {
	for (i64 i = gtid(); i < N * H * C; i += gstride()) {
		const i64 n = i / (H * C), hc = i % (H * C);
		dx[i] += dy[n * H + hc / C] * a[hc];
	}
}

// da[h,c] += Σ_n dy[n,h]·x[n, h·C+c], in row-chunk partials (stage 1) ...
template <typename T>
DEVICE void head_dot_da_part_impl(const T *x, const T *dy, i64 N, i64 H, i64 C, i64 chunk, double *part) {
	const i64 nb = (N + chunk - 1) / chunk, HC = H * C;
	for (i64 t = gtid(); t < nb * HC; t += gstride()) {
		const i64 b = t / HC, hc = t % HC, r1 = b * chunk + chunk < N ? b * chunk + chunk : N;
		double s = 0;
		for (i64 n = b * chunk; n < r1; n++)
			s += (double)dy[n * H + hc / C] * (double)x[n * HC + hc];
		part[b * HC + hc] = s;
	}
}

// ... and their sum (stage 2), added to da.
template <typename T> DEVICE void add_colsum_impl(const double *part, i64 nb, i64 c, T *y) {
	for (i64 j = gtid(); j < c; j += gstride()) {
		double s;
		colsum_final(part, nb, c, j, &s);
		y[j] = (T)((double)y[j] + s);
	}
}

// ------------------------------------------------------------ NN helpers

// bad_loss_row flags position i of a loss kernel's idx when its row r is
// outside [0, n), with a zero loss.
DEVICE bool bad_loss_row(i64 r, i64 n, i64 i, double *loss, int *err) {
	if (r >= 0 && r < n)
		return false;
	flag(err, i);
	loss[i] = 0;
	return true;
}

// Softmax cross-entropy over the rows idx[0..m): loss[i] = lse - z[label];
// dz[row] += (softmax - onehot)/m (atomic, as idx may repeat a row; dz is
// zeroed by the caller). Bad labels or rows are flagged in err.
template <typename T, typename I>
DEVICE void softmax_ce_impl(const T *z, const int *labels, const I *idx, i64 m, i64 n, i64 k, T *dz,
			    double *loss, int *err) {
	const double inv = 1.0 / (double)m;
	for (i64 i = gtid(); i < m; i += gstride()) {
		const i64 r = (i64)idx[i];
		if (bad_loss_row(r, n, i, loss, err))
			continue;
		const int l = labels[r];
		if (l < 0 || l >= k) {
			flag(err, i);
			loss[i] = 0;
			continue;
		}
		const T *zr = z + r * k;
		double mx = -INFINITY;
		for (i64 j = 0; j < k; j++)
			mx = fmax(mx, (double)zr[j]);
		double s = 0;
		for (i64 j = 0; j < k; j++)
			s += exp((double)zr[j] - mx);
		const double lse = mx + log(s);
		loss[i] = lse - (double)zr[l];
		if (dz) {
			for (i64 j = 0; j < k; j++) {
				double g = exp((double)zr[j] - lse) * inv;
				if (j == l)
					g -= inv;
				atomicAdd(dz + r * k + j, (T)g);
			}
		}
	}
}

// Element-wise loss over the rows idx[0..m) and the k columns: loss[i] =
// the sum over row idx[i] of (mse ? (x-y)^2 : the stable sigmoid BCE
// max(x,0) - x*y + log1p(exp(-|x|))); dz[row] += d/dx / (m*k) (atomic, as
// idx may repeat a row; dz is zeroed by the caller). Bad rows are flagged
// in err.
template <typename T, typename I>
DEVICE void target_loss_impl(const T *x, const T *y, const I *idx, i64 m, i64 n, i64 k, i64 mse, T *dz,
			     double *loss, int *err) {
	const double inv = 1.0 / ((double)m * (double)k);
	for (i64 i = gtid(); i < m; i += gstride()) {
		const i64 r = (i64)idx[i];
		if (bad_loss_row(r, n, i, loss, err))
			continue;
		double s = 0;
		for (i64 j = r * k; j < (r + 1) * k; j++) {
			const double xv = (double)x[j], yv = (double)y[j];
			double l, g;
			if (mse) {
				const double d = xv - yv;
				l = d * d;
				g = 2 * d;
			} else {
				const double e = exp(-fabs(xv));
				l = fmax(xv, 0.0) - xv * yv + log1p(e);
				g = (xv >= 0 ? 1 / (1 + e) : e / (1 + e)) - yv;
			}
			s += l;
			if (dz)
				atomicAdd(dz + j, (T)(g * inv));
		}
		loss[i] = s;
	}
}

template <typename T> DEVICE void argmax_rows_impl(const T *x, int *out, i64 n, i64 k) {
	for (i64 r = gtid(); r < n; r += gstride()) {
		i64 best = -1;
		for (i64 j = 0; j < k; j++)
			if (best < 0 || x[r * k + j] > x[r * k + best])
				best = j;
		out[r] = (int)best;
	}
}

template <typename T>
DEVICE void adam_impl(T *p, const T *g, T *m, T *v, i64 n, double lr, double b1, double b2, double eps, double wd,
		      double bc1, double bc2) {
	for (i64 i = gtid(); i < n; i += gstride()) {
		const double pi = (double)p[i];
		const double gi = (double)g[i] + wd * pi;
		const double mi = b1 * (double)m[i] + (1 - b1) * gi;
		const double vi = b2 * (double)v[i] + (1 - b2) * gi * gi;
		m[i] = (T)mi;
		v[i] = (T)vi;
		p[i] = (T)(pi - lr * (mi / bc1) / (sqrt(vi / bc2) + eps));
	}
}

// ---------------------------------------------------------- index kernels

// y[i,:] = x[idx[i],:]; x may be host-pinned memory (zero-copy reads).
template <typename T, typename I>
DEVICE void gather_impl(const T *x, i64 xrows, const I *idx, T *y, i64 n, i64 c, int *err) {
	for (i64 t = gtid(); t < n * c; t += gstride()) {
		const i64 i = t / c, j = t % c, r = (i64)idx[i];
		if (r < 0 || r >= xrows) {
			if (j == 0)
				flag(err, i);
			y[t] = 0;
			continue;
		}
		y[t] = x[r * c + j];
	}
}

// y[idx[i],:] += x[i,:] (atomic: idx may repeat).
template <typename T, typename I>
DEVICE void scatter_add_impl(const T *x, const I *idx, T *y, i64 yrows, i64 n, i64 c, int *err) {
	for (i64 t = gtid(); t < n * c; t += gstride()) {
		const i64 i = t / c, j = t % c, r = (i64)idx[i];
		if (r < 0 || r >= yrows) {
			if (j == 0)
				flag(err, i);
			continue;
		}
		atomicAdd(y + r * c + j, x[t]);
	}
}

// dx[argmax[i,f], f] += dy[i,f] for argmax ≥ 0.
template <typename T, typename J>
DEVICE void scatter_argmax_impl(const J *am, const T *dy, T *dx, i64 dxrows, i64 n, i64 f, int *err) {
	for (i64 t = gtid(); t < n * f; t += gstride()) {
		const i64 s = (i64)am[t];
		if (s < 0)
			continue;
		if (s >= dxrows) {
			flag(err, t);
			continue;
		}
		atomicAdd(dx + s * f + t % f, dy[t]);
	}
}

// ---------------------------------------------------------- graph kernels
//
// A CSR orientation: indptr [rows+1] (i64), idx [nnz] (I), and for the
// transposed orientation perm [nnz] (i64), the original edge id of each
// entry. erow [nnz] (I) is the destination row of each original edge.

// y[r, f] = Σ_k w_k·x[idx[k], f] + beta·y[r, f]; x has F = H·C columns and
// column f belongs to head f / C. mode 0: unit weights; 1: w[k·H + h];
// 2: w[perm[k]·H + h].
template <typename T, typename I>
DEVICE void spmm_impl(const i64 *indptr, const I *idx, const i64 *perm, const T *w, i64 mode, i64 H, i64 C,
		      const T *x, double beta, T *y, i64 rows, i64 heavy) {
	const i64 F = H * C;
	for (i64 t = gtid(); t < rows * F; t += gstride()) {
		const i64 r = t / F, f = t % F, h = f / C;
		if (heavy && indptr[r + 1] - indptr[r] > heavy)
			continue; // a heavy row: spmm_chunk and spmm_heavy
		T acc = 0;
		for (i64 k = indptr[r]; k < indptr[r + 1]; k++) {
			const T wk = mode == 0 ? (T)1 : mode == 1 ? w[k * H + h] : w[perm[k] * H + h];
			acc += wk * x[(i64)idx[k] * F + f];
		}
		y[t] = beta == 0 ? acc : acc + (T)beta * y[t];
	}
}

// Heavy rows (more than `heavy` entries) are split into chunks of entries
// [ck0[c], ck1[c]) so that one long row does not hold up the launch: a
// partial sum per chunk, then the chunks of each heavy row hrow[i]
// (hoff[i] .. hoff[i+1]) added in order.
template <typename T, typename I>
DEVICE void spmm_chunk_impl(const i64 *ck0, const i64 *ck1, const I *idx, const i64 *perm, const T *w, i64 mode,
			    i64 H, i64 C, const T *x, T *part, i64 nch) {
	const i64 F = H * C;
	for (i64 t = gtid(); t < nch * F; t += gstride()) {
		const i64 c = t / F, f = t % F, h = f / C;
		T acc = 0;
		for (i64 k = ck0[c]; k < ck1[c]; k++) {
			const T wk = mode == 0 ? (T)1 : mode == 1 ? w[k * H + h] : w[perm[k] * H + h];
			acc += wk * x[(i64)idx[k] * F + f];
		}
		part[t] = acc;
	}
}

template <typename T>
DEVICE void spmm_heavy_impl(const i64 *hrow, const i64 *hoff, const T *part, double beta, T *y, i64 nh, i64 F) {
	for (i64 t = gtid(); t < nh * F; t += gstride()) {
		const i64 i = t / F, f = t % F;
		T acc = 0;
		for (i64 c = hoff[i]; c < hoff[i + 1]; c++)
			acc += part[c * F + f];
		T *yo = y + hrow[i] * F + f;
		*yo = beta == 0 ? acc : acc + (T)beta * *yo;
	}
}

// y[r, f] = max over the sources of row r of x[src, f] (0 if none); the
// winning source goes to argmax (-1 if none). Ties keep the first source.
template <typename T, typename I, typename J>
DEVICE void spmm_max_impl(const i64 *indptr, const I *idx, const T *x, T *y, J *am, i64 rows, i64 F) {
	for (i64 t = gtid(); t < rows * F; t += gstride()) {
		const i64 r = t / F, f = t % F;
		i64 best = -1;
		T bv = 0;
		for (i64 k = indptr[r]; k < indptr[r + 1]; k++) {
			const i64 s = (i64)idx[k];
			const T v = x[s * F + f];
			if (best < 0 || v > bv) {
				best = s;
				bv = v;
			}
		}
		y[t] = bv;
		am[t] = (J)best;
	}
}

// out[e, h] = <x[erow[e]] head h, y[idx[e]] head h>.
template <typename T, typename I>
DEVICE void sddmm_impl(const I *erow, const I *idx, const T *x, const T *y, T *out, i64 nnz, i64 H, i64 C) {
	for (i64 t = gtid(); t < nnz * H; t += gstride()) {
		const i64 e = t / H, h = t % H;
		const T *xr = x + ((i64)erow[e] * H + h) * C, *yr = y + ((i64)idx[e] * H + h) * C;
		T s = 0;
		for (i64 c = 0; c < C; c++)
			s += xr[c] * yr[c];
		out[t] = s;
	}
}

// out[e, h] = u[src(e), h] + v[dst(e), h].
template <typename T, typename I>
DEVICE void uaddv_impl(const I *erow, const I *idx, const T *u, const T *v, T *out, i64 nnz, i64 H) {
	for (i64 t = gtid(); t < nnz * H; t += gstride()) {
		const i64 e = t / H, h = t % H;
		out[t] = u[(i64)idx[e] * H + h] + v[(i64)erow[e] * H + h];
	}
}

// Row reductions of edge values v [E,H] (entry k reads v[perm ? perm[k] :
// k]): mode 0 sums v, 1 takes the max (rows without entries are left
// alone), 2 sums v·v2. Light rows run one thread per (row, head); heavy
// rows are skipped here and reduced by row_chunk and row_heavy.
template <typename T> DEVICE T row_term(i64 mode, const T *v, const T *v2, i64 j) {
	return mode == 2 ? v[j] * v2[j] : v[j];
}

template <typename T>
DEVICE void row_reduce_impl(i64 mode, const i64 *indptr, const i64 *perm, const T *v, const T *v2, T *out, i64 rows,
			    i64 H, i64 heavy) {
	for (i64 t = gtid(); t < rows * H; t += gstride()) {
		const i64 r = t / H, h = t % H, k0 = indptr[r], k1 = indptr[r + 1];
		if (heavy && k1 - k0 > heavy)
			continue;
		if (mode == 1 && k0 == k1)
			continue;
		T acc = mode == 1 ? row_term(mode, v, v2, (perm ? perm[k0] : k0) * H + h) : (T)0;
		for (i64 k = mode == 1 ? k0 + 1 : k0; k < k1; k++) {
			const T x = row_term(mode, v, v2, (perm ? perm[k] : k) * H + h);
			acc = mode == 1 ? (x > acc ? x : acc) : acc + x;
		}
		out[t] = acc;
	}
}

template <typename T>
DEVICE void row_chunk_impl(i64 mode, const i64 *ck0, const i64 *ck1, const i64 *perm, const T *v, const T *v2,
			   T *part, i64 nch, i64 H) {
	for (i64 t = gtid(); t < nch * H; t += gstride()) {
		const i64 c = t / H, h = t % H, k0 = ck0[c];
		T acc = mode == 1 ? row_term(mode, v, v2, (perm ? perm[k0] : k0) * H + h) : (T)0;
		for (i64 k = mode == 1 ? k0 + 1 : k0; k < ck1[c]; k++) {
			const T x = row_term(mode, v, v2, (perm ? perm[k] : k) * H + h);
			acc = mode == 1 ? (x > acc ? x : acc) : acc + x;
		}
		part[t] = acc;
	}
}

template <typename T>
DEVICE void row_heavy_impl(i64 mode, const i64 *hrow, const i64 *hoff, const T *part, T *out, i64 nh, i64 H) {
	for (i64 t = gtid(); t < nh * H; t += gstride()) {
		const i64 i = t / H, h = t % H;
		T acc = part[hoff[i] * H + h];
		for (i64 c = hoff[i] + 1; c < hoff[i + 1]; c++) {
			const T x = part[c * H + h];
			acc = mode == 1 ? (x > acc ? x : acc) : acc + x;
		}
		out[hrow[i] * H + h] = acc;
	}
}

// Edge softmax, per edge: out = exp(s - rowmax[dst]), then out /= rowsum[dst].
template <typename T, typename I>
DEVICE void edge_exp_impl(const I *erow, const T *s, const T *rowmax, T *out, i64 nnz, i64 H) {
	for (i64 t = gtid(); t < nnz * H; t += gstride())
		out[t] = exp(s[t] - rowmax[(i64)erow[t / H] * H + t % H]);
}

template <typename T, typename I> DEVICE void edge_div_impl(const I *erow, const T *rowsum, T *out, i64 nnz, i64 H) {
	for (i64 t = gtid(); t < nnz * H; t += gstride())
		out[t] /= rowsum[(i64)erow[t / H] * H + t % H];
}

// Its backward, per edge: ds = out·(dout - d[dst]), d = Σ_row out·dout.
template <typename T, typename I>
DEVICE void edge_softmax_bwd_impl(const I *erow, const T *out, const T *dout, const T *d, T *ds, i64 nnz, i64 H) {
	for (i64 t = gtid(); t < nnz * H; t += gstride())
		ds[t] = out[t] * (dout[t] - d[(i64)erow[t / H] * H + t % H]);
}

// ------------------------------------------------------------------ LSTM
//
// The CPU backend's schedule: rows sorted by degree, descending (order,
// rank), step t covering the first n_t of them at positions off[t].. of the
// step-major saved state. The h·W_hh products are cuBLAS GEMMs between the
// kernels below.

template <typename T> DEVICE T sigm(T v) { return (T)sigmoid_d((double)v); }

// g[r] = xw[source t of row order[r]] + bias for r < n.
template <typename T, typename I>
DEVICE void lstm_gather_impl(i64 n, i64 t, const i64 *indptr, const I *idx, const i64 *order, const T *xw,
			     const T *bias, i64 G4, T *g) {
	for (i64 i = gtid(); i < n * G4; i += gstride()) {
		const i64 r = i / G4, j = i % G4;
		g[i] = xw[(i64)idx[indptr[order[r]] + t] * G4 + j] + bias[j];
	}
}

// One step, thread per (r, j < H): activations into g, c to cout, h to
// hnext[r] (r < nnext) or out[order[r]]. cprev null: zero state.
template <typename T>
DEVICE void lstm_cell_impl(i64 n, i64 H, i64 nnext, T *g, const T *cprev, T *cout, T *hnext, T *out,
			   const i64 *order) {
	for (i64 t = gtid(); t < n * H; t += gstride()) {
		const i64 r = t / H, j = t % H;
		T *gr = g + r * 4 * H;
		const T i = sigm(gr[j]), f = sigm(gr[H + j]), u = (T)tanh((double)gr[2 * H + j]), o = sigm(gr[3 * H + j]);
		gr[j] = i;
		gr[H + j] = f;
		gr[2 * H + j] = u;
		gr[3 * H + j] = o;
		const T cv = (cprev ? f * cprev[r * H + j] : (T)0) + i * u;
		cout[r * H + j] = cv;
		const T hv = o * (T)tanh((double)cv);
		if (r < nnext)
			hnext[r * H + j] = hv;
		else
			out[order[r] * H + j] = hv;
	}
}

// One step backwards (see the CPU's k_lstm_cell_bwd): g holds activations
// and receives the pre-activation gradients; dcs carries dc·f.
template <typename T>
DEVICE void lstm_cell_bwd_impl(i64 n, i64 H, i64 nnext, T *g, const T *c, const T *cprev, const T *dhp,
			       const T *dout, const i64 *order, T *dcs) {
	for (i64 t = gtid(); t < n * H; t += gstride()) {
		const i64 r = t / H, j = t % H;
		T *gr = g + r * 4 * H;
		const bool on = r < nnext;
		const T dh = on ? dhp[r * H + j] : dout[order[r] * H + j];
		const T i = gr[j], f = gr[H + j], u = gr[2 * H + j], o = gr[3 * H + j];
		const T tc = (T)tanh((double)c[r * H + j]);
		const T d = dh * o * (1 - tc * tc) + (on ? dcs[r * H + j] : (T)0);
		gr[j] = d * u * i * (1 - i);
		gr[H + j] = cprev ? d * cprev[r * H + j] * f * (1 - f) : (T)0;
		gr[2 * H + j] = d * i * (1 - u * u);
		gr[3 * H + j] = dh * tc * o * (1 - o);
		dcs[r * H + j] = d * f;
	}
}

// dxw[s] = Σ over the edges leaving s (transposed CSR bindptr, bidx, perm)
// of the gate gradients, found at off[step] + rank[dst] of dg.
template <typename T, typename I>
DEVICE void lstm_scatter_impl(i64 S, const i64 *bindptr, const I *bidx, const i64 *perm, const i64 *indptr,
			      const i64 *rank, const i64 *off, i64 G4, const T *dg, T *dxw) {
	for (i64 t = gtid(); t < S * G4; t += gstride()) {
		const i64 s = t / G4, j = t % G4;
		T acc = 0;
		for (i64 k = bindptr[s]; k < bindptr[s + 1]; k++) {
			const i64 i = (i64)bidx[k];
			acc += dg[(off[perm[k] - indptr[i]] + rank[i]) * G4 + j];
		}
		dxw[t] = acc;
	}
}

// segment_prod: per row r and column c of e [nnz,C], the product of the
// row's in-edge values in edge order (1 for none), one thread each.
template <typename T>
DEVICE void segment_prod_impl(const i64 *indptr, const T *e, T *out, i64 rows, i64 C) {
	for (i64 t = gtid(); t < rows * C; t += gstride()) {
		i64 r = t / C, c = t % C;
		T p = (T)1;
		for (i64 k = indptr[r]; k < indptr[r + 1]; k++)
			p *= e[k * C + c];
		out[t] = p;
	}
}

// segment_prod_bwd: de[k,c] = dout[r,c] times the product of the row's
// other factors, from the row's zero count z and the product P of its
// non-zero factors: dout·P/e when z = 0, dout·P at the zero when z = 1,
// 0 otherwise (as the cpu backend).
template <typename T>
DEVICE void segment_prod_bwd_impl(const i64 *indptr, const T *e, const T *dout, T *de, i64 rows, i64 C) {
	for (i64 t = gtid(); t < rows * C; t += gstride()) {
		i64 r = t / C, c = t % C, k0 = indptr[r], k1 = indptr[r + 1], zeros = 0;
		T p = (T)1;
		for (i64 k = k0; k < k1; k++) {
			T v = e[k * C + c];
			if (v == (T)0)
				zeros++;
			else
				p *= v;
		}
		T dy = dout[t];
		for (i64 k = k0; k < k1; k++) {
			T v = e[k * C + c];
			T g = (T)0;
			if (zeros == 0)
				g = dy * p / v;
			else if (zeros == 1 && v == (T)0)
				g = dy * p;
			de[k * C + c] = g;
		}
	}
}

// ------------------------------------------------------------ entry points

#define T_KERNELS(T, S)                                                                                            \
	KERNEL(fill_##S, (T * y, i64 n, double v)) { fill_impl<T>(y, n, v); }                                      \
	KERNEL(segment_prod_##S, (const i64 *indptr, const T *e, T *out, i64 rows, i64 C)) {                       \
		segment_prod_impl<T>(indptr, e, out, rows, C);                                                     \
	}                                                                                                          \
	KERNEL(segment_prod_bwd_##S, (const i64 *indptr, const T *e, const T *dout, T *de, i64 rows, i64 C)) {     \
		segment_prod_bwd_impl<T>(indptr, e, dout, de, rows, C);                                            \
	}                                                                                                          \
	KERNEL(axpby_##S, (const T *x, T *y, i64 n, double alpha, double beta)) {                                  \
		axpby_impl<T>(x, y, n, alpha, beta);                                                               \
	}                                                                                                          \
	KERNEL(apply_##S, (i64 f, double alpha, const T *x, T *y, i64 n)) { apply_impl<T>(f, alpha, x, y, n); }   \
	KERNEL(apply_bwd_##S, (i64 f, double alpha, const T *x, const T *y, const T *dy, T *dx, i64 n)) {         \
		apply_bwd_impl<T>(f, alpha, x, y, dy, dx, n);                                                      \
	}                                                                                                          \
	KERNEL(binary_##S, (i64 op, const T *a, const T *b, T *y, i64 n, i64 cols)) {                              \
		binary_impl<T>(op, a, b, y, n, cols);                                                              \
	}                                                                                                          \
	KERNEL(dropout_##S, (u64 base, u64 thr, double scale, T *mask, const T *x, T *y, i64 n, const i64 *keys,   \
			     i64 cols)) {                                                                          \
		dropout_impl<T>(base, thr, scale, mask, x, y, n, keys, cols);                                      \
	}                                                                                                          \
	KERNEL(colsum_##S, (i64 mode, const T *x, const T *dy, const double *mu, const double *inv, i64 n, i64 c,  \
			    i64 chunk, double *part)) {                                                            \
		colsum_impl<T>(mode, x, dy, mu, inv, n, c, chunk, part);                                           \
	}                                                                                                          \
	KERNEL(sum_rows_final_##S, (const double *part, i64 nb, i64 c, T *y)) {                                    \
		sum_rows_final_impl<T>(part, nb, c, y);                                                            \
	}                                                                                                          \
	KERNEL(bn_mean_##S, (const double *part, i64 nb, i64 c, i64 n, double *mu, T *mean)) {                    \
		bn_mean_impl<T>(part, nb, c, n, mu, mean);                                                         \
	}                                                                                                          \
	KERNEL(bn_inv_##S, (const double *part, i64 nb, i64 c, i64 n, double eps, double *inv, T *invstd)) {      \
		bn_inv_impl<T>(part, nb, c, n, eps, inv, invstd);                                                  \
	}                                                                                                          \
	KERNEL(bn_norm_##S, (const T *x, const double *mu, const double *inv, const T *gamma, const T *beta, T *y, \
			     i64 n, i64 c)) {                                                                      \
		bn_norm_impl<T>(x, mu, inv, gamma, beta, y, n, c);                                                 \
	}                                                                                                          \
	KERNEL(bn_infer_##S, (const T *x, const T *gamma, const T *beta, const T *mean, const T *var, T *y, i64 n,   \
			      i64 c, double eps)) {                                                                \
		bn_infer_impl<T>(x, gamma, beta, mean, var, y, n, c, eps);                                         \
	}                                                                                                          \
	KERNEL(bn_bwd_final_##S, (const double *part, i64 nb, i64 c, double *sums, T *dbeta, T *dgamma)) {        \
		bn_bwd_final_impl<T>(part, nb, c, sums, dbeta, dgamma);                                            \
	}                                                                                                          \
	KERNEL(bn_bwd_dx_##S, (const T *x, const T *gamma, const T *dy, const T *mean, const T *invstd,           \
			       const double *sums, T *dx, i64 n, i64 c)) {                                         \
		bn_bwd_dx_impl<T>(x, gamma, dy, mean, invstd, sums, dx, n, c);                                     \
	}                                                                                                          \
	KERNEL(head_dot_##S, (const T *x, const T *a, T *y, i64 N, i64 H, i64 C)) {                                \
		head_dot_impl<T>(x, a, y, N, H, C);                                                                \
	}                                                                                                          \
	KERNEL(head_dot_dx_##S, (const T *a, const T *dy, T *dx, i64 N, i64 H, i64 C)) {                           \
		head_dot_dx_impl<T>(a, dy, dx, N, H, C);                                                           \
	}                                                                                                          \
	KERNEL(head_dot_da_part_##S, (const T *x, const T *dy, i64 N, i64 H, i64 C, i64 chunk, double *part)) {   \
		head_dot_da_part_impl<T>(x, dy, N, H, C, chunk, part);                                             \
	}                                                                                                          \
	KERNEL(add_colsum_##S, (const double *part, i64 nb, i64 c, T *y)) { add_colsum_impl<T>(part, nb, c, y); } \
	KERNEL(argmax_rows_##S, (const T *x, int *out, i64 n, i64 k)) { argmax_rows_impl<T>(x, out, n, k); }       \
	KERNEL(adam_##S, (T * p, const T *g, T *m, T *v, i64 n, double lr, double b1, double b2, double eps,       \
			  double wd, double bc1, double bc2)) {                                                    \
		adam_impl<T>(p, g, m, v, n, lr, b1, b2, eps, wd, bc1, bc2);                                        \
	}                                                                                                          \
	KERNEL(row_reduce_##S, (i64 mode, const i64 *indptr, const i64 *perm, const T *v, const T *v2, T *out,     \
				i64 rows, i64 H, i64 heavy)) {                                                     \
		row_reduce_impl<T>(mode, indptr, perm, v, v2, out, rows, H, heavy);                                \
	}                                                                                                          \
	KERNEL(row_chunk_##S, (i64 mode, const i64 *ck0, const i64 *ck1, const i64 *perm, const T *v, const T *v2, \
			       T *part, i64 nch, i64 H)) {                                                         \
		row_chunk_impl<T>(mode, ck0, ck1, perm, v, v2, part, nch, H);                                      \
	}                                                                                                          \
	KERNEL(row_heavy_##S, (i64 mode, const i64 *hrow, const i64 *hoff, const T *part, T *out, i64 nh, i64 H)) { \
		row_heavy_impl<T>(mode, hrow, hoff, part, out, nh, H);                                             \
	}                                                                                                          \
	KERNEL(spmm_heavy_##S, (const i64 *hrow, const i64 *hoff, const T *part, double beta, T *y, i64 nh, i64 F)) { \
		spmm_heavy_impl<T>(hrow, hoff, part, beta, y, nh, F);                                              \
	}                                                                                                          \
	KERNEL(lstm_cell_##S, (i64 n, i64 H, i64 nnext, T *g, const T *cprev, T *cout, T *hnext, T *out,          \
			       const i64 *order)) {                                                                \
		lstm_cell_impl<T>(n, H, nnext, g, cprev, cout, hnext, out, order);                                 \
	}                                                                                                          \
	KERNEL(lstm_cell_bwd_##S, (i64 n, i64 H, i64 nnext, T *g, const T *c, const T *cprev, const T *dhp,       \
				   const T *dout, const i64 *order, T *dcs)) {                                     \
		lstm_cell_bwd_impl<T>(n, H, nnext, g, c, cprev, dhp, dout, order, dcs);                            \
	}

// segment_select: per row r and column c of e [nnz,C], one in-edge value
// and its position (idx, -1 and 0 for none): the nth edge (nth >= 0) or
// the floor(q·(d-1))-th smallest of the row's d values, ties in edge order
// (as the cpu backend's stable sort). O(d²) per thread.
template <typename T, typename I>
DEVICE void segment_select_impl(const i64 *indptr, const T *e, T *out, I *idx, i64 rows, i64 C, double q, i64 nth) {
	for (i64 t = gtid(); t < rows * C; t += gstride()) {
		i64 r = t / C, c = t % C;
		i64 k0 = indptr[r], k1 = indptr[r + 1], d = k1 - k0;
		i64 pick = -1;
		if (nth >= 0) {
			if (nth < d)
				pick = k0 + nth;
		} else if (d > 0) {
			i64 want = (i64)(q * (double)(d - 1));
			for (i64 k = k0; k < k1 && pick < 0; k++) {
				T v = e[k * C + c];
				i64 rank = 0;
				for (i64 j = k0; j < k1; j++) {
					T u = e[j * C + c];
					if (u < v || (u == v && j < k))
						rank++;
				}
				if (rank == want)
					pick = k;
			}
		}
		out[t] = pick < 0 ? (T)0 : e[pick * C + c];
		idx[t] = (I)pick;
	}
}

// Kernels with one index type I: graph column ids or index tensors.
#define TI_KERNELS(T, S, I, IS)                                                                                    \
	KERNEL(segment_select_##S##_##IS, (const i64 *indptr, const T *e, T *out, I *idx, i64 rows, i64 C, double q, \
					   i64 nth)) {                                                     \
		segment_select_impl<T, I>(indptr, e, out, idx, rows, C, q, nth);                                   \
	}                                                                                                          \
	KERNEL(softmax_ce_##S##_##IS, (const T *z, const int *labels, const I *idx, i64 m, i64 n, i64 k, T *dz,   \
				       double *loss, int *err)) {                                                  \
		softmax_ce_impl<T, I>(z, labels, idx, m, n, k, dz, loss, err);                                     \
	}                                                                                                          \
	KERNEL(target_loss_##S##_##IS, (const T *x, const T *y, const I *idx, i64 m, i64 n, i64 k, i64 mse, T *dz, \
					double *loss, int *err)) {                                                  \
		target_loss_impl<T, I>(x, y, idx, m, n, k, mse, dz, loss, err);                                    \
	}                                                                                                          \
	KERNEL(scatter_add_##S##_##IS, (const T *x, const I *idx, T *y, i64 yrows, i64 n, i64 c, int *err)) {     \
		scatter_add_impl<T, I>(x, idx, y, yrows, n, c, err);                                               \
	}                                                                                                          \
	KERNEL(scatter_argmax_##S##_##IS, (const I *am, const T *dy, T *dx, i64 dxrows, i64 n, i64 f, int *err)) { \
		scatter_argmax_impl<T, I>(am, dy, dx, dxrows, n, f, err);                                          \
	}                                                                                                          \
	KERNEL(spmm_##S##_##IS, (const i64 *indptr, const I *idx, const i64 *perm, const T *w, i64 mode, i64 H,     \
				 i64 C, const T *x, double beta, T *y, i64 rows, i64 heavy)) {                     \
		spmm_impl<T, I>(indptr, idx, perm, w, mode, H, C, x, beta, y, rows, heavy);                        \
	}                                                                                                          \
	KERNEL(spmm_chunk_##S##_##IS, (const i64 *ck0, const i64 *ck1, const I *idx, const i64 *perm, const T *w,   \
				       i64 mode, i64 H, i64 C, const T *x, T *part, i64 nch)) {                    \
		spmm_chunk_impl<T, I>(ck0, ck1, idx, perm, w, mode, H, C, x, part, nch);                           \
	}                                                                                                          \
	KERNEL(edge_exp_##S##_##IS, (const I *erow, const T *s, const T *rowmax, T *out, i64 nnz, i64 H)) {        \
		edge_exp_impl<T, I>(erow, s, rowmax, out, nnz, H);                                                 \
	}                                                                                                          \
	KERNEL(edge_div_##S##_##IS, (const I *erow, const T *rowsum, T *out, i64 nnz, i64 H)) {                    \
		edge_div_impl<T, I>(erow, rowsum, out, nnz, H);                                                    \
	}                                                                                                          \
	KERNEL(edge_softmax_bwd_##S##_##IS, (const I *erow, const T *out, const T *dout, const T *d, T *ds, i64 nnz, \
					     i64 H)) {                                                     \
		edge_softmax_bwd_impl<T, I>(erow, out, dout, d, ds, nnz, H);                                       \
	}                                                                                                          \
	KERNEL(sddmm_##S##_##IS, (const I *erow, const I *idx, const T *x, const T *y, T *out, i64 nnz, i64 H,      \
				  i64 C)) {                                                                        \
		sddmm_impl<T, I>(erow, idx, x, y, out, nnz, H, C);                                                 \
	}                                                                                                          \
	KERNEL(uaddv_##S##_##IS, (const I *erow, const I *idx, const T *u, const T *v, T *out, i64 nnz, i64 H)) {  \
		uaddv_impl<T, I>(erow, idx, u, v, out, nnz, H);                                                    \
	}                                                                                                          \
	KERNEL(lstm_gather_##S##_##IS, (i64 n, i64 t, const i64 *indptr, const I *idx, const i64 *order,          \
					const T *xw, const T *bias, i64 G4, T *g)) {                               \
		lstm_gather_impl<T, I>(n, t, indptr, idx, order, xw, bias, G4, g);                                 \
	}                                                                                                          \
	KERNEL(lstm_scatter_##S##_##IS, (i64 S_, const i64 *bindptr, const I *bidx, const i64 *perm,              \
					 const i64 *indptr, const i64 *rank, const i64 *off, i64 G4, const T *dg,  \
					 T *dxw)) {                                                                \
		lstm_scatter_impl<T, I>(S_, bindptr, bidx, perm, indptr, rank, off, G4, dg, dxw);                  \
	}

// SpMMMax: graph index type I and argmax type J.
#define TIJ_KERNELS(T, S, I, IS, J, JS)                                                                            \
	KERNEL(spmm_max_##S##_##IS##_##JS, (const i64 *indptr, const I *idx, const T *x, T *y, J *am, i64 rows,   \
					    i64 F)) {                                                      \
		spmm_max_impl<T, I, J>(indptr, idx, x, y, am, rows, F);                                            \
	}

// Copies of any element type: Gather and CopyCols also move index tensors.
#define COPY_KERNELS(T, S)                                                                                         \
	KERNEL(copy_cols_##S, (T * dst, i64 dcols, i64 doff, const T *src, i64 scols, i64 soff, i64 rows, i64 w)) { \
		copy_cols_impl<T>(dst, dcols, doff, src, scols, soff, rows, w);                                   \
	}                                                                                                          \
	KERNEL(gather_##S##_i32, (const T *x, i64 xrows, const int *idx, T *y, i64 n, i64 c, int *err)) {         \
		gather_impl<T, int>(x, xrows, idx, y, n, c, err);                                                  \
	}                                                                                                          \
	KERNEL(gather_##S##_i64, (const T *x, i64 xrows, const i64 *idx, T *y, i64 n, i64 c, int *err)) {         \
		gather_impl<T, i64>(x, xrows, idx, y, n, c, err);                                                  \
	}

COPY_KERNELS(float, f32)
COPY_KERNELS(double, f64)
COPY_KERNELS(int, i32)
COPY_KERNELS(i64, i64)
T_KERNELS(float, f32)
T_KERNELS(double, f64)
TI_KERNELS(float, f32, int, i32)
TI_KERNELS(float, f32, i64, i64)
TI_KERNELS(double, f64, int, i32)
TI_KERNELS(double, f64, i64, i64)
TIJ_KERNELS(float, f32, int, i32, int, i32)
TIJ_KERNELS(float, f32, int, i32, i64, i64)
TIJ_KERNELS(float, f32, i64, i64, int, i32)
TIJ_KERNELS(float, f32, i64, i64, i64, i64)
TIJ_KERNELS(double, f64, int, i32, int, i32)
TIJ_KERNELS(double, f64, int, i32, i64, i64)
TIJ_KERNELS(double, f64, i64, i64, int, i32)
TIJ_KERNELS(double, f64, i64, i64, i64, i64)

// Integer fills (Fill on index tensors).
KERNEL(fill_i32, (int *y, i64 n, double v)) { fill_impl<int>(y, n, v); }
KERNEL(fill_i64, (i64 * y, i64 n, double v)) { fill_impl<i64>(y, n, v); }
