/* mockcuda.c: a CPU mock of the CUDA driver API, built as libcuda.so.1 by
 * scripts/cuda/build-mock.sh (see docs/cuda.md).
 *
 * One device ("strata CPU mock", compute capability 9.0, 132 SMs), with
 * unified addressing: device pointers are host addresses from malloc, so a
 * kernel compiled on the host (kernels.cu with -DSTRATA_MOCK) reads them
 * directly. Everything runs synchronously on the calling thread; streams and
 * events are bookkeeping.
 *
 * The mock is as strict as a real GPU where that is cheap, so plumbing bugs
 * fail here rather than on the GPU machine:
 *  - calls before cuInit fail (3), calls that need a context fail without
 *    one current on the calling thread (201): contexts are per OS thread, as
 *    in CUDA, so a goroutine that is not locked to its thread shows up here;
 *  - cuMemAlloc charges a device of MOCKCUDA_MEM_BYTES (default 8 GiB) and
 *    fails with CUDA_ERROR_OUT_OF_MEMORY (2) beyond it; 0 bytes is invalid;
 *  - copies and memsets check that their device side lies inside one live
 *    allocation (1 otherwise); cuMemFree wants an allocation's base;
 *  - fresh device memory is filled with 0xff bytes (NaN as float/double, -1
 *    as int) unless MOCKCUDA_POISON=0, so reads of memory nobody wrote show;
 *  - a module is PTX text; cuModuleGetFunction(name) needs both ".entry
 *    name(" in it and a kernel of that name compiled into the mock, with the
 *    same number of parameters;
 *  - cuLaunchKernel enforces the launch limits of the device.
 * Diagnostics go to stderr ("mockcuda: ...") unless MOCKCUDA_QUIET=1.
 * MOCKCUDA_NODEVICE=1 makes cuInit fail with CUDA_ERROR_NO_DEVICE (100).
 * Every other symbol in symbols.txt is generated to return
 * CUDA_ERROR_NOT_SUPPORTED (801). */
#define _GNU_SOURCE
#include <cuda.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mock.h"

#define MOCK_DRIVER_VERSION 13000
#define MOCK_CC_MAJOR 9
#define MOCK_CC_MINOR 0
#define MOCK_SMS 132
/* an H100 SXM5's clocks (kHz) and memory bus (bits), as its driver reports them */
#define MOCK_CLOCK_KHZ 1980000
#define MOCK_MEM_CLOCK_KHZ 2619000
#define MOCK_BUS_BITS 5120
#define MOCK_PTX_MAX_MAJOR 9 /* the CUDA 13 driver takes PTX ISA <= 9.0 */
#define MOCK_PTX_MAX_MINOR 0
#define DEFAULT_MEM_BYTES (8ull << 30)

#define CTX_MAGIC 0x58544331u
#define STREAM_MAGIC 0x4d525453u
#define EVENT_MAGIC 0x544e5645u
#define MOD_MAGIC 0x31444f4du
#define FUNC_MAGIC 0x434e5546u

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
#define LOCK() pthread_mutex_lock(&mu)
#define UNLOCK() pthread_mutex_unlock(&mu)

static int initialized;
static size_t total_mem = DEFAULT_MEM_BYTES, used_mem;
static int poison = 1;

static struct {
	unsigned long long launches, allocs, frees, htod, dtoh, dtod, gemms;
} stats;

/* ------------------------------------------------------------ helpers -- */

void strata_mock_diag(const char *fmt, ...) {
	const char *q = getenv("MOCKCUDA_QUIET");
	if (q && strcmp(q, "1") == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	char buf[1024];
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	fprintf(stderr, "mockcuda: %s\n", buf);
}
#define diag strata_mock_diag

static size_t parse_bytes(const char *s, size_t dflt) {
	if (!s || !*s)
		return dflt;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	switch (*end) {
	case 'k': case 'K': v <<= 10; break;
	case 'm': case 'M': v <<= 20; break;
	case 'g': case 'G': v <<= 30; break;
	default: break;
	}
	return v ? (size_t)v : dflt;
}

/* ---------------------------------------------------------- contexts -- */

struct CUctx_st {
	unsigned magic;
	int alive;
	int primary;
	unsigned flags;
};

static struct CUctx_st primary_ctx = {CTX_MAGIC, 0, 1, 0};
static int primary_refs;

#define MAX_DEPTH 64
static __thread CUcontext ctx_stack[MAX_DEPTH];
static __thread int ctx_depth;

static CUcontext current(void) { return ctx_depth ? ctx_stack[ctx_depth - 1] : NULL; }

static int valid_ctx(CUcontext c) { return c && c->magic == CTX_MAGIC; }

/* Checks that the driver is initialised and a live context is current. */
static CUresult need_ctx(void) {
	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	CUcontext c = current();
	if (!c)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!c->alive)
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	return CUDA_SUCCESS;
}
#define NEED_INIT()                                    \
	do {                                               \
		if (!initialized)                              \
			return CUDA_ERROR_NOT_INITIALIZED;         \
	} while (0)
#define NEED_CTX()                                     \
	do {                                               \
		CUresult r_ = need_ctx();                      \
		if (r_)                                        \
			return r_;                                 \
	} while (0)

