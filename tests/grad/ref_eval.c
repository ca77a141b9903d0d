/* ref_eval.c - naive double-precision evaluation of every op of ops.def (but replication). */
#include "ref_eval_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *fmt, const char *s) {
    fprintf(stderr, "ref_eval: ");
    fprintf(stderr, fmt, s);
    fputc('\n', stderr);
    abort();
}

ref_eval *ref_eval_new(const ir_module *m) {
    ref_eval *e = calloc(1, sizeof *e);
    e->m = m;
    e->val = calloc((size_t)m->g.n, sizeof *e->val);
    for (int i = 0; i < m->g.n; i++) {
        const ir_node *n = &m->g.nodes[i];
        e->val[i] = calloc((size_t)ir_shape_numel(&n->shape) + 1, sizeof(double));
        if ((n->op == OP_VAR || n->op == OP_PARAM) && n->iattr[0] == INIT_ONES)
            for (int64_t k = 0; k < ir_shape_numel(&n->shape); k++) e->val[i][k] = 1;
    }
    return e;
}

void ref_eval_free(ref_eval *e) {
    if (!e) return;
    for (int i = 0; i < e->m->g.n; i++) free(e->val[i]);
    free(e->val);
    free(e);
}

double *ref_eval_data(ref_eval *e, int i) { return e->val[i]; }

/* ---- helpers ---- */

/* Offset into a tensor of shape `in` broadcast (numpy) to `out`, at flat index k of `out`. */
static int64_t bcast_offset(const ir_shape *in, const ir_shape *out, int64_t k) {
    int64_t off = 0, stride = 1;
    for (int i = out->rank - 1; i >= 0; i--) {
        int64_t coord = k % out->dim[i];
        k /= out->dim[i];
        int j = i - (out->rank - in->rank);
        if (j < 0) continue;
        if (in->dim[j] != 1) off += coord * stride;
        stride *= in->dim[j];
    }
    return off;
}

static double binary(ir_op op, double a, double b) {
    switch (op) {
    case OP_ADD: return a + b;
    case OP_SUB: return a - b;
    case OP_MUL: return a * b;
    case OP_DIV: return a / b;
    case OP_RELU_GRAD: return a > 0 ? b : 0;
    case OP_SIGMOID_GRAD: return b * a * (1 - a);
    case OP_TANH_GRAD: return b * (1 - a * a);
    case OP_LESS: return a < b;
    case OP_LESS_EQUAL: return a <= b;
    case OP_GREATER: return a > b;
    case OP_GREATER_EQUAL: return a >= b;
    case OP_EQUAL: return a == b;
    case OP_NOT_EQUAL: return a != b;
    default: die("'%s' is not binary", ir_ops[op].name);
    }
    return 0;
}

static double unary(ir_op op, double x) {
    switch (op) {
    case OP_NEG: return -x;
    case OP_EXP: return exp(x);
    case OP_LOG: return log(x);
    case OP_SQRT: return sqrt(x);
    case OP_RELU: return x > 0 ? x : 0;
    case OP_SIGMOID: return 1 / (1 + exp(-x));
    case OP_TANH: return tanh(x);
    default: die("'%s' is not unary", ir_ops[op].name);
    }
    return 0;
}

static void eval_binary(args *t) {
    for (int64_t k = 0; k < t->len; k++)
        t->out[k] = binary(t->n->op, t->a[bcast_offset(&t->x->shape, &t->n->shape, k)],
                           t->b[bcast_offset(&t->y->shape, &t->n->shape, k)]);
}

static void eval_cast(args *t) {
    for (int64_t k = 0; k < t->len; k++)
        t->out[k] = t->n->dtype == IR_I32 || t->n->dtype == IR_U8 ? trunc(t->a[k]) : t->a[k];
}

/* ---- dense algebra ---- */

/* matmul; with a triangle T (tri >= 0, causal_matmul; tril: keep [i, j] with
 * j <= i, triu: j >= i) on the output (tri 0), op(a) (1) or op(b) (2) */
static bool tri_keep(int64_t i, int64_t j, int upper) { return upper ? j >= i : j <= i; }
static void matmul_tri(args *t, int tri, int up) {
    const ir_shape *as = &t->x->shape, *bs = &t->y->shape, *os = &t->n->shape;
    int ta = t->n->iattr[0] != 0, tb = t->n->iattr[1] != 0, nb = os->rank - 2;
    int64_t M = os->dim[nb], N = os->dim[nb + 1], K = as->dim[as->rank - 1 - ta], ob[IR_MAX_RANK];
    for (int64_t o = 0; o < t->len; o++) {
        int64_t i = o / N % M, j = o % N, rest = o / (M * N);
        for (int d = nb - 1; d >= 0; d--) ob[d] = rest % os->dim[d], rest /= os->dim[d];
        double s = 0;
        for (int64_t k = 0; k < K; k++)
            if ((tri != 1 || tri_keep(i, k, up)) && (tri != 2 || tri_keep(k, j, up)))
                s += t->a[ta ? mm_at(as, ob, nb, k, i) : mm_at(as, ob, nb, i, k)] *
                     t->b[tb ? mm_at(bs, ob, nb, j, k) : mm_at(bs, ob, nb, k, j)];
        t->out[o] = tri == 0 && !tri_keep(i, j, up) ? 0 : s;
    }
}
static void eval_matmul(args *t) { matmul_tri(t, -1, 0); }

