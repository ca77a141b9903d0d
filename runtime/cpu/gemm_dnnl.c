/* gemm_dnnl.c - matmul through oneDNN's matmul primitive (issue 14's "onednn"
 * candidate): one 2-D primitive per node, created at its first run and cached
 * like dnnl.c's (key: node pointer, checked against the geometry and thread
 * count), run once per output matrix of the broadcast batch. */
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tune.h"

enum { BUCKETS = 256 };

/* what the primitive was built for: m, n, k, trans_a, trans_b, lda, ldb,
 * threads, with a bias (a matmul_epilogue's bias alone, cpu_dnnl_matmul) */
typedef struct {
    int64_t v[9];
} geometry;

typedef struct gemm {
    const ir_node *node;
    geometry geo;
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, c, bias, scratch; /* a, b, c, bias: handles set per run; scratch owned */
    void *scratch_data;
    dnnl_stream_t stream;
    struct gemm *next;
} gemm;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static dnnl_engine_t engine;
static gemm *table[BUCKETS];

static geometry geometry_of(const rt_kernel_args *k, const ir_matmul *g, int bias) {
    const ir_shape *a = IN_SHAPE(k, 0), *b = IN_SHAPE(k, 1);
    return (geometry){{g->m, g->n, g->k, k->node->iattr[0] != 0, k->node->iattr[1] != 0, a->dim[a->rank - 1],
                       b->dim[b->rank - 1], cpu_kernels_threads(), bias}};
}

static void gemm_free(gemm *e) {
    dnnl_memory_destroy(e->a), dnnl_memory_destroy(e->b), dnnl_memory_destroy(e->c), dnnl_memory_destroy(e->bias);
    dnnl_memory_destroy(e->scratch);
    if (e->prim) dnnl_primitive_destroy(e->prim);
    if (e->stream) dnnl_stream_destroy(e->stream);
    free(e->scratch_data);
    free(e);
}

/* op(A)[m, k] x op(B)[k, n] = C[m, n] with A, B row-major of leading dims lda, ldb */
static int build(const rt_kernel_args *k, char *err, size_t cap, gemm *e) {
    const int64_t *v = e->geo.v, m = v[0], n = v[1], kk = v[2], ta = v[3], tb = v[4], lda = v[5], ldb = v[6];
    dnnl_memory_desc_t am, bm, cm, biasm;
    DNNL_TRY(dnnl_memory_desc_init_by_strides(&am, 2, (dnnl_dims_t){m, kk}, dnnl_f32,
                                              ta ? (dnnl_dims_t){1, lda} : (dnnl_dims_t){lda, 1}));
    DNNL_TRY(dnnl_memory_desc_init_by_strides(&bm, 2, (dnnl_dims_t){kk, n}, dnnl_f32,
                                              tb ? (dnnl_dims_t){1, ldb} : (dnnl_dims_t){ldb, 1}));
    DNNL_TRY(dnnl_memory_desc_init_by_strides(&cm, 2, (dnnl_dims_t){m, n}, dnnl_f32, (dnnl_dims_t){n, 1}));
    DNNL_TRY(dnnl_memory_desc_init_by_strides(&biasm, 2, (dnnl_dims_t){1, n}, dnnl_f32, (dnnl_dims_t){n, 1}));
    dnnl_matmul_desc_t d;
    DNNL_TRY(dnnl_matmul_desc_init(&d, &am, &bm, v[8] ? &biasm : NULL, &cm));
    dnnl_primitive_attr_t attr;
    DNNL_TRY(dnnl_primitive_attr_create(&attr));
    dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    dnnl_primitive_desc_t pd;
    dnnl_status_t st = dnnl_primitive_desc_create(&pd, &d, attr, engine, NULL);
    dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success) return cpu_kerr(k, err, cap, "oneDNN has no matmul primitive for it (status %d)", (int)st);
    const dnnl_memory_desc_t *sm = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t bytes = sm ? dnnl_memory_desc_get_size(sm) : 0;
    if (bytes && !(e->scratch_data = aligned_alloc(64, (bytes + 63) / 64 * 64)))
        return dnnl_primitive_desc_destroy(pd), cpu_kerr(k, err, cap, "out of memory for a oneDNN scratchpad");
    st = dnnl_primitive_create(&e->prim, pd);
    if (st == dnnl_success && bytes) st = dnnl_memory_create(&e->scratch, sm, engine, e->scratch_data);
    dnnl_primitive_desc_destroy(pd);
    if (st != dnnl_success) return cpu_kerr(k, err, cap, "oneDNN cannot create the matmul (status %d)", (int)st);
    DNNL_TRY(dnnl_memory_create(&e->a, &am, engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&e->b, &bm, engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&e->c, &cm, engine, DNNL_MEMORY_NONE));
    if (v[8]) DNNL_TRY(dnnl_memory_create(&e->bias, &biasm, engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_stream_create(&e->stream, engine, dnnl_stream_default_flags));
    return 0;
}