/* -------------------------------------------------------- allocations -- */

enum { K_DEVICE = 1, K_MANAGED, K_HOST, K_REGISTERED };

struct alloc {
	uintptr_t base;
	size_t size;
	size_t charged; /* against the device's memory */
	int kind;
	CUcontext ctx;
};

/* Sorted by base; allocations never overlap. Guarded by mu. */
static struct alloc *tab;
static size_t ntab, captab;

/* Index of the last allocation with base <= p, or -1. */
static long find_le(uintptr_t p) {
	long lo = 0, hi = (long)ntab - 1, r = -1;
	while (lo <= hi) {
		long m = (lo + hi) / 2;
		if (tab[m].base <= p) {
			r = m;
			lo = m + 1;
		} else {
			hi = m - 1;
		}
	}
	return r;
}

static struct alloc *containing(uintptr_t p) {
	long i = find_le(p);
	if (i < 0 || p >= tab[i].base + tab[i].size)
		return NULL;
	return &tab[i];
}

static int overlaps(uintptr_t p, size_t n) {
	long i = find_le(p + n - 1);
	return i >= 0 && tab[i].base + tab[i].size > p;
}

static int tab_insert(struct alloc a) {
	if (ntab == captab) {
		size_t nc = captab ? 2 * captab : 64;
		struct alloc *t = realloc(tab, nc * sizeof *t);
		if (!t)
			return -1;
		tab = t;
		captab = nc;
	}
	long i = find_le(a.base) + 1;
	memmove(&tab[i + 1], &tab[i], (ntab - (size_t)i) * sizeof *tab);
	tab[i] = a;
	ntab++;
	return 0;
}

static void tab_remove(struct alloc *a) {
	size_t i = (size_t)(a - tab);
	used_mem -= a->charged;
	memmove(&tab[i], &tab[i + 1], (ntab - i - 1) * sizeof *tab);
	ntab--;
}

static void release(struct alloc *a) {
	void *p = (void *)a->base;
	int kind = a->kind;
	tab_remove(a);
	if (kind != K_REGISTERED)
		free(p);
}

int strata_mock_device_range(const void *p, size_t bytes) {
	uintptr_t u = (uintptr_t)p;
	LOCK();
	struct alloc *a = containing(u);
	int ok = a && (bytes == 0 || (u + bytes >= u && u + bytes <= a->base + a->size));
	UNLOCK();
	return ok;
}

/* Checks a device-side range under mu; reports and returns
 * CUDA_ERROR_INVALID_VALUE when it is not inside one allocation. */
static CUresult check_range(const char *fn, const char *what, uintptr_t p, size_t n) {
	if (n == 0)
		return CUDA_SUCCESS;
	struct alloc *a = containing(p);
	if (a && p + n >= p && p + n <= a->base + a->size)
		return CUDA_SUCCESS;
	if (a)
		diag("%s: %s 0x%lx + %zu bytes runs %zu bytes past the end of its %zu-byte allocation", fn, what,
		     (unsigned long)p, n, (size_t)(p + n - (a->base + a->size)), a->size);
	else
		diag("%s: %s 0x%lx (%zu bytes) is not inside any device allocation", fn, what, (unsigned long)p, n);
	return CUDA_ERROR_INVALID_VALUE;
}

static void free_ctx_allocs(CUcontext c) {
	for (size_t i = ntab; i-- > 0;)
		if (tab[i].ctx == c)
			release(&tab[i]);
}

/* ------------------------------------------------------ init, device -- */

CUresult cuInit(unsigned int flags) {
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	const char *nd = getenv("MOCKCUDA_NODEVICE");
	if (nd && strcmp(nd, "1") == 0)
		return CUDA_ERROR_NO_DEVICE;
	LOCK();
	if (!initialized) {
		total_mem = parse_bytes(getenv("MOCKCUDA_MEM_BYTES"), DEFAULT_MEM_BYTES);
		const char *p = getenv("MOCKCUDA_POISON");
		poison = !(p && strcmp(p, "0") == 0);
		initialized = 1;
	}
	UNLOCK();
	return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *v) {
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	*v = MOCK_DRIVER_VERSION;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *n) {
	NEED_INIT();
	if (!n)
		return CUDA_ERROR_INVALID_VALUE;
	*n = 1;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
	NEED_INIT();
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	if (ordinal != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*d = 0;
	return CUDA_SUCCESS;
}

#define NEED_DEV(dev)                                  \
	do {                                               \
		NEED_INIT();                                   \
		if ((dev) != 0)                                \
			return CUDA_ERROR_INVALID_DEVICE;          \
	} while (0)

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
	NEED_DEV(dev);
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, (size_t)len, "%s", "strata CPU mock");
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) {
	NEED_DEV(dev);
	if (!uuid)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(uuid->bytes, "strata-mock-gpu0", 16);
	return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
	NEED_DEV(dev);
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	*bytes = total_mem;
	return CUDA_SUCCESS;
}

CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev) {
	NEED_DEV(dev);
	if (!major || !minor)
		return CUDA_ERROR_INVALID_VALUE;
	*major = MOCK_CC_MAJOR;
	*minor = MOCK_CC_MINOR;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
	NEED_DEV(dev);
	if (!pi || (int)attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	int v = 0;
	switch (attrib) {
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: v = MOCK_CC_MAJOR; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: v = MOCK_CC_MINOR; break;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: v = MOCK_SMS; break;
	case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: v = MOCK_CLOCK_KHZ; break;
	case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: v = MOCK_MEM_CLOCK_KHZ; break;
	case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: v = MOCK_BUS_BITS; break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: v = 1024; break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: v = 1024; break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: v = 1024; break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: v = 64; break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: v = 2147483647; break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: v = 65535; break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: v = 65535; break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: v = 2048; break;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE: v = 32; break;
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: v = 1; break;
	case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: v = 1; break;
	case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: v = 1; break;
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: v = 1; break;
	default: v = 0; break;
	}
	*pi = v;
	return CUDA_SUCCESS;
}

/* ----------------------------------------------------------- contexts -- */

static CUresult push(CUcontext c) {
	if (ctx_depth == MAX_DEPTH)
		return CUDA_ERROR_INVALID_VALUE;
	ctx_stack[ctx_depth++] = c;
	return CUDA_SUCCESS;
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
	NEED_DEV(dev);
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (ctx_depth == MAX_DEPTH)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUctx_st *c = calloc(1, sizeof *c); /* never freed: stale handles stay readable */
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*c = (struct CUctx_st){CTX_MAGIC, 1, 0, flags};
	push(c);
	*pctx = c;
	return CUDA_SUCCESS;
}

CUresult cuCtxDestroy_v2(CUcontext c) {
	NEED_INIT();
	if (!valid_ctx(c) || c->primary || !c->alive)
		return CUDA_ERROR_INVALID_CONTEXT;
	LOCK();
	free_ctx_allocs(c);
	c->alive = 0;
	UNLOCK();
	if (current() == c)
		ctx_depth--;
	return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext c) {
	NEED_INIT();
	if (!c) {
		if (ctx_depth)
			ctx_depth--;
		return CUDA_SUCCESS;
	}
	if (!valid_ctx(c))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (ctx_depth)
		ctx_stack[ctx_depth - 1] = c;
	else
		push(c);
	return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx) {
	NEED_INIT();
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = current();
	return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext c) {
	NEED_INIT();
	if (!valid_ctx(c))
		return CUDA_ERROR_INVALID_CONTEXT;
	return push(c);
}

CUresult cuCtxPopCurrent_v2(CUcontext *pctx) {
	NEED_INIT();
	if (!ctx_depth)
		return CUDA_ERROR_INVALID_CONTEXT;
	CUcontext c = ctx_stack[--ctx_depth];
	if (pctx)
		*pctx = c;
	return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
	NEED_CTX();
	return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *d) {
	NEED_CTX();
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	*d = 0;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetApiVersion(CUcontext c, unsigned int *v) {
	NEED_INIT();
	if (!c)
		c = current();
	if (!valid_ctx(c))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	*v = 3020;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetFlags(unsigned int *flags) {
	NEED_CTX();
	if (!flags)
		return CUDA_ERROR_INVALID_VALUE;
	*flags = current()->flags;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) {
	NEED_CTX();
	if (least)
		*least = 0;
	if (greatest)
		*greatest = -5;
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
	NEED_DEV(dev);
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	primary_refs++;
	primary_ctx.alive = 1;
	UNLOCK();
	*pctx = &primary_ctx;
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
	NEED_DEV(dev);
	LOCK();
	if (primary_refs == 0) {
		UNLOCK();
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	if (--primary_refs == 0) {
		free_ctx_allocs(&primary_ctx);
		primary_ctx.alive = 0;
	}
	UNLOCK();
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
	NEED_DEV(dev);
	LOCK();
	free_ctx_allocs(&primary_ctx);
	primary_refs = 0;
	primary_ctx.alive = 0;
	UNLOCK();
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
	NEED_DEV(dev);
	if (!flags || !active)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	*flags = primary_ctx.flags;
	*active = primary_ctx.alive;
	UNLOCK();
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
	NEED_DEV(dev);
	LOCK();
	primary_ctx.flags = flags;
	UNLOCK();
	return CUDA_SUCCESS;
}

/* ------------------------------------------------------------- memory -- */

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
	NEED_CTX();
	if (!free_bytes || !total)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	*total = total_mem;
	*free_bytes = total_mem - used_mem;
	UNLOCK();
	return CUDA_SUCCESS;
}

static CUresult dev_alloc(CUdeviceptr *dptr, size_t bytes, int kind) {
	NEED_CTX();
	if (!dptr || bytes == 0)
		return CUDA_ERROR_INVALID_VALUE;
	size_t charged = (bytes + 511) & ~(size_t)511; /* the driver's granularity */
	if (charged < bytes)
		return CUDA_ERROR_OUT_OF_MEMORY;
	LOCK();
	if (charged > total_mem - used_mem) {
		UNLOCK();
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	void *p = aligned_alloc(256, charged);
	if (!p) {
		UNLOCK();
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (tab_insert((struct alloc){(uintptr_t)p, bytes, charged, kind, current()})) {
		free(p);
		UNLOCK();
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	used_mem += charged;
	stats.allocs++;
	int fill = poison;
	UNLOCK();
	if (fill)
		memset(p, 0xff, bytes);
	*dptr = (CUdeviceptr)(uintptr_t)p;
	return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes) { return dev_alloc(dptr, bytes, K_DEVICE); }

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytes, unsigned int flags) {
	if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
		return CUDA_ERROR_INVALID_VALUE;
	return dev_alloc(dptr, bytes, K_MANAGED);
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
	NEED_CTX();
	if (dptr == 0)
		return CUDA_SUCCESS;
	LOCK();
	struct alloc *a = containing((uintptr_t)dptr);
	if (!a || a->base != (uintptr_t)dptr || (a->kind != K_DEVICE && a->kind != K_MANAGED)) {
		UNLOCK();
		diag("cuMemFree: 0x%lx is not the start of a device allocation", (unsigned long)dptr);
		return CUDA_ERROR_INVALID_VALUE;
	}
	release(a);
	stats.frees++;
	UNLOCK();
	return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr) {
	NEED_CTX();
	LOCK();
	struct alloc *a = containing((uintptr_t)dptr);
	if (!a || (a->kind != K_DEVICE && a->kind != K_MANAGED)) {
		UNLOCK();
		return CUDA_ERROR_NOT_FOUND;
	}
	if (pbase)
		*pbase = (CUdeviceptr)a->base;
	if (psize)
		*psize = a->size;
	UNLOCK();
	return CUDA_SUCCESS;
}

CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned int flags) {
	NEED_CTX();
	if (!pp || bytes == 0 ||
	    (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED)))
		return CUDA_ERROR_INVALID_VALUE;
	size_t rounded = (bytes + 4095) & ~(size_t)4095;
	void *p = aligned_alloc(4096, rounded);
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	LOCK();
	int bad = tab_insert((struct alloc){(uintptr_t)p, bytes, 0, K_HOST, current()});
	UNLOCK();
	if (bad) {
		free(p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*pp = p;
	return CUDA_SUCCESS;
}

CUresult cuMemFreeHost(void *p) {
	NEED_CTX();
	LOCK();
	struct alloc *a = containing((uintptr_t)p);
	if (!p || !a || a->base != (uintptr_t)p || a->kind != K_HOST) {
		UNLOCK();
		diag("cuMemFreeHost: %p is not the start of a cuMemHostAlloc allocation", p);
		return CUDA_ERROR_INVALID_VALUE;
	}
	release(a);
	UNLOCK();
	return CUDA_SUCCESS;
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int flags) {
	NEED_CTX();
	if (!pdptr || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct alloc *a = containing((uintptr_t)p);
	int ok = a && (a->kind == K_HOST || a->kind == K_REGISTERED);
	UNLOCK();
	if (!ok) {
		diag("cuMemHostGetDevicePointer: %p is not in pinned (cuMemHostAlloc/cuMemHostRegister) memory", p);
		return CUDA_ERROR_INVALID_VALUE;
	}
	*pdptr = (CUdeviceptr)(uintptr_t)p; /* unified addressing: the same address */
	return CUDA_SUCCESS;
}

CUresult cuMemHostRegister_v2(void *p, size_t bytes, unsigned int flags) {
	NEED_CTX();
	if (!p || bytes == 0 ||
	    (flags & ~(unsigned)(CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
	                         CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY)))
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	if (overlaps((uintptr_t)p, bytes)) {
		UNLOCK();
		return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	}
	int bad = tab_insert((struct alloc){(uintptr_t)p, bytes, 0, K_REGISTERED, current()});
	UNLOCK();
	return bad ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

CUresult cuMemHostUnregister(void *p) {
	NEED_CTX();
	LOCK();
	struct alloc *a = containing((uintptr_t)p);
	if (!p || !a || a->base != (uintptr_t)p || a->kind != K_REGISTERED) {
		UNLOCK();
		return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
	}
	release(a);
	UNLOCK();
	return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr) {
	NEED_INIT();
	if (!data)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct alloc *a = containing((uintptr_t)ptr);
	if (!a) {
		UNLOCK();
		return CUDA_ERROR_INVALID_VALUE;
	}
	struct alloc c = *a;
	UNLOCK();
	int host = c.kind == K_HOST || c.kind == K_REGISTERED;
	switch (attribute) {
	case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data = c.ctx; break;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned int *)data = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(CUdeviceptr *)data = ptr; break;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		if (!host && c.kind != K_MANAGED)
			return CUDA_ERROR_INVALID_VALUE;
		*(void **)data = (void *)(uintptr_t)ptr;
		break;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned int *)data = c.kind == K_MANAGED; break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = 0; break;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data = (CUdeviceptr)c.base; break;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = c.size; break;
	case CU_POINTER_ATTRIBUTE_MAPPED: *(unsigned int *)data = 1; break;
	default: return CUDA_ERROR_NOT_SUPPORTED;
	}
	return CUDA_SUCCESS;
}

CUresult cuMemAdvise(CUdeviceptr p, size_t n, CUmem_advise advice, CUdevice dev) {
	(void)advice;
	(void)dev;
	NEED_CTX();
	LOCK();
	struct alloc *a = containing((uintptr_t)p);
	int ok = a && a->kind == K_MANAGED && (uintptr_t)p + n <= a->base + a->size;
	UNLOCK();
	return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* --------------------------------------------------- streams, events -- */

struct CUstream_st {
	unsigned magic;
	int alive;
	CUcontext ctx;
	unsigned flags;
	int priority;
};

struct CUevent_st {
	unsigned magic;
	int alive;
	CUcontext ctx;
	unsigned flags;
	int recorded;
	struct timespec t;
};

static CUresult check_stream(CUstream s) {
	if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
		return CUDA_SUCCESS;
	if (s->magic != STREAM_MAGIC || !s->alive)
		return CUDA_ERROR_INVALID_HANDLE;
	if (s->ctx != current()) {
		diag("stream %p belongs to another context than the current one", (void *)s);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	return CUDA_SUCCESS;
}
#define NEED_STREAM(s)                                 \
	do {                                               \
		NEED_CTX();                                    \
		CUresult r_ = check_stream(s);                 \
		if (r_)                                        \
			return r_;                                 \
	} while (0)

static int valid_event(CUevent e) { return e && e->magic == EVENT_MAGIC && e->alive; }

CUresult cuStreamCreateWithPriority(CUstream *ps, unsigned int flags, int priority) {
	NEED_CTX();
	if (!ps || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	struct CUstream_st *s = calloc(1, sizeof *s); /* never freed: stale handles stay readable */
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (priority > 0)
		priority = 0;
	if (priority < -5)
		priority = -5;
	*s = (struct CUstream_st){STREAM_MAGIC, 1, current(), flags, priority};
	*ps = s;
	return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *ps, unsigned int flags) { return cuStreamCreateWithPriority(ps, flags, 0); }

CUresult cuStreamDestroy_v2(CUstream s) {
	NEED_CTX();
	if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD || s->magic != STREAM_MAGIC || !s->alive)
		return CUDA_ERROR_INVALID_HANDLE;
	s->alive = 0;
	return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream s) {
	NEED_STREAM(s);
	return CUDA_SUCCESS;
}

CUresult cuStreamQuery(CUstream s) {
	NEED_STREAM(s);
	return CUDA_SUCCESS;
}

CUresult cuStreamGetFlags(CUstream s, unsigned int *flags) {
	NEED_STREAM(s);
	if (!flags)
		return CUDA_ERROR_INVALID_VALUE;
	*flags = (s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD) ? s->flags : 0;
	return CUDA_SUCCESS;
}

CUresult cuStreamGetPriority(CUstream s, int *priority) {
	NEED_STREAM(s);
	if (!priority)
		return CUDA_ERROR_INVALID_VALUE;
	*priority = (s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD) ? s->priority : 0;
	return CUDA_SUCCESS;
}

CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
	NEED_STREAM(s);
	if (!valid_event(e))
		return CUDA_ERROR_INVALID_HANDLE;
	if (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *pe, unsigned int flags) {
	NEED_CTX();
	unsigned all = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
	if (!pe || (flags & ~all) ||
	    ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING)))
		return CUDA_ERROR_INVALID_VALUE;
	struct CUevent_st *e = calloc(1, sizeof *e); /* never freed: stale handles stay readable */
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	e->magic = EVENT_MAGIC;
	e->alive = 1;
	e->ctx = current();
	e->flags = flags;
	*pe = e;
	return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent e) {
	NEED_CTX();
	if (!valid_event(e))
		return CUDA_ERROR_INVALID_HANDLE;
	e->alive = 0;
	return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent e, CUstream s) {
	NEED_STREAM(s);
	if (!valid_event(e))
		return CUDA_ERROR_INVALID_HANDLE;
	if (e->ctx != current()) {
		diag("cuEventRecord: event %p belongs to another context than the current one", (void *)e);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	clock_gettime(CLOCK_MONOTONIC, &e->t);
	e->recorded = 1;
	return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent e) {
	NEED_INIT();
	return valid_event(e) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuEventQuery(CUevent e) {
	NEED_INIT();
	return valid_event(e) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
	NEED_CTX();
	if (!ms)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_event(start) || !valid_event(end) || !start->recorded || !end->recorded ||
	    ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING))
		return CUDA_ERROR_INVALID_HANDLE;
	*ms = (float)((double)(end->t.tv_sec - start->t.tv_sec) * 1e3 +
	              (double)(end->t.tv_nsec - start->t.tv_nsec) / 1e6);
	return CUDA_SUCCESS;
}

/* ------------------------------------------------------ copies, sets -- */

static CUresult copy(const char *fn, void *dst, const void *src, size_t n, int dst_dev, int src_dev,
                     unsigned long long *counter) {
	if (n == 0)
		return CUDA_SUCCESS;
	if (!dst || !src)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	CUresult r = CUDA_SUCCESS;
	if (dst_dev)
		r = check_range(fn, "destination", (uintptr_t)dst, n);
	if (!r && src_dev)
		r = check_range(fn, "source", (uintptr_t)src, n);
	if (!r && counter)
		*counter += n;
	UNLOCK();
	if (r)
		return r;
	memmove(dst, src, n);
	return CUDA_SUCCESS;
}

#define D(p) ((void *)(uintptr_t)(p))

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
	NEED_CTX();
	return copy("cuMemcpy", D(dst), D(src), n, 0, 0, NULL);
}
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
	NEED_STREAM(s);
	return copy("cuMemcpyAsync", D(dst), D(src), n, 0, 0, NULL);
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
	NEED_CTX();
	return copy("cuMemcpyHtoD", D(dst), src, n, 1, 0, &stats.htod);
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
	NEED_STREAM(s);
	return copy("cuMemcpyHtoDAsync", D(dst), src, n, 1, 0, &stats.htod);
}
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
	NEED_CTX();
	return copy("cuMemcpyDtoH", dst, D(src), n, 0, 1, &stats.dtoh);
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s) {
	NEED_STREAM(s);
	return copy("cuMemcpyDtoHAsync", dst, D(src), n, 0, 1, &stats.dtoh);
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
	NEED_CTX();
	return copy("cuMemcpyDtoD", D(dst), D(src), n, 1, 1, &stats.dtod);
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
	NEED_STREAM(s);
	return copy("cuMemcpyDtoDAsync", D(dst), D(src), n, 1, 1, &stats.dtod);
}

static CUresult set(const char *fn, CUdeviceptr dst, unsigned int v, size_t elem, size_t n) {
	if (n == 0)
		return CUDA_SUCCESS;
	if ((uintptr_t)dst % elem) {
		diag("%s: destination 0x%lx is not %zu-byte aligned", fn, (unsigned long)dst, elem);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (n > SIZE_MAX / elem)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	CUresult r = check_range(fn, "destination", (uintptr_t)dst, n * elem);
	UNLOCK();
	if (r)
		return r;
	unsigned char *p = D(dst);
	if (elem == 1) {
		memset(p, (int)(v & 0xff), n);
	} else if (elem == 2) {
		unsigned short s = (unsigned short)v;
		for (size_t i = 0; i < n; i++)
			memcpy(p + 2 * i, &s, 2);
	} else {
		for (size_t i = 0; i < n; i++)
			memcpy(p + 4 * i, &v, 4);
	}
	return CUDA_SUCCESS;
}

CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t n) {
	NEED_CTX();
	return set("cuMemsetD8", dst, v, 1, n);
}
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
	NEED_STREAM(s);
	return set("cuMemsetD8Async", dst, v, 1, n);
}
CUresult cuMemsetD16_v2(CUdeviceptr dst, unsigned short v, size_t n) {
	NEED_CTX();
	return set("cuMemsetD16", dst, v, 2, n);
}
CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short v, size_t n, CUstream s) {
	NEED_STREAM(s);
	return set("cuMemsetD16Async", dst, v, 2, n);
}
CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int v, size_t n) {
	NEED_CTX();
	return set("cuMemsetD32", dst, v, 4, n);
}
CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int v, size_t n, CUstream s) {
	NEED_STREAM(s);
	return set("cuMemsetD32Async", dst, v, 4, n);
}