/* issue 13: gather (table [V, D], ids) -> [..., D]; scatter_add (ids, dy) -> [V, D] */
static void eval_gather(args *t) {
    int64_t D = t->x->shape.dim[1];
    for (int64_t i = 0; i < ir_shape_numel(&t->y->shape); i++)
        for (int64_t j = 0; j < D; j++) t->out[i * D + j] = t->a[(int64_t)t->b[i] * D + j];
}

static void eval_scatter_add(args *t) {
    int64_t D = t->n->shape.dim[1];
    for (int64_t k = 0; k < t->len; k++) t->out[k] = 0;
    for (int64_t i = 0; i < ir_shape_numel(&t->x->shape); i++)
        for (int64_t j = 0; j < D; j++) t->out[(int64_t)t->a[i] * D + j] += t->b[i * D + j];
}

/* Window geometry of conv / pool: input x [N,H,W,C] -> output [N,OH,OW,*]. */
typedef struct {
    int64_t N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl;
} window;

static window window_of(const ir_shape *x, const ir_shape *y, int64_t kh, int64_t kw, const int64_t *stride_pad) {
    return (window){x->dim[0], x->dim[1], x->dim[2], x->dim[3], y->dim[1], y->dim[2], kh, kw,
                    stride_pad[0], stride_pad[1], stride_pad[2], stride_pad[3]};
}

/* Every term of a convolution sum from x [N,H,W,C] to y [N,OH,OW,O], w HWIO
 * [KH,KW,C/G,O] (output channel o in group o / (O/G)), taps dilation apart.
 * mode: 0 y += x*w, 1 dx += dy*w, 2 dw += x*dy. */
static void conv_terms(const ir_shape *xs, const ir_shape *ys, const ir_shape *ws, ir_conv g, const double *in0,
                       const double *in1, double *out, int mode) {
    int64_t N = xs->dim[0], H = xs->dim[1], W = xs->dim[2], C = xs->dim[3], OH = ys->dim[1], OW = ys->dim[2];
    int64_t O = ys->dim[3], KH = ws->dim[0], KW = ws->dim[1], CG = ws->dim[2], OG = O / g.groups;
    for (int64_t n = 0; n < N; n++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++)
                for (int64_t i = 0; i < KH; i++)
                    for (int64_t j = 0; j < KW; j++) {
                        int64_t h = oh * g.stride[0] - g.pad[0] + i * g.dilation[0];
                        int64_t w = ow * g.stride[1] - g.pad[1] + j * g.dilation[1];
                        if (h < 0 || h >= H || w < 0 || w >= W) continue;
                        for (int64_t o = 0; o < O; o++)
                            for (int64_t cg = 0; cg < CG; cg++) {
                                int64_t xo = ((n * H + h) * W + w) * C + o / OG * CG + cg;
                                int64_t yo = ((n * OH + oh) * OW + ow) * O + o;
                                int64_t wo = ((i * KW + j) * CG + cg) * O + o;
                                if (mode == 0) out[yo] += in0[xo] * in1[wo];
                                else if (mode == 1) out[xo] += in0[yo] * in1[wo];
                                else out[wo] += in0[xo] * in1[yo];
                            }
                    }
}

/* conv2d (x, w) -> y; conv2d_grad_input (dy, w) -> dx; conv2d_grad_filter
 * (x, dy) -> dw; conv2d_transpose (x, w) -> y, the data gradient of the
 * conv2d from y to x */
static void eval_conv(args *t) {
    const ir_node *n = t->n;
    memset(t->out, 0, (size_t)t->len * sizeof *t->out);
    if (n->op == OP_CONV2D || n->op == OP_CONV2D_EPILOGUE || n->op == OP_CONV2D_BN_EPILOGUE)
        conv_terms(&t->x->shape, &n->shape, &t->y->shape, ir_conv_of(n, &t->y->shape), t->a, t->b, t->out, 0);
    else if (n->op == OP_CONV2D_GRAD_INPUT || n->op == OP_CONV2D_TRANSPOSE)
        conv_terms(&n->shape, &t->x->shape, &t->y->shape, ir_conv_of(n, &t->y->shape), t->a, t->b, t->out, 1);
    else
        conv_terms(&t->x->shape, &t->y->shape, &n->shape, ir_conv_of(n, &n->shape), t->a, t->b, t->out, 2);
}

/* Pooling over the valid (unpadded) elements of each window. Forward writes
 * y; backward (dy given) adds each dy to the first max / spreads it evenly. */