/* The cached primitive of k->node, built on first use. */
static gemm *lookup(const rt_kernel_args *k, const ir_matmul *g, int bias, char *err, size_t cap) {
    size_t h = ((uintptr_t)k->node >> 4) % BUCKETS;
    geometry geo = geometry_of(k, g, bias);
    pthread_mutex_lock(&lock);
    gemm **pe = &table[h];
    while (*pe && (*pe)->node != k->node) pe = &(*pe)->next;
    gemm *e = *pe;
    if (e && memcmp(&e->geo, &geo, sizeof geo)) { /* stale: another node at the same address */
        *pe = e->next;
        gemm_free(e);
        e = NULL;
    }
    if (!e && !engine && dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success) {
        engine = NULL;
        cpu_kerr(k, err, cap, "cannot create the oneDNN CPU engine");
    } else if (!e && (e = calloc(1, sizeof *e))) {
        e->node = k->node, e->geo = geo;
        if (build(k, err, cap, e)) gemm_free(e), e = NULL;
        else e->next = table[h], table[h] = e;
    } else if (!e) {
        cpu_kerr(k, err, cap, "out of memory");
    }
    pthread_mutex_unlock(&lock);
    return e;
}

/* 1 when the primitive added a matmul_epilogue's bias (its whole epilogue:
 * no residual, no activation), 0 when the caller applies the epilogue, -1 on
 * failure. oneDNN adds the bias to each finished sum, the rounding of the
 * pass after it (kern_kernels' epilogue bits check it bit for bit). */
int cpu_dnnl_matmul(const rt_kernel_args *k, char *err, size_t cap) {
    ir_matmul g = ir_matmul_of(k->node, IN_SHAPE(k, 0), IN_SHAPE(k, 1));
    cpu_epilogue epi = cpu_epilogue_of(k);
    int bias = epi.bias && !epi.res && epi.act == EPI_NONE;
    cpu_dnnl_apply_threads(); /* before creation: primitives fix their thread count when created */
    gemm *e = lookup(k, &g, bias, err, cap);
    if (!e) return -1;
    dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, e->a}, {DNNL_ARG_WEIGHTS, e->b}, {DNNL_ARG_DST, e->c}};
    int n_args = 3;
    if (e->scratch) args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, e->scratch};
    if (bias) {
        args[n_args++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, e->bias};
        DNNL_TRY(dnnl_memory_set_data_handle(e->bias, (void *)epi.bias));
    }
    for (int64_t i = 0; i < g.batch; i++) {
        DNNL_TRY(dnnl_memory_set_data_handle(e->a, (void *)(IN_F32(k, 0) + ir_matmul_offset(&g, 0, i))));
        DNNL_TRY(dnnl_memory_set_data_handle(e->b, (void *)(IN_F32(k, 1) + ir_matmul_offset(&g, 1, i))));
        DNNL_TRY(dnnl_memory_set_data_handle(e->c, (float *)k->out + i * g.m * g.n));
        DNNL_TRY(dnnl_primitive_execute(e->prim, e->stream, n_args, args));
        DNNL_TRY(dnnl_stream_wait(e->stream));
    }
    return bias;
}