CUresult cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUdevice dev, CUstream s) {
	NEED_STREAM(s);
	if (dev != 0 && dev != CU_DEVICE_CPU)
		return CUDA_ERROR_INVALID_DEVICE;
	LOCK();
	struct alloc *a = containing((uintptr_t)p);
	int ok = a && a->kind == K_MANAGED && (uintptr_t)p + n <= a->base + a->size;
	UNLOCK();
	return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---------------------------------------------------- kernel registry -- */

struct kreg {
	const char *name;
	strata_mock_entry entry;
	int nparams;
};

#define MAX_KERNELS 4096
static struct kreg kregs[MAX_KERNELS];
static int nkregs;

int strata_mock_register_kernel(const char *name, strata_mock_entry entry, int nparams) {
	int r = 0;
	LOCK();
	for (int i = 0; i < nkregs; i++)
		if (strcmp(kregs[i].name, name) == 0)
			r = -1;
	if (r == 0 && nkregs < MAX_KERNELS)
		kregs[nkregs++] = (struct kreg){name, entry, nparams};
	else if (r == 0)
		r = -2;
	UNLOCK();
	if (r == -1)
		diag("kernel %s is registered twice; keeping the first", name);
	if (r == -2)
		diag("more than %d kernels; %s not registered", MAX_KERNELS, name);
	return r ? -1 : 0;
}

static const struct kreg *find_kernel(const char *name) {
	const struct kreg *k = NULL;
	LOCK();
	for (int i = 0; i < nkregs; i++)
		if (strcmp(kregs[i].name, name) == 0)
			k = &kregs[i];
	UNLOCK();
	return k;
}

unsigned long long strata_mock_stat(const char *name) {
	unsigned long long v = 0;
	LOCK();
	if (!strcmp(name, "launches")) v = stats.launches;
	else if (!strcmp(name, "allocs")) v = stats.allocs;
	else if (!strcmp(name, "frees")) v = stats.frees;
	else if (!strcmp(name, "alloc_bytes")) v = used_mem;
	else if (!strcmp(name, "htod_bytes")) v = stats.htod;
	else if (!strcmp(name, "dtoh_bytes")) v = stats.dtoh;
	else if (!strcmp(name, "dtod_bytes")) v = stats.dtod;
	else if (!strcmp(name, "gemms")) v = stats.gemms;
	UNLOCK();
	return v;
}

/* Called by the mock cuBLAS (found with dlsym) to count GEMMs. */
void strata_mock_count_gemm(void) {
	LOCK();
	stats.gemms++;
	UNLOCK();
}

/* ------------------------------------------------------------ modules -- */

struct CUfunc_st {
	unsigned magic;
	struct CUmod_st *mod;
	const struct kreg *k;
	struct CUfunc_st *next;
};

struct CUmod_st {
	unsigned magic;
	int alive;
	CUcontext ctx;
	char *image;
	struct CUfunc_st *funcs;
};

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Finds ".entry NAME(" in PTX text; returns the number of its .param
 * declarations, or -1 when there is no such entry. */
static int ptx_entry(const char *img, const char *name) {
	size_t nl = strlen(name);
	for (const char *p = img; (p = strstr(p, ".entry")); p += 6) {
		const char *q = p + 6;
		if (!is_space(*q))
			continue;
		while (is_space(*q))
			q++;
		if (strncmp(q, name, nl) != 0)
			continue;
		q += nl;
		while (is_space(*q))
			q++;
		if (*q != '(')
			continue;
		const char *end = strchr(q, ')');
		if (!end)
			return -1;
		int n = 0;
		for (const char *r = q; (r = strstr(r, ".param")) && r < end; r += 6)
			n++;
		return n;
	}
	return -1;
}

static CUresult load(CUmodule *pm, const void *image, const char *fn) {
	NEED_CTX();
	if (!pm || !image)
		return CUDA_ERROR_INVALID_VALUE;
	const unsigned char *b = image;
	if ((b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F') ||
	    (b[0] == 0x50 && b[1] == 0xed && b[2] == 0x55 && b[3] == 0xba) ||
	    (b[0] == 0xb1 && b[1] == 0x43 && b[2] == 0x62 && b[3] == 0x46)) {
		diag("%s: the mock loads PTX text only, not cubin/fatbin images", fn);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	const char *txt = image;
	const char *v = strstr(txt, ".version");
	const char *t = strstr(txt, ".target");
	int maj, min, sm;
	if (!v || !t || sscanf(v, ".version %d.%d", &maj, &min) != 2) {
		diag("%s: image is not PTX text (no .version/.target)", fn);
		return CUDA_ERROR_INVALID_IMAGE;
	}
	if (maj > MOCK_PTX_MAX_MAJOR || (maj == MOCK_PTX_MAX_MAJOR && min > MOCK_PTX_MAX_MINOR)) {
		diag("%s: PTX ISA %d.%d is newer than the driver's %d.%d", fn, maj, min, MOCK_PTX_MAX_MAJOR,
		     MOCK_PTX_MAX_MINOR);
		return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
	}
	if (sscanf(t, ".target sm_%d", &sm) != 1 || sm > 10 * MOCK_CC_MAJOR + MOCK_CC_MINOR) {
		diag("%s: PTX .target is not sm_XX <= sm_%d%d", fn, MOCK_CC_MAJOR, MOCK_CC_MINOR);
		return CUDA_ERROR_INVALID_PTX;
	}
	struct CUmod_st *m = calloc(1, sizeof *m); /* never freed: stale handles stay readable */
	char *copy_ = strdup(txt);
	if (!m || !copy_) {
		free(m);
		free(copy_);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	m->magic = MOD_MAGIC;
	m->alive = 1;
	m->ctx = current();
	m->image = copy_;
	*pm = m;
	return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *pm, const void *image) { return load(pm, image, "cuModuleLoadData"); }

CUresult cuModuleLoadDataEx(CUmodule *pm, const void *image, unsigned int nopts, CUjit_option *opts,
                            void **vals) {
	(void)nopts;
	(void)opts;
	(void)vals; /* JIT options change nothing here */
	return load(pm, image, "cuModuleLoadDataEx");
}

CUresult cuModuleLoad(CUmodule *pm, const char *fname) {
	NEED_CTX();
	if (!fname)
		return CUDA_ERROR_INVALID_VALUE;
	FILE *f = fopen(fname, "rb");
	if (!f)
		return CUDA_ERROR_FILE_NOT_FOUND;
	char *buf = NULL;
	size_t len = 0, cap = 0, n;
	char chunk[65536];
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
		if (len + n + 1 > cap) {
			cap = 2 * (len + n + 1);
			char *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				return CUDA_ERROR_OUT_OF_MEMORY;
			}
			buf = nb;
		}
		memcpy(buf + len, chunk, n);
		len += n;
	}
	fclose(f);
	if (!buf)
		return CUDA_ERROR_INVALID_IMAGE;
	buf[len] = 0;
	CUresult r = load(pm, buf, "cuModuleLoad");
	free(buf);
	return r;
}

CUresult cuModuleUnload(CUmodule m) {
	NEED_INIT();
	if (!m || m->magic != MOD_MAGIC || !m->alive)
		return CUDA_ERROR_INVALID_HANDLE;
	m->alive = 0;
	free(m->image);
	m->image = NULL;
	return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *pf, CUmodule m, const char *name) {
	NEED_CTX();
	if (!pf || !name)
		return CUDA_ERROR_INVALID_VALUE;
	if (!m || m->magic != MOD_MAGIC || !m->alive)
		return CUDA_ERROR_INVALID_HANDLE;
	for (struct CUfunc_st *f = m->funcs; f; f = f->next)
		if (strcmp(f->k->name, name) == 0) {
			*pf = f;
			return CUDA_SUCCESS;
		}
	int np = ptx_entry(m->image, name);
	if (np < 0) {
		diag("cuModuleGetFunction: the module's PTX has no \".entry %s(\"", name);
		return CUDA_ERROR_NOT_FOUND;
	}
	const struct kreg *k = find_kernel(name);
	if (!k) {
		diag("cuModuleGetFunction: the PTX has %s but no kernel of that name is compiled into the mock "
		     "(cuda/kernels/kernels.cu, rebuild with make cuda-mock)",
		     name);
		return CUDA_ERROR_NOT_FOUND;
	}
	if (k->nparams != np) {
		diag("cuModuleGetFunction: %s has %d parameters in the PTX but %d in the mock-compiled source: "
		     "the PTX is stale (make ptx)",
		     name, np, k->nparams);
		return CUDA_ERROR_INVALID_PTX;
	}
	struct CUfunc_st *f = calloc(1, sizeof *f);
	if (!f)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*f = (struct CUfunc_st){FUNC_MAGIC, m, k, m->funcs};
	m->funcs = f;
	*pf = f;
	return CUDA_SUCCESS;
}

static int valid_func(CUfunction f) { return f && f->magic == FUNC_MAGIC && f->mod->alive; }

CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction f) {
	NEED_INIT();
	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_func(f))
		return CUDA_ERROR_INVALID_HANDLE;
	switch (attrib) {
	case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
	case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 32; break;
	case CU_FUNC_ATTRIBUTE_PTX_VERSION: *pi = 78; break;
	case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 10 * MOCK_CC_MAJOR + MOCK_CC_MINOR; break;
	default: *pi = 0; break;
	}
	return CUDA_SUCCESS;
}

