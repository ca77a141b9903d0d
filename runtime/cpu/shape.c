/* shape.c - CPU kernels that move elements without arithmetic (concat,
 * slice, pad, transpose) and the extreme reductions (reduce_max, reduce_min).
 * Axes are collapsed first (size-1 axes dropped, neighbours that stay
 * neighbours merged) so most calls become a few long memcpy runs or one
 * blocked 2-D transpose. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include <float.h>
#include <string.h>

#include "kernels_impl.h"

/* ---- an odometer over some axes, moving two offsets (elements) at once ---- */

typedef struct {
    int n;
    int64_t dim[IR_MAX_RANK], sa[IR_MAX_RANK], sb[IR_MAX_RANK], idx[IR_MAX_RANK];
    int64_t a, b; /* current offsets into the two tensors */
} odometer;

/* Advances to the next index; false after the last. */
static bool odo_next(odometer *o) {
    for (int d = o->n - 1; d >= 0; d--) {
        o->a += o->sa[d], o->b += o->sb[d];
        if (++o->idx[d] < o->dim[d]) return true;
        o->a -= o->sa[d] * o->dim[d], o->b -= o->sb[d] * o->dim[d], o->idx[d] = 0;
    }
    return false;
}

static void strides_of(const ir_shape *s, int64_t *st) {
    int64_t t = 1;
    for (int i = s->rank - 1; i >= 0; i--) st[i] = t, t *= s->dim[i];
}

/* ---- box copies: concat, slice, pad ---- */

/* Copies the box `box` of src (shape ss, box corner soff) to dst (shape ds,
 * corner doff), f32. Trailing axes the box covers whole in both tensors join
 * the contiguous run. */
static void box_copy(float *dst, const ir_shape *ds, const int64_t *doff, const float *src, const ir_shape *ss,
                     const int64_t *soff, const ir_shape *box) {
    int64_t sst[IR_MAX_RANK], dst_st[IR_MAX_RANK], run = 1;
    strides_of(ss, sst), strides_of(ds, dst_st);
    int r = box->rank;
    while (r > 0) { /* axis r-1 joins the run; the run goes on past it only if it is whole everywhere */
        run *= box->dim[r - 1];
        r--;
        if (box->dim[r] != ss->dim[r] || box->dim[r] != ds->dim[r]) break;
    }
    odometer o = {.n = r};
    for (int i = 0; i < box->rank; i++) {
        o.a += soff[i] * sst[i], o.b += doff[i] * dst_st[i];
        if (i < r) o.dim[i] = box->dim[i], o.sa[i] = sst[i], o.sb[i] = dst_st[i];
    }
    if (ir_shape_numel(box) == 0) return;
    do memcpy(dst + o.b, src + o.a, (size_t)run * sizeof *dst);
    while (odo_next(&o));
}

static const int64_t zeros[IR_MAX_RANK];

/* concat: each input at its place along the axis */
int cpu_k_concat(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    int64_t at[IR_MAX_RANK] = {0}, axis = k->node->iattr[0];
    for (int i = 0; i < k->node->n_in; i++) {
        box_copy(k->out, &k->node->shape, at, IN_F32(k, i), IN_SHAPE(k, i), zeros, IN_SHAPE(k, i));
        at[axis] += IN_SHAPE(k, i)->dim[axis];
    }
    return 0;
}

/* slice: the box of the output's shape at begin */
int cpu_k_slice(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    box_copy(k->out, &k->node->shape, zeros, IN_F32(k, 0), IN_SHAPE(k, 0), k->node->iattr, &k->node->shape);
    return 0;
}

/* pad: zeros, then the input at before */
int cpu_k_pad(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    memset(k->out, 0, (size_t)ir_node_bytes(k->node));
    box_copy(k->out, &k->node->shape, k->node->iattr, IN_F32(k, 0), IN_SHAPE(k, 0), zeros, IN_SHAPE(k, 0));
    return 0;
}

/* ---- transpose ---- */

/* The output's axes with the input stride each reads, size-1 axes dropped
 * and output neighbours that are input neighbours (in order) merged. */
typedef struct {
    int rank;
    int64_t dim[IR_MAX_RANK], xstride[IR_MAX_RANK];
} tplan;

static tplan transpose_plan(const ir_shape *x, int64_t perm) {
    int64_t sx[IR_MAX_RANK];
    strides_of(x, sx);
    tplan p = {0};
    for (int i = 0; i < x->rank; i++) {
        int a = (int)(perm >> 4 * i & 15);
        int64_t d = x->dim[a];
        if (d == 1) continue;
        if (p.rank > 0 && p.xstride[p.rank - 1] == sx[a] * d) p.dim[p.rank - 1] *= d, p.xstride[p.rank - 1] = sx[a];
        else p.dim[p.rank] = d, p.xstride[p.rank++] = sx[a];
    }
    return p;
}

enum { TILE = 32 };

/* out[i * ostride + j] = x[i + j * xstride] for i < rows, j < cols, in TILE x TILE
 * blocks (the reads of a block stay in cache while its rows are written) */