static void eval_pool(args *t) {
    const ir_node *n = t->n;
    bool relu = n->op == OP_MAX_POOL2D_RELU_GRAD; /* issue 14: the gradient times (x > 0) */
    bool is_max = n->op == OP_MAX_POOL2D || n->op == OP_MAX_POOL2D_GRAD || relu;
    bool back = n->op == OP_MAX_POOL2D_GRAD || n->op == OP_AVG_POOL2D_GRAD || relu;
    const ir_shape *ys = back ? &t->y->shape : &n->shape;
    window g = window_of(&t->x->shape, ys, n->iattr[0], n->iattr[1], n->iattr + 2);
    if (back) memset(t->out, 0, (size_t)t->len * sizeof *t->out);
    for (int64_t b = 0; b < g.N; b++)
        for (int64_t oh = 0; oh < g.OH; oh++)
            for (int64_t ow = 0; ow < g.OW; ow++)
                for (int64_t c = 0; c < g.C; c++) {
                    int64_t best = -1, count = 0, yo = ((b * g.OH + oh) * g.OW + ow) * g.C + c;
                    double acc = 0;
                    for (int pass = 0; pass < 2; pass++)
                        for (int64_t i = 0; i < g.KH; i++)
                            for (int64_t j = 0; j < g.KW; j++) {
                                int64_t h = oh * g.sh - g.pt + i, w = ow * g.sw - g.pl + j;
                                if (h < 0 || h >= g.H || w < 0 || w >= g.W) continue;
                                int64_t xo = ((b * g.H + h) * g.W + w) * g.C + c;
                                if (pass == 0) {
                                    count++, acc += t->a[xo];
                                    if (best < 0 || t->a[xo] > t->a[best]) best = xo;
                                } else if (back && !is_max) {
                                    t->out[xo] += t->b[yo] / (double)count;
                                }
                            }
                    if (!back) t->out[yo] = is_max ? t->a[best] : acc / (double)count;
                    else if (is_max) t->out[best] += t->b[yo];
                }
    for (int64_t k = 0; relu && k < t->len; k++)
        if (!(t->a[k] > 0)) t->out[k] = 0;
}

/* issue 14 (seed CNN speed): conv2d_grad_filter_pool2 (x, y, dy) =
 * conv2d_grad_filter(x, max_pool2d_relu_grad(y, dy)), 2x2 windows of stride 2 */
static void eval_grad_filter_pool2(ref_eval *e, args *t) {
    const ir_node *n = t->n, *dy = &e->m->g.nodes[n->in[2]];
    ir_node pool = {.op = OP_MAX_POOL2D_RELU_GRAD, .shape = t->y->shape, .iattr = {2, 2, 2, 2, 0, 0, 0, 0}};
    int64_t len = ir_shape_numel(&t->y->shape);
    double *dx = malloc((size_t)len * sizeof *dx);
    args p = {.n = &pool, .x = t->y, .y = dy, .out = dx, .a = t->b, .b = t->c, .len = len};
    eval_pool(&p);
    memset(t->out, 0, (size_t)t->len * sizeof *t->out);
    conv_terms(&t->x->shape, &t->y->shape, &n->shape, ir_conv_of(n, &n->shape), t->a, dx, t->out, 2);
    free(dx);
}

/* issue 14 (seed CNN speed): conv2d_relu_pool2 (x, w, bias) = [max_pool2d(y);
 * each window's pixel: its first maximum, row-major, where that is > 0, else
 * -1], y = relu(conv2d(x, w) + bias), 2x2 windows of stride 2; and
 * conv2d_relu_pool2_grad_filter (x, w, f, dy) = conv2d_grad_filter(x, dY), dY
 * the pooled dy at each window's pixel (f's second half) */
static void eval_relu_pool2(ref_eval *e, args *t) {
    const ir_node *n = t->n;
    const ir_shape *f = n->op == OP_CONV2D_RELU_POOL2 ? &n->shape : &e->m->g.nodes[n->in[2]].shape;
    ir_shape ys = ir_shape_make(4, (int64_t[4]){f->dim[1], 2 * f->dim[2], 2 * f->dim[3], f->dim[4]});
    int64_t len = ir_shape_numel(&ys), np = len / 4, H = ys.dim[1], W = ys.dim[2], C = ys.dim[3];
    double *yv = calloc((size_t)len, sizeof *yv);
    if (n->op == OP_CONV2D_RELU_POOL2) {
        ir_node y = {.op = OP_CONV2D, .dtype = IR_F32, .shape = ys};
        memcpy(y.iattr, n->iattr, sizeof y.iattr);
        args c = {.n = &y, .x = t->x, .y = t->y, .out = yv, .a = t->a, .b = t->b, .len = len};
        eval_conv(&c);
        for (int64_t k = 0; k < len; k++) yv[k] = yv[k] + t->c[k % C] > 0 ? yv[k] + t->c[k % C] : 0;
    }
    for (int64_t i = 0; i < np; i++) {
        int64_t c = i % C, q = i / C % (W / 2), p = i / (C * (W / 2)) % (H / 2), b = i / (C * (W / 2) * (H / 2));
        int64_t at[4];
        for (int k = 0; k < 4; k++) at[k] = ((b * H + 2 * p + k / 2) * W + 2 * q + k % 2) * C + c;
        if (n->op == OP_CONV2D_RELU_POOL2) {
            int arg = 0;
            for (int k = 1; k < 4; k++) arg = yv[at[k]] > yv[at[arg]] ? k : arg;
            t->out[i] = yv[at[arg]], t->out[np + i] = yv[at[arg]] > 0 ? arg : -1;
        } else if (t->c[np + i] >= 0) {
            yv[at[(int)t->c[np + i]]] = e->val[n->in[3]][i]; /* dY */
        }
    }
    if (n->op == OP_CONV2D_RELU_POOL2_GRAD_FILTER) {
        memset(t->out, 0, (size_t)t->len * sizeof *t->out);
        conv_terms(&t->x->shape, &ys, &n->shape, ir_conv_of(n, &n->shape), t->a, yv, t->out, 2);
    }
    free(yv);
}

/* issue 14 (char_gpt speed): normalize(x) = (x - mean) r, r = 1 / sqrt(var + eps);
 * normalize_grad(x, dy) = r (dy - mean(dy) - xhat mean(dy xhat)), rows of the last axis */
