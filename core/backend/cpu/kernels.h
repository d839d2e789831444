// kernels.h: entry points of the C kernels. dt selects the float type
// (0 float32, 1 float64) and it the integer type (0 int32, 1 int64) of the
// column ids, indices or argmax ids. Each call handles one chunk of rows.
#include <stdint.h>

void k_spmm(int dt, int it, int64_t r0, int64_t r1, const int64_t *indptr, const void *idx,
	    const int64_t *perm, const void *w, int64_t H, int64_t C, const void *x, double beta,
	    void *y);
void k_spmmt(int dt, int it, int64_t rows, const int64_t *indptr, const void *idx, const void *w,
	     int64_t H, int64_t C, const void *x, int64_t j0, int64_t j1, void *y);
void k_spmm_max(int dt, int it, int at, int64_t r0, int64_t r1, const int64_t *indptr,
		const void *idx, const void *x, int64_t F, void *y, void *am);
void k_sddmm(int dt, int it, int64_t r0, int64_t r1, const int64_t *indptr, const void *idx,
	     const void *x, const void *y, int64_t H, int64_t C, void *out);
void k_uaddv(int dt, int it, int64_t r0, int64_t r1, const int64_t *indptr, const void *idx,
	     const void *u, const void *v, int64_t H, void *out);
void k_scatter_add(int dt, int it, int64_t n, const void *idx, const void *x, int64_t F,
		   int64_t c0, int64_t c1, void *y);
void k_scatter_argmax(int dt, int it, int64_t n, const void *am, const void *dy, int64_t F,
		      int64_t c0, int64_t c1, void *dx);
void k_edge_reduce(int dt, int64_t r0, int64_t r1, const int64_t *indptr, const int64_t *perm,
		   const void *e, int64_t H, void *out);
void k_edge_softmax(int dt, int64_t r0, int64_t r1, const int64_t *indptr, const void *s,
		    int64_t H, void *out);
void k_edge_softmax_bwd(int dt, int64_t r0, int64_t r1, const int64_t *indptr, const void *out,
			const void *dout, int64_t H, void *ds);
void k_headdot(int dt, int64_t r0, int64_t r1, const void *x, const void *a, int64_t H,
	       int64_t C, void *y);
void k_headdot_dx(int dt, int64_t r0, int64_t r1, const void *a, const void *dy, int64_t H,
		  int64_t C, void *dx);
void k_headdot_da(int dt, int64_t r0, int64_t r1, const void *x, const void *dy, int64_t H,
		  int64_t C, double *part);
void k_lstm_gather(int dt, int64_t r0, int64_t r1, int64_t t, int it, const int64_t *indptr,
		   const void *idx, const int64_t *order, const void *xw, const void *bias,
		   int64_t G4, void *g);
void k_lstm_cell(int dt, int64_t r0, int64_t r1, int64_t H, int64_t nnext, void *g,
		 const void *cprev, void *cout, void *hnext, void *out, const int64_t *order);
void k_lstm_cell_bwd(int dt, int64_t r0, int64_t r1, int64_t H, int64_t nnext, void *g,
		     const void *c, const void *cprev, const void *dhp, const void *dout,
		     const int64_t *order, void *dcs);
void k_lstm_scatter(int dt, int64_t s0, int64_t s1, int it, const int64_t *bindptr,
		    const void *bidx, const int64_t *perm, const int64_t *indptr,
		    const int64_t *rank, const int64_t *off, int64_t G4, const void *dg,
		    void *dxw);
void k_gather(int it, int64_t r0, int64_t r1, const void *idx, const void *x, int64_t rowbytes,
	      void *y);
int k_has_avx512(void);
void k_dropout_f32(int wide, uint64_t base, uint64_t thr, float scale, int64_t lo, int64_t hi, float *mask,
		   const float *x, float *y);
void k_dropout_rows_f32(int wide, uint64_t base, uint64_t thr, float scale, const int64_t *keys, int64_t cols,
			int64_t r0, int64_t r1, float *mask, const float *x, float *y);
void k_dropout_block_f32(int wide, uint64_t base, uint64_t thr, float scale, const float *x, int64_t ldx,
			 const int64_t *keys, int64_t r0, int64_t r1, int64_t c0, int64_t c1, float *y, uint32_t *bits,
			 int64_t ldb, int mode);
void k_bias_relu_f32(int relu, int64_t rows, int64_t c, const float *b, float *y);
void k_relu_f32(int64_t n, const float *x, float *y);
void k_relu_bwd_f32(int64_t n, const float *x, const float *dy, float *dx);
void k_mul_f32(int64_t n, const float *a, const float *b, float *y);
void k_rows_f32(int mul, int64_t rows, int64_t c, const float *a, const float *b, float *y);
void k_leaky_f32(float alpha, int64_t n, const float *x, float *y);
void k_act_bwd_f32(int elu, float alpha, int64_t n, const float *x, const float *y,
		   const float *dy, float *dx);
void k_widen_block(int bf, const uint16_t *x, int64_t ldx, int64_t r0, int64_t r1, int64_t c0,
		   int64_t c1, float *y);
void k_dropout_block_h16(int bf, uint64_t base, uint64_t thr, float scale, const uint16_t *x,
			 int64_t ldx, const int64_t *keys, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
			 float *y, uint32_t *bits, int64_t ldb, int mode);