static void transpose_2d(float *out, int64_t ostride, const float *x, int64_t xstride, int64_t rows, int64_t cols) {
    for (int64_t i0 = 0; i0 < rows; i0 += TILE)
        for (int64_t j0 = 0; j0 < cols; j0 += TILE) {
            int64_t i1 = i0 + TILE < rows ? i0 + TILE : rows, j1 = j0 + TILE < cols ? j0 + TILE : cols;
            for (int64_t i = i0; i < i1; i++)
                for (int64_t j = j0; j < j1; j++) out[i * ostride + j] = x[i + j * xstride];
        }
}

/* transpose: contiguous runs when the innermost axis stays innermost, else a
 * blocked 2-D transpose of (the input's innermost axis, the output's) for
 * every index of the other axes */
int cpu_k_transpose(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    tplan p = transpose_plan(IN_SHAPE(k, 0), k->node->iattr[0]);
    const float *x = IN_F32(k, 0);
    float *out = k->out;
    int64_t ost[IR_MAX_RANK], t = 1;
    for (int i = p.rank - 1; i >= 0; i--) ost[i] = t, t *= p.dim[i];
    int last = p.rank - 1, q = 0;
    if (p.rank == 0 || p.xstride[last] == 1) {
        int64_t run = p.rank ? p.dim[last] : 1;
        odometer o = {.n = p.rank ? last : 0};
        for (int i = 0; i < o.n; i++) o.dim[i] = p.dim[i], o.sa[i] = p.xstride[i], o.sb[i] = ost[i];
        do memcpy(out + o.b, x + o.a, (size_t)run * sizeof *out);
        while (odo_next(&o));
        return 0;
    }
    while (p.xstride[q] != 1) q++; /* the output axis that walks the input's innermost */
    odometer o = {0};
    for (int i = 0; i < last; i++)
        if (i != q) o.dim[o.n] = p.dim[i], o.sa[o.n] = p.xstride[i], o.sb[o.n++] = ost[i];
    do transpose_2d(out + o.b, ost[q], x + o.a, p.xstride[last], p.dim[q], p.dim[last]);
    while (odo_next(&o));
    return 0;
}

/* ---- reduce_max, reduce_min over an axes bitmask ---- */

CPU_CLONES static void extreme_columns(float *out, const float *x, int64_t rows, int64_t inner, bool is_max) {
    memcpy(out, x, (size_t)inner * sizeof *out);
    for (int64_t r = 1; r < rows; r++) {
        const float *row = x + r * inner;
        if (is_max)
            for (int64_t i = 0; i < inner; i++) out[i] = row[i] > out[i] ? row[i] : out[i];
        else
            for (int64_t i = 0; i < inner; i++) out[i] = row[i] < out[i] ? row[i] : out[i];
    }
}

/* input axes collapsed into runs of kept and reduced axes, size-1 axes dropped */
static int collapse(const ir_shape *s, int64_t axes, int64_t *dim, bool *reduced) {
    int n = 0;
    for (int i = 0; i < s->rank; i++) {
        bool r = axes >> i & 1;
        if (s->dim[i] == 1) continue;
        if (n > 0 && reduced[n - 1] == r) dim[n - 1] *= s->dim[i];
        else reduced[n] = r, dim[n++] = s->dim[i];
    }
    return n;
}

int cpu_k_reduce_extreme(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    bool is_max = k->node->op == OP_REDUCE_MAX, reduced[IR_MAX_RANK];
    int64_t dim[IR_MAX_RANK];
    int n = collapse(IN_SHAPE(k, 0), k->node->iattr[0], dim, reduced);
    const float *x = IN_F32(k, 0);
    float *out = k->out;
    int n_red = 0;
    for (int i = 0; i < n; i++) n_red += reduced[i];
    if (n_red == 0) {
        memcpy(out, x, (size_t)ir_node_bytes(k->node));
    } else if (n_red == 1) { /* runs alternate: [outer,] reduced[, inner] */
        int at = reduced[0] ? 0 : 1;
        int64_t outer = at ? dim[0] : 1, inner = at < n - 1 ? dim[n - 1] : 1;
        for (int64_t o = 0; o < outer; o++) extreme_columns(out + o * inner, x + o * dim[at] * inner, dim[at], inner, is_max);
    } else { /* any pattern: one element at a time */
        int64_t ost[IR_MAX_RANK], t = 1, n_out = OUT_NUMEL(k);
        for (int i = n - 1; i >= 0; i--) ost[i] = reduced[i] ? 0 : t, t *= reduced[i] ? 1 : dim[i];
        for (int64_t i = 0; i < n_out; i++) out[i] = is_max ? -FLT_MAX : FLT_MAX;
        odometer o = {.n = n};
        for (int i = 0; i < n; i++) o.dim[i] = dim[i], o.sb[i] = ost[i];
        int64_t e = 0;
        do {
            float v = x[e++];
            out[o.b] = is_max ? (v > out[o.b] ? v : out[o.b]) : (v < out[o.b] ? v : out[o.b]);
        } while (odo_next(&o));
    }
    return 0;
}