static void eval_normalize(args *t) {
    int64_t c = t->n->shape.dim[t->n->shape.rank - 1];
    for (int64_t row = 0; row < t->len / c; row++) {
        const double *x = t->a + row * c, *dy = t->b ? t->b + row * c : NULL;
        double *y = t->out + row * c, mean = 0, var = 0, m_dy = 0, m_dyx = 0;
        for (int64_t j = 0; j < c; j++) mean += x[j] / (double)c;
        for (int64_t j = 0; j < c; j++) var += (x[j] - mean) * (x[j] - mean) / (double)c;
        double r = 1 / sqrt(var + t->n->fattr[0]);
        for (int64_t j = 0; j < c && dy; j++) m_dy += dy[j] / (double)c, m_dyx += dy[j] * (x[j] - mean) * r / (double)c;
        for (int64_t j = 0; j < c; j++)
            y[j] = dy ? r * (dy[j] - m_dy - (x[j] - mean) * r * m_dyx) : (x[j] - mean) * r;
    }
}

/* issue 14 (batch norm in training), x [..., c] as [rows, c]: channel_mean(x)
 * = mean over rows; channel_var(x, m) = mean((x - m)^2); scale_shift(x, m, s,
 * b) = (x - m) s + b (d: input 3); channel_sum_dot(x, m, dy) = [sum(dy);
 * sum(dy (x - m))] */
static void eval_channel(args *t, const double *d) {
    int64_t c = t->x->shape.dim[t->x->shape.rank - 1], rows = ir_shape_numel(&t->x->shape) / c;
    ir_op op = t->n->op;
    if (op == OP_SCALE_SHIFT) {
        for (int64_t k = 0; k < t->len; k++) t->out[k] = (t->a[k] - t->b[k % c]) * t->c[k % c] + d[k % c];
        return;
    }
    if (op == OP_CHANNEL_SUM_DOT) {
        for (int64_t j = 0; j < c; j++) {
            double s = 0, dot = 0;
            for (int64_t r = 0; r < rows; r++) s += t->c[r * c + j], dot += t->c[r * c + j] * (t->a[r * c + j] - t->b[j]);
            t->out[j] = s, t->out[c + j] = dot;
        }
        return;
    }
    for (int64_t j = 0; j < c; j++) {
        double s = 0;
        for (int64_t r = 0; r < rows; r++) {
            double x = t->a[r * c + j], dev = op == OP_CHANNEL_MEAN ? x : x - t->b[j];
            s += op == OP_CHANNEL_VAR ? dev * dev : dev;
        }
        t->out[j] = s / (double)rows;
    }
}

/* issue 14 (char_gpt speed): causal_softmax(x) = softmax over j <= i of scale * x,
 * 0 above; causal_softmax_grad(y, dy) = scale * y * (dy - sum_j<=i(dy * y)), 0 above
 * (row i of each [r, c] matrix of the last two axes) */
static void eval_causal_softmax(args *t) {
    const ir_shape *s = &t->n->shape;
    int64_t r = s->dim[s->rank - 2], c = s->dim[s->rank - 1];
    double scale = t->n->fattr[0];
    for (int64_t row = 0; row < t->len / c; row++) {
        int64_t i = row % r, n = i + 1 < c ? i + 1 : c;
        const double *x = t->a + row * c, *dy = t->b ? t->b + row * c : NULL;
        double *y = t->out + row * c, mx = -INFINITY, sum = 0, dot = 0;
        for (int64_t j = 0; j < n; j++) mx = fmax(mx, scale * x[j]), dot += dy ? dy[j] * x[j] : 0;
        for (int64_t j = 0; j < n; j++) sum += exp(scale * x[j] - mx);
        for (int64_t j = 0; j < c; j++)
            y[j] = j >= n ? 0 : dy ? scale * x[j] * (dy[j] - dot) : exp(scale * x[j] - mx) / sum;
    }
}

/* issue 14 (char_gpt speed): causal_softmax_dropout_grad(y, dp): dy = dp times
 * dropout's factor (ref_eval_keep of its index) in training, then
 * scale * y * (dy - sum_kept(dy * y)) over row i's j <= i, 0 above */
static void eval_causal_softmax_dropout_grad(args *t, const double *ys, const double *dps, int64_t seed, int64_t step,
                                             bool training) {
    const ir_shape *s = &t->n->shape;
    int64_t r = s->dim[s->rank - 2], c = s->dim[s->rank - 1];
    double scale = t->n->fattr[0], rate = t->n->fattr[1];
    for (int64_t row = 0; row < t->len / c; row++) {
        int64_t i = row % r, n = i + 1 < c ? i + 1 : c;
        const double *y = ys + row * c, *dp = dps + row * c;
        double *o = t->out + row * c, dot = 0;
        for (int64_t j = 0; j < c; j++) {
            double f = !training ? 1 : ref_eval_keep(seed, step, row * c + j, rate) ? 1 / (1 - rate) : 0;
            o[j] = j < n ? dp[j] * f : 0; /* dy for now */
            dot += o[j] * y[j];
        }
        for (int64_t j = 0; j < c; j++) o[j] = j < n ? scale * y[j] * (o[j] - dot) : 0;
    }
}

/* issue 14 (char_gpt speed): causal_matmul, matmul_tri's triangle from its attributes */
static void eval_causal_matmul(args *t) { matmul_tri(t, (int)t->n->iattr[2], t->n->iattr[3] != 0); }