CUresult cuFuncSetCacheConfig(CUfunction f, CUfunc_cache config) {
	(void)config;
	NEED_INIT();
	return valid_func(f) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuFuncSetSharedMemConfig(CUfunction f, CUsharedconfig config) {
	(void)config;
	NEED_INIT();
	return valid_func(f) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *nb, CUfunction f, int block, size_t smem,
                                                              unsigned int flags) {
	(void)flags;
	NEED_INIT();
	if (!nb || block <= 0 || block > 1024 || smem > 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_func(f))
		return CUDA_ERROR_INVALID_HANDLE;
	int warps = (block + 31) / 32, n = 64 / warps;
	*nb = n > 32 ? 32 : n;
	return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *nb, CUfunction f, int block, size_t smem) {
	return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(nb, f, block, smem, 0);
}

/* ------------------------------------------------------------- launch -- */

CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                        unsigned int by, unsigned int bz, unsigned int smem, CUstream s, void **params,
                        void **extra) {
	NEED_STREAM(s);
	if (!valid_func(f))
		return CUDA_ERROR_INVALID_HANDLE;
	const char *name = f->k->name;
	if (!gx || !gy || !gz || !bx || !by || !bz) {
		diag("cuLaunchKernel %s: zero dimension in grid (%u,%u,%u) block (%u,%u,%u)", name, gx, gy, gz, bx, by,
		     bz);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (bx > 1024 || by > 1024 || bz > 64 || (unsigned long long)bx * by * bz > 1024) {
		diag("cuLaunchKernel %s: block (%u,%u,%u) exceeds 1024 threads (or 1024x1024x64)", name, bx, by, bz);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (gx > 2147483647u || gy > 65535 || gz > 65535) {
		diag("cuLaunchKernel %s: grid (%u,%u,%u) exceeds (2^31-1, 65535, 65535)", name, gx, gy, gz);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (smem) {
		diag("cuLaunchKernel %s: %u bytes of dynamic shared memory; strata kernels use none", name, smem);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (extra) {
		diag("cuLaunchKernel %s: the 'extra' parameter form is not supported by the mock", name);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (f->k->nparams > 0 && !params) {
		diag("cuLaunchKernel %s: no kernelParams for %d parameters", name, f->k->nparams);
		return CUDA_ERROR_INVALID_VALUE;
	}
	for (int i = 0; i < f->k->nparams; i++)
		if (!params[i]) {
			diag("cuLaunchKernel %s: kernelParams[%d] is NULL", name, i);
			return CUDA_ERROR_INVALID_VALUE;
		}
	LOCK();
	stats.launches++;
	UNLOCK();
	const unsigned int grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
	f->k->entry(params, grid, block);
	return CUDA_SUCCESS;
}