/* issue 14 (char_gpt speed): causal_matmul_softmax (a, b) = causal_softmax of
 * the scores a b (tri 0); causal_matmul_softmax_grad (a, b, y) =
 * causal_softmax_dropout_grad(y, a b) (rate 0: no mask) */
static void eval_causal_matmul_softmax(args *t, int64_t step, bool training) {
    double *scores = malloc((size_t)(t->len + 1) * sizeof *scores), *out = t->out;
    t->out = scores;
    matmul_tri(t, 0, 0);
    t->out = out;
    if (t->n->op == OP_CAUSAL_MATMUL_SOFTMAX) {
        args u = {.n = t->n, .out = out, .a = scores, .len = t->len};
        eval_causal_softmax(&u);
    } else
        eval_causal_softmax_dropout_grad(t, t->c, scores, t->n->iattr[2], step, training);
    free(scores);
}

/* issue 14: out = act(out + bias [+ residual]), bias along the last axis */
static void eval_epilogue(ref_eval *e, args *t, int64_t act) {
    const ir_node *n = t->n;
    int64_t c = n->shape.dim[n->shape.rank - 1];
    const double *res = n->n_in == 4 ? e->val[n->in[3]] : NULL;
    for (int64_t k = 0; k < t->len; k++) {
        double v = t->out[k] + t->c[k % c] + (res ? res[k] : 0);
        t->out[k] = act == EPI_RELU ? (v > 0 ? v : 0) : act == EPI_TANH ? tanh(v) : act == EPI_SIGMOID ? 1 / (1 + exp(-v)) : v;
    }
}

/* issue 14: conv2d_bn_epilogue (x, w, c, mean, scale, beta[, residual]):
 * act((conv - mean) * scale + beta [+ residual]), conv its input c in
 * training and conv2d(x, w) outside it, as its kernel reads them */
static void eval_bn_epilogue(ref_eval *e, args *t, bool training) {
    const ir_node *n = t->n;
    if (training) memcpy(t->out, t->c, (size_t)t->len * sizeof *t->out);
    else eval_conv(t);
    int64_t c = n->shape.dim[3], act = n->iattr[9];
    const double *mean = e->val[n->in[3]], *scale = e->val[n->in[4]], *beta = e->val[n->in[5]];
    const double *res = n->n_in == 7 ? e->val[n->in[6]] : NULL;
    for (int64_t k = 0; k < t->len; k++) {
        double v = (t->out[k] - mean[k % c]) * scale[k % c] + beta[k % c] + (res ? res[k] : 0);
        t->out[k] = act == EPI_RELU ? (v > 0 ? v : 0) : act == EPI_TANH ? tanh(v) : act == EPI_SIGMOID ? 1 / (1 + exp(-v)) : v;
    }
}

/* ---- shapes and reductions ---- */

static void eval_reduce(args *t) {
    const ir_shape *xs = &t->x->shape;
    int64_t axes = t->n->iattr[0], xlen = ir_shape_numel(xs);
    memset(t->out, 0, (size_t)t->len * sizeof *t->out);
    for (int64_t k = 0; k < xlen; k++) {
        int64_t rest = k, off = 0, stride = 1;
        for (int i = xs->rank - 1; i >= 0; i--) {
            int64_t coord = rest % xs->dim[i];
            rest /= xs->dim[i];
            if (axes >> i & 1) continue;
            off += coord * stride;
            stride *= xs->dim[i];
        }
        t->out[off] += t->a[k];
    }
    if (t->n->op == OP_REDUCE_MEAN)
        for (int64_t k = 0; k < t->len; k++) t->out[k] /= (double)xlen / (double)t->len;
}

static void eval_broadcast_to(args *t) {
    for (int64_t k = 0; k < t->len; k++) t->out[k] = t->a[bcast_offset(&t->x->shape, &t->n->shape, k)];
}

/* ---- softmax family (class axis rank-1-from_end; sparse_xent's the last) ---- */

static void softmax_row(const double *x, double *y, int64_t C) {
    double mx = x[0], s = 0;
    for (int64_t j = 1; j < C; j++) mx = fmax(mx, x[j]);
    for (int64_t j = 0; j < C; j++) s += y[j] = exp(x[j] - mx);
    for (int64_t j = 0; j < C; j++) y[j] /= s;
}

/* softmax, log_softmax, softmax_grad(y, dy): each [outer, C, inner] column gathered into a row */
static void eval_softmax(args *t) {
    const ir_shape *s = &t->n->shape;
    int axis = s->rank - 1 - (int)t->n->iattr[0];
    int64_t C = s->dim[axis], inner = 1;
    for (int i = axis + 1; i < s->rank; i++) inner *= s->dim[i];
    double *x = malloc((size_t)C * sizeof *x), *dy = malloc((size_t)C * sizeof *dy), *y = malloc((size_t)C * sizeof *y);
    for (int64_t r = 0; r < t->len / C; r++) {
        int64_t base = r / inner * C * inner + r % inner;
        for (int64_t j = 0; j < C; j++) x[j] = t->a[base + j * inner], dy[j] = t->b ? t->b[base + j * inner] : 0;
        double dot = 0, lse = 0;
        for (int64_t j = 0; j < C; j++) dot += dy[j] * x[j];
        softmax_row(x, y, C);
        for (int64_t j = 0; j < C; j++) lse += exp(x[j]);
        for (int64_t j = 0; j < C; j++)
            t->out[base + j * inner] = t->n->op == OP_SOFTMAX       ? y[j]
                                       : t->n->op == OP_LOG_SOFTMAX ? x[j] - log(lse)
                                                                    : x[j] * (dy[j] - dot); /* x is y here */
    }
    free(x), free(dy), free(y);
}

/* ---- shape ops and extreme reductions (issue 12) ---- */

/* coordinates of flat index k in s */
static void coords(const ir_shape *s, int64_t k, int64_t *c) {
    for (int i = s->rank - 1; i >= 0; i--) c[i] = k % s->dim[i], k /= s->dim[i];
}

static int64_t flat(const ir_shape *s, const int64_t *c) {
    int64_t k = 0;
    for (int i = 0; i < s->rank; i++) k = k * s->dim[i] + c[i];
    return k;
}

static void eval_concat(ref_eval *e, args *t) {
    int64_t c[IR_MAX_RANK], axis = t->n->iattr[0];
    for (int64_t k = 0; k < t->len; k++) {
        coords(&t->n->shape, k, c);
        int in = 0;
        while (c[axis] >= e->m->g.nodes[t->n->in[in]].shape.dim[axis]) c[axis] -= e->m->g.nodes[t->n->in[in++]].shape.dim[axis];
        t->out[k] = e->val[t->n->in[in]][flat(&e->m->g.nodes[t->n->in[in]].shape, c)];
    }
}

/* slice reads x at out + begin; pad writes x at x + before, zeros elsewhere */
static void eval_slice_pad(args *t) {
    int64_t c[IR_MAX_RANK];
    for (int64_t k = 0; k < t->len; k++) {
        coords(&t->n->shape, k, c);
        bool inside = true;
        for (int i = 0; i < t->n->shape.rank; i++) {
            c[i] += t->n->op == OP_SLICE ? t->n->iattr[i] : -t->n->iattr[i];
            inside &= c[i] >= 0 && c[i] < t->x->shape.dim[i];
        }
        t->out[k] = inside ? t->a[flat(&t->x->shape, c)] : 0;
    }
}

static void eval_transpose(args *t) {
    int64_t c[IR_MAX_RANK], xc[IR_MAX_RANK];
    for (int64_t k = 0; k < t->len; k++) {
        coords(&t->n->shape, k, c);
        for (int i = 0; i < t->n->shape.rank; i++) xc[t->n->iattr[0] >> 4 * i & 15] = c[i];
        t->out[k] = t->a[flat(&t->x->shape, xc)];
    }
}

static void eval_reduce_extreme(args *t) {
    const ir_shape *xs = &t->x->shape;
    int64_t axes = t->n->iattr[0], c[IR_MAX_RANK];
    bool is_max = t->n->op == OP_REDUCE_MAX;
    for (int64_t k = 0; k < t->len; k++) t->out[k] = is_max ? -INFINITY : INFINITY;
    for (int64_t k = 0; k < ir_shape_numel(xs); k++) {
        coords(xs, k, c);
        int64_t off = 0;
        for (int i = 0; i < xs->rank; i++)
            if (!(axes >> i & 1)) off = off * xs->dim[i] + c[i];
        t->out[off] = is_max ? fmax(t->out[off], t->a[k]) : fmin(t->out[off], t->a[k]);
    }
}

static void eval_xent(args *t) {
    int64_t B = t->x->shape.dim[0], C = t->x->shape.dim[1];
    double *p = malloc((size_t)C * sizeof *p);
    for (int64_t b = 0; b < B; b++) {
        const double *z = t->a + b * C;
        int64_t label = (int64_t)t->b[b], arg = 0;
        softmax_row(z, p, C);
        for (int64_t j = 1; j < C; j++)
            if (z[j] > z[arg]) arg = j;
        if (t->n->op == OP_SPARSE_XENT) t->out[b] = -log(p[label]);
        else if (t->n->op == OP_ARGMAX_MATCH) t->out[b] = arg == label;
        else
            for (int64_t j = 0; j < C; j++) t->out[b * C + j] = (p[j] - (j == label)) * t->c[b];
    }
    free(p);
}

/* ---- dropout ---- */

static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

bool ref_eval_keep(int64_t seed, int64_t step, int64_t idx, double rate) {
    uint64_t h = mix(mix(mix((uint64_t)seed) + (uint64_t)step) + (uint64_t)idx);
    return (double)(h >> 11) / 9007199254740992.0 >= rate;
}

static void eval_dropout(args *t, int64_t step, bool training) {
    double rate = t->n->fattr[0];
    for (int64_t k = 0; k < t->len; k++)
        t->out[k] = !training ? t->a[k]
                    : ref_eval_keep(t->n->iattr[0], step, k, rate) ? t->a[k] / (1 - rate) : 0;
}

/* ---- issue 12: activations, elementwise math, log_softmax, in_top_k ---- */

static const double SELU_ALPHA = 1.6732632423543772848170429916717, SELU_SCALE = 1.0507009873554804934193349852946;

static double phi_cdf(double x) { return 0.5 * (1 + erf(x / sqrt(2.0))); }

/* x -> y (alpha: elu's, leaky_relu's) */
static double act(ir_op op, double x, double alpha) {
    switch (op) {
    case OP_ABS: return fabs(x);
    case OP_ERF: return erf(x);
    case OP_GELU: return x * phi_cdf(x);
    case OP_SOFTPLUS: return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
    case OP_SELU: return SELU_SCALE * (x > 0 ? x : SELU_ALPHA * (exp(x) - 1));
    case OP_ELU: return x > 0 ? x : alpha * (exp(x) - 1);
    default: return x > 0 ? x : alpha * x; /* OP_LEAKY_RELU */
    }
}

/* (x, dy) -> dx */
static double act_grad(ir_op op, double x, double dy, double alpha) {
    switch (op) {
    case OP_ABS_GRAD: return x > 0 ? dy : x < 0 ? -dy : 0;
    case OP_ERF_GRAD: return dy * 2 / sqrt(M_PI) * exp(-x * x);
    case OP_GELU_GRAD: return dy * (phi_cdf(x) + x * exp(-x * x / 2) / sqrt(2 * M_PI));
    case OP_SELU_GRAD: return dy * SELU_SCALE * (x > 0 ? 1 : SELU_ALPHA * exp(x));
    case OP_ELU_GRAD: return dy * (x > 0 ? 1 : alpha * exp(x));
    default: return dy * (x > 0 ? 1 : alpha); /* OP_LEAKY_RELU_GRAD */
    }
}

static double binary_math(ir_op op, double a, double b) {
    return op == OP_MAXIMUM ? (a >= b ? a : b) : op == OP_MINIMUM ? (a <= b ? a : b) : pow(a, b);
}

static void eval_act(args *t) {
    ir_op op = t->n->op;
    for (int64_t k = 0; k < t->len; k++) {
        if (op == OP_MAXIMUM || op == OP_MINIMUM || op == OP_POW)
            t->out[k] = binary_math(op, t->a[bcast_offset(&t->x->shape, &t->n->shape, k)],
                                    t->b[bcast_offset(&t->y->shape, &t->n->shape, k)]);
        else if (t->n->n_in == 2) t->out[k] = act_grad(op, t->a[k], t->b[k], t->n->fattr[0]);
        else t->out[k] = act(op, t->a[k], t->n->fattr[0]);
    }
}

/* in_top_k: 1 where fewer than k logits exceed the label's */
static void eval_in_top_k(args *t) {
    int64_t B = t->x->shape.dim[0], C = t->x->shape.dim[1];
    for (int64_t b = 0; b < B; b++) {
        int64_t label = (int64_t)t->b[b], above = 0;
        for (int64_t j = 0; j < C; j++) above += t->a[b * C + j] > t->a[b * C + label];
        t->out[b] = above < t->n->iattr[0];
    }
}

/* issue 13: one_hot: 1 at [i, ids[i]], a zero row for an id outside [0, depth) */
static void eval_one_hot(args *t) {
    int64_t depth = t->n->iattr[0], n = t->len / depth;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < depth; j++) t->out[i * depth + j] = t->a[i] == (double)j;
}

/* ---- the walk ---- */

static void eval_node(ref_eval *e, int i, int64_t step, bool training) {
    const ir_node *nodes = e->m->g.nodes, *n = &nodes[i];
    args t = {.n = n, .out = e->val[i], .len = ir_shape_numel(&n->shape)};
    if (n->n_in > 0) t.x = &nodes[n->in[0]], t.a = e->val[n->in[0]];
    if (n->n_in > 1) t.y = &nodes[n->in[1]], t.b = e->val[n->in[1]];
    if (n->n_in > 2) t.c = e->val[n->in[2]];
    switch (n->op) {
    case OP_INPUT: case OP_PARAM: case OP_VAR: case OP_STATE: return;
    case OP_CONST: for (int64_t k = 0; k < t.len; k++) t.out[k] = n->fattr[0]; return;
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV:
    case OP_RELU_GRAD: case OP_SIGMOID_GRAD: case OP_TANH_GRAD:
    case OP_LESS: case OP_LESS_EQUAL: case OP_GREATER: case OP_GREATER_EQUAL: case OP_EQUAL: case OP_NOT_EQUAL:
        eval_binary(&t);
        return;
    case OP_NEG: case OP_EXP: case OP_LOG: case OP_SQRT: case OP_RELU: case OP_SIGMOID: case OP_TANH:
        for (int64_t k = 0; k < t.len; k++) t.out[k] = unary(n->op, t.a[k]);
        return;
    case OP_CAST: eval_cast(&t); return;
    case OP_MATMUL: eval_matmul(&t); return;
    case OP_GATHER: eval_gather(&t); return; /* issue 13 */
    case OP_SCATTER_ADD: eval_scatter_add(&t); return;
    case OP_CONV2D: case OP_CONV2D_GRAD_INPUT: case OP_CONV2D_GRAD_FILTER: case OP_CONV2D_TRANSPOSE: eval_conv(&t); return;
    case OP_MAX_POOL2D: case OP_MAX_POOL2D_GRAD: case OP_AVG_POOL2D: case OP_AVG_POOL2D_GRAD: eval_pool(&t); return;
    case OP_RESHAPE: memcpy(t.out, t.a, (size_t)t.len * sizeof *t.out); return;
    case OP_REDUCE_SUM: case OP_REDUCE_MEAN: eval_reduce(&t); return;
    case OP_BROADCAST_TO: eval_broadcast_to(&t); return;
    case OP_SOFTMAX: case OP_SOFTMAX_GRAD: eval_softmax(&t); return;
    case OP_SPARSE_XENT: case OP_SPARSE_XENT_GRAD: case OP_ARGMAX_MATCH: eval_xent(&t); return;
    case OP_DROPOUT: case OP_DROPOUT_GRAD: eval_dropout(&t, step, training); return;
    case OP_SGD_UPDATE: case OP_ADAM_UPDATE: case OP_RMSPROP_UPDATE:
    case OP_ADAGRAD_UPDATE: case OP_NADAM_UPDATE: case OP_LAMB_UPDATE: ref_eval_update(e, &t, step); return;
    case OP_SQ_NORM: ref_eval_sq_norm(e, &t); return;
    case OP_ASSIGN: /* the state takes the value, in training only */
        if (training) memcpy(e->val[n->in[0]], t.b, (size_t)t.len * sizeof *t.out);
        memcpy(t.out, e->val[n->in[0]], (size_t)t.len * sizeof *t.out);
        return;
    case OP_IN_TRAINING: memcpy(t.out, training ? t.a : t.b, (size_t)t.len * sizeof *t.out); return;
    case OP_ALL_REDUCE: /* one replica: the inputs packed in order */
        for (int k = 0, at = 0; k < n->n_in; at += (int)ir_shape_numel(&nodes[n->in[k]].shape), k++)
            memcpy(t.out + at, e->val[n->in[k]], (size_t)ir_shape_numel(&nodes[n->in[k]].shape) * sizeof *t.out);
        return;
    case OP_VIEW: memcpy(t.out, t.a + n->iattr[0], (size_t)t.len * sizeof *t.out); return;
    case OP_LOG_SOFTMAX: eval_softmax(&t); return;
    case OP_CONCAT: eval_concat(e, &t); return;
    case OP_SLICE: case OP_PAD: eval_slice_pad(&t); return;
    case OP_TRANSPOSE: eval_transpose(&t); return;
    case OP_REDUCE_MAX: case OP_REDUCE_MIN: eval_reduce_extreme(&t); return;
    case OP_ABS: case OP_ERF: case OP_GELU: case OP_SOFTPLUS: case OP_SELU: case OP_ELU: case OP_LEAKY_RELU:
    case OP_MAXIMUM: case OP_MINIMUM: case OP_POW: case OP_ABS_GRAD: case OP_ERF_GRAD: case OP_GELU_GRAD:
    case OP_SELU_GRAD: case OP_ELU_GRAD: case OP_LEAKY_RELU_GRAD:
        eval_act(&t);
        return;
    case OP_IN_TOP_K: eval_in_top_k(&t); return;
    case OP_ONE_HOT: eval_one_hot(&t); return; /* issue 13 */
    case OP_ALL_GATHER: memcpy(t.out, t.a, (size_t)t.len * sizeof *t.out); return; /* issue 13: one replica, a copy */
    /* issue 14: epilogues */
    case OP_CONV2D_EPILOGUE: eval_conv(&t); eval_epilogue(e, &t, n->iattr[9]); return;
    case OP_MATMUL_EPILOGUE: eval_matmul(&t); eval_epilogue(e, &t, n->iattr[2]); return;
    case OP_MAX_POOL2D_RELU_GRAD: eval_pool(&t); return;
    case OP_CONV2D_BN_EPILOGUE: eval_bn_epilogue(e, &t, training); return; /* issue 14 */
    /* issue 14: char_gpt speed */
    case OP_CAUSAL_SOFTMAX: case OP_CAUSAL_SOFTMAX_GRAD: eval_causal_softmax(&t); return;
    case OP_CAUSAL_SOFTMAX_DROPOUT_GRAD: eval_causal_softmax_dropout_grad(&t, t.a, t.b, n->iattr[0], step, training); return;
    case OP_CAUSAL_MATMUL_SOFTMAX: case OP_CAUSAL_MATMUL_SOFTMAX_GRAD: eval_causal_matmul_softmax(&t, step, training); return;
    case OP_NORMALIZE: case OP_NORMALIZE_GRAD: eval_normalize(&t); return;
    case OP_CAUSAL_MATMUL: eval_causal_matmul(&t); return; /* issue 14: attention's causal GEMMs */
    /* issue 14: batch norm in training */
    case OP_CHANNEL_MEAN: case OP_CHANNEL_VAR: eval_channel(&t, NULL); return;
    case OP_CHANNEL_SUM_DOT: eval_channel(&t, NULL); return; /* issue 14: batch norm's backward */
    case OP_SCALE_SHIFT: eval_channel(&t, e->val[n->in[3]]); return;
    case OP_CONV2D_GRAD_FILTER_POOL2: eval_grad_filter_pool2(e, &t); return; /* issue 14: seed CNN speed */
    case OP_CONV2D_RELU_POOL2: case OP_CONV2D_RELU_POOL2_GRAD_FILTER: eval_relu_pool2(e, &t); return; /* issue 14 */
    case OP_SHARD: case OP_BROADCAST: case OP_COUNT: break;
    case OP_FUSED: break; /* issue 14: made by the fuse pass, which these tests do not run */
    }
    die("no reference for op '%s'", n->op < OP_COUNT ? ir_ops[n->op].name : "?");
}

void ref_eval_run(ref_eval *e, int64_t step, bool training) {
    for (int i = 0; i < e->m->g.n; i++) eval_node(e, i, step, training);
}
