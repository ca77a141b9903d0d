/* refs.h - the double-precision references of test_kernels.c's table: one
 * function per op family, each computing the op's output from its inputs
 * (as doubles) as its definition says; included by test_kernels.c after its
 * shape helpers (the case headers after it add their own). */
#ifndef MGC_KERN_REFS_H
#define MGC_KERN_REFS_H

static double r_apply(ir_op op, double a, double b) {
    switch (op) {
    case OP_ADD: return a + b;
    case OP_SUB: return a - b;
    case OP_MUL: return a * b;
    case OP_DIV: return a / b;
    case OP_NEG: return -a;
    case OP_EXP: return exp(a);
    case OP_LOG: return log(a);
    case OP_SQRT: return sqrt(a);
    case OP_RELU: return a > 0 ? a : 0;
    case OP_SIGMOID: return 1 / (1 + exp(-a));
    case OP_TANH: return tanh(a);
    case OP_RELU_GRAD: return a > 0 ? b : 0;
    case OP_SIGMOID_GRAD: return b * a * (1 - a);
    case OP_TANH_GRAD: return b * (1 - a * a);
    case OP_LESS: return a < b;
    case OP_LESS_EQUAL: return a <= b;
    case OP_GREATER: return a > b;
    case OP_GREATER_EQUAL: return a >= b;
    case OP_EQUAL: return a == b;
    case OP_NOT_EQUAL: return a != b;
    default: return NAN;
    }
}

static void ref_elementwise(const one_op *t, double **in, double *out) {
    const ir_shape *o = oshape(t);
    for (int64_t i = 0; i < numel(o); i++) {
        double a = in[0][bidx(o, ishape(t, 0), i)], b = t->n_in > 1 ? in[1][bidx(o, ishape(t, 1), i)] : 0;
        out[i] = r_apply(onode(t)->op, a, b);
    }
}

static void ref_broadcast_to(const one_op *t, double **in, double *out) {
    for (int64_t i = 0; i < numel(oshape(t)); i++) out[i] = in[0][bidx(oshape(t), ishape(t, 0), i)];
}

static void ref_copy(const one_op *t, double **in, double *out) {
    int64_t off = onode(t)->op == OP_VIEW ? onode(t)->iattr[0] : 0;
    if (onode(t)->op == OP_SHARD) off = onode(t)->iattr[0] * numel(oshape(t));
    for (int64_t i = 0; i < numel(oshape(t)); i++) out[i] = in[0][off + i];
}

/* all_reduce's kernel packs its inputs into the bucket, in order (the reduction is the collective's) */
static void ref_pack(const one_op *t, double **in, double *out) {
    for (int k = 0; k < t->n_in; k++)
        for (int64_t i = 0; i < numel(ishape(t, k)); i++) *out++ = in[k][i];
}

static void ref_cast(const one_op *t, double **in, double *out) {
    for (int64_t i = 0; i < numel(oshape(t)); i++) {
        double v = in[0][i];
        if (onode(t)->dtype == IR_I32 || onode(t)->dtype == IR_U8) v = trunc(v);
        if (onode(t)->dtype == IR_U8) v = v < 0 ? 0 : v > 255 ? 255 : v;
        out[i] = v;
    }
}

static void ref_matmul(const one_op *t, double **in, double *out) {
    const ir_node *n = onode(t);
    const ir_shape *as = ishape(t, 0), *bs = ishape(t, 1), *os = oshape(t);
    int ta = n->iattr[0] != 0, tb = n->iattr[1] != 0, nb = os->rank - 2;
    int64_t M = os->dim[nb], N = os->dim[nb + 1], K = as->dim[as->rank - 1 - ta], ob[IR_MAX_RANK];
    for (int64_t o = 0; o < numel(os); o++) {
        int64_t i = o / N % M, j = o % N, rest = o / (M * N);
        for (int d = nb - 1; d >= 0; d--) ob[d] = rest % os->dim[d], rest /= os->dim[d];
        double s = 0;
        for (int64_t p = 0; p < K; p++)
            s += in[0][ta ? mm_at(as, ob, nb, p, i) : mm_at(as, ob, nb, i, p)] *
                 in[1][tb ? mm_at(bs, ob, nb, j, p) : mm_at(bs, ob, nb, p, j)];
        out[o] = s;
    }
}

/* issue 13: gather (table [V, D], ids [...]) -> [..., D]; scatter_add (ids, dy) -> [V, D] */
static void ref_gather(const one_op *t, double **in, double *out) {
    int64_t D = ishape(t, 0)->dim[1];
    for (int64_t i = 0; i < numel(ishape(t, 1)); i++)
        for (int64_t j = 0; j < D; j++) out[i * D + j] = in[0][(int64_t)in[1][i] * D + j];
}

static void ref_scatter_add(const one_op *t, double **in, double *out) {
    int64_t D = oshape(t)->dim[1];
    for (int64_t e = 0; e < numel(oshape(t)); e++) out[e] = 0;
    for (int64_t i = 0; i < numel(ishape(t, 0)); i++)
        for (int64_t j = 0; j < D; j++) out[(int64_t)in[0][i] * D + j] += in[1][i * D + j];
}

/* issue 13: one_hot (ids [...]) -> [..., depth]: 1 at the id, a zero row for an id outside [0, depth) */
static void ref_one_hot(const one_op *t, double **in, double *out) {
    int64_t depth = onode(t)->iattr[0];
    for (int64_t i = 0; i < numel(ishape(t, 0)); i++)
        for (int64_t j = 0; j < depth; j++) out[i * depth + j] = in[0][i] == (double)j;
}

/* the forward convolution's index space, x [N,H,W,C] -> y [N,OH,OW,O], w HWIO
 * [KH,KW,C/G,O], output channel co in group co / (O/G), taps dilation apart:
 * BODY with x index xi, w index wi, y index yi */
typedef struct {
    const ir_shape *x, *w, *y;
    ir_conv g;
} conv_geom;

#define CONV_LOOP(G, BODY)                                                                                   \
    for (int64_t n_ = 0; n_ < (G).y->dim[0]; n_++)                                                           \
        for (int64_t oh = 0; oh < (G).y->dim[1]; oh++)                                                       \
            for (int64_t ow = 0; ow < (G).y->dim[2]; ow++)                                                   \
                for (int64_t co = 0; co < (G).y->dim[3]; co++)                                               \
                    for (int64_t r = 0; r < (G).w->dim[0]; r++)                                              \
                        for (int64_t s = 0; s < (G).w->dim[1]; s++) {                                        \
                            int64_t ih = oh * (G).g.stride[0] - (G).g.pad[0] + r * (G).g.dilation[0];        \
                            int64_t iw = ow * (G).g.stride[1] - (G).g.pad[1] + s * (G).g.dilation[1];        \
                            if (ih < 0 || iw < 0 || ih >= (G).x->dim[1] || iw >= (G).x->dim[2]) continue;    \
                            int64_t cg_ = (G).w->dim[2], c0_ = co / ((G).y->dim[3] / (G).g.groups) * cg_;    \
                            for (int64_t ci = 0; ci < cg_; ci++) {                                           \
                                int64_t xi = ((n_ * (G).x->dim[1] + ih) * (G).x->dim[2] + iw) * (G).x->dim[3] + c0_ + ci; \
                                int64_t wi = ((r * (G).w->dim[1] + s) * (G).w->dim[2] + ci) * (G).w->dim[3] + co;   \
                                int64_t yi = ((n_ * (G).y->dim[1] + oh) * (G).y->dim[2] + ow) * (G).y->dim[3] + co; \
                                BODY;                                                                        \
                            }                                                                                \
                        }

/* conv2d_transpose (x, w) is conv2d_grad_input of the conv2d from its output to x */
static void ref_conv(const one_op *t, double **in, double *out) {
    const ir_node *n = onode(t);
    conv_geom g;
    if (n->op == OP_CONV2D) g.x = ishape(t, 0), g.w = ishape(t, 1), g.y = &n->shape;
    else if (n->op == OP_CONV2D_GRAD_FILTER) g.x = ishape(t, 0), g.w = &n->shape, g.y = ishape(t, 1);
    else g.x = &n->shape, g.w = ishape(t, 1), g.y = ishape(t, 0);
    g.g = ir_conv_of(n, g.w);
    memset(out, 0, (size_t)numel(&n->shape) * sizeof *out);
    if (n->op == OP_CONV2D) CONV_LOOP(g, out[yi] += in[0][xi] * in[1][wi])
    else if (n->op == OP_CONV2D_GRAD_FILTER) CONV_LOOP(g, out[wi] += in[0][xi] * in[1][yi])
    else CONV_LOOP(g, out[xi] += in[0][yi] * in[1][wi])
}

/* pooling: for each output element, the valid window positions */
static void ref_pool(const one_op *t, double **in, double *out) {
    const ir_node *n = onode(t);
    const int64_t *a = n->iattr; /* k_h, k_w, stride_h, stride_w, pad_t, pad_l */
    int grad = n->op == OP_MAX_POOL2D_GRAD || n->op == OP_AVG_POOL2D_GRAD;
    int max = n->op == OP_MAX_POOL2D || n->op == OP_MAX_POOL2D_GRAD;
    const ir_shape *x = ishape(t, 0), *y = grad ? ishape(t, 1) : &n->shape;
    if (grad) memset(out, 0, (size_t)numel(x) * sizeof *out);
    for (int64_t b = 0; b < y->dim[0]; b++)
        for (int64_t oh = 0; oh < y->dim[1]; oh++)
            for (int64_t ow = 0; ow < y->dim[2]; ow++)
                for (int64_t c = 0; c < y->dim[3]; c++) {
                    double best = -INFINITY, sum = 0;
                    int64_t arg = -1, cnt = 0, idx[64];
                    for (int64_t r = 0; r < a[0]; r++)
                        for (int64_t s = 0; s < a[1]; s++) {
                            int64_t ih = oh * a[2] - a[4] + r, iw = ow * a[3] - a[5] + s;
                            if (ih < 0 || iw < 0 || ih >= x->dim[1] || iw >= x->dim[2]) continue;
                            int64_t xi = ((b * x->dim[1] + ih) * x->dim[2] + iw) * x->dim[3] + c;
                            idx[cnt++] = xi, sum += in[0][xi];
                            if (in[0][xi] > best) best = in[0][xi], arg = xi;
                        }
                    int64_t yi = ((b * y->dim[1] + oh) * y->dim[2] + ow) * y->dim[3] + c;
                    if (!grad) out[yi] = max ? best : sum / (double)cnt;
                    else if (max) out[arg] += in[1][yi];
                    else for (int64_t i = 0; i < cnt; i++) out[idx[i]] += in[1][yi] / (double)cnt;
                }
}

static void ref_reduce(const one_op *t, double **in, double *out) {
    const ir_shape *x = ishape(t, 0);
    int64_t axes = onode(t)->iattr[0], n_out = numel(oshape(t));
    memset(out, 0, (size_t)n_out * sizeof *out);
    for (int64_t i = 0; i < numel(x); i++) {
        int64_t rem = i, o = 0, stride = 1;
        for (int d = x->rank - 1; d >= 0; d--) {
            int64_t c = rem % x->dim[d];
            rem /= x->dim[d];
            if (!(axes >> d & 1)) o += c * stride, stride *= x->dim[d];
        }
        out[o] += in[0][i];
    }
    if (onode(t)->op == OP_REDUCE_MEAN)
        for (int64_t i = 0; i < n_out; i++) out[i] *= (double)n_out / (double)numel(x);
}

static void softmax_d(const double *x, double *y, int64_t n) {
    double mx = x[0], s = 0;
    for (int64_t j = 1; j < n; j++) mx = fmax(mx, x[j]);
    for (int64_t j = 0; j < n; j++) s += y[j] = exp(x[j] - mx);
    for (int64_t j = 0; j < n; j++) y[j] /= s;
}

/* softmax, log_softmax, softmax_grad(y, dy) along axis rank-1-from_end: each
 * column gathered into a row */
static void ref_softmax(const one_op *t, double **in, double *out) {
    const ir_shape *x = ishape(t, 0);
    int axis = x->rank - 1 - (int)onode(t)->iattr[0];
    int64_t C = x->dim[axis], inner = 1;
    for (int i = axis + 1; i < x->rank; i++) inner *= x->dim[i];
    double a[256], b[256], y[256];
    for (int64_t r = 0; r < numel(x) / C; r++) {
        int64_t base = r / inner * C * inner + r % inner;
        double dot = 0, lse = 0;
        for (int64_t j = 0; j < C; j++) a[j] = in[0][base + j * inner], b[j] = t->n_in > 1 ? in[1][base + j * inner] : 0;
        for (int64_t j = 0; j < C; j++) dot += a[j] * b[j], lse += exp(a[j]);
        softmax_d(a, y, C);
        for (int64_t j = 0; j < C; j++)
            out[base + j * inner] = onode(t)->op == OP_SOFTMAX       ? y[j]
                                    : onode(t)->op == OP_LOG_SOFTMAX ? a[j] - log(lse)
                                                                     : a[j] * (b[j] - dot);
    }
}

/* ---- shape ops and extreme reductions (issue 12) ---- */

static void coords(const ir_shape *s, int64_t k, int64_t *c) {
    for (int i = s->rank - 1; i >= 0; i--) c[i] = k % s->dim[i], k /= s->dim[i];
}

static int64_t flat(const ir_shape *s, const int64_t *c) {
    int64_t k = 0;
    for (int i = 0; i < s->rank; i++) k = k * s->dim[i] + c[i];
    return k;
}

static void ref_concat(const one_op *t, double **in, double *out) {
    int64_t c[IR_MAX_RANK], axis = onode(t)->iattr[0];
    for (int64_t k = 0; k < numel(oshape(t)); k++) {
        coords(oshape(t), k, c);
        int i = 0;
        while (c[axis] >= ishape(t, i)->dim[axis]) c[axis] -= ishape(t, i++)->dim[axis];
        out[k] = in[i][flat(ishape(t, i), c)];
    }
}

/* slice reads x at out + begin; pad places x at before, zeros elsewhere */
static void ref_slice_pad(const one_op *t, double **in, double *out) {
    int64_t c[IR_MAX_RANK];
    for (int64_t k = 0; k < numel(oshape(t)); k++) {
        coords(oshape(t), k, c);
        bool inside = true;
        for (int i = 0; i < oshape(t)->rank; i++) {
            c[i] += onode(t)->op == OP_SLICE ? onode(t)->iattr[i] : -onode(t)->iattr[i];
            inside &= c[i] >= 0 && c[i] < ishape(t, 0)->dim[i];
        }
        out[k] = inside ? in[0][flat(ishape(t, 0), c)] : 0;
    }
}

static void ref_transpose(const one_op *t, double **in, double *out) {
    int64_t c[IR_MAX_RANK], xc[IR_MAX_RANK];
    for (int64_t k = 0; k < numel(oshape(t)); k++) {
        coords(oshape(t), k, c);
        for (int i = 0; i < oshape(t)->rank; i++) xc[onode(t)->iattr[0] >> 4 * i & 15] = c[i];
        out[k] = in[0][flat(ishape(t, 0), xc)];
    }
}

static void ref_reduce_extreme(const one_op *t, double **in, double *out) {
    const ir_shape *x = ishape(t, 0);
    int64_t axes = onode(t)->iattr[0], c[IR_MAX_RANK];
    bool is_max = onode(t)->op == OP_REDUCE_MAX;
    for (int64_t i = 0; i < numel(oshape(t)); i++) out[i] = is_max ? -INFINITY : INFINITY;
    for (int64_t i = 0; i < numel(x); i++) {
        coords(x, i, c);
        int64_t o = 0;
        for (int d = 0; d < x->rank; d++)
            if (!(axes >> d & 1)) o = o * x->dim[d] + c[d];
        out[o] = is_max ? fmax(out[o], in[0][i]) : fmin(out[o], in[0][i]);
    }
}

static void ref_xent(const one_op *t, double **in, double *out) {
    int64_t B = ishape(t, 0)->dim[0], C = ishape(t, 0)->dim[1];
    double p[256];
    for (int64_t b = 0; b < B; b++) {
        const double *x = in[0] + b * C;
        int64_t lab = (int64_t)in[1][b], best = 0;
        softmax_d(x, p, C);
        for (int64_t j = 1; j < C; j++) best = x[j] > x[best] ? j : best;
        if (onode(t)->op == OP_SPARSE_XENT) out[b] = -log(p[lab]);
        else if (onode(t)->op == OP_ARGMAX_MATCH) out[b] = best == lab;
        else for (int64_t j = 0; j < C; j++) out[b * C + j] = in[2][b] * (p[j] - (j == lab));
    }
}

static void ref_dropout(const one_op *t, double **in, double *out) {
    double rate = onode(t)->fattr[0];
    for (int64_t i = 0; i < numel(oshape(t)); i++) {
        int keep = mg_dropout_uniform((uint64_t)onode(t)->iattr[0], t->step, (uint64_t)i) >= (float)rate;
        out[i] = keep ? in[0][i] / (1 - rate) : 0;
    }
}

/* assign: the state (in[0], written in place) takes the value */
static void ref_assign(const one_op *t, double **in, double *out) {
    (void)out;
    memcpy(in[0], in[1], (size_t)numel(oshape(t)) * sizeof **in);
}

/* in_training: input 0 in training, input 1 outside it */
static void ref_in_training(const one_op *t, double **in, double *out) {
    memcpy(out, in[t->training ? 0 : 1], (size_t)numel(oshape(t)) * sizeof *out);
}

/* optimizers update in[0] and the slots in place (Keras formulas, in double) */
static void ref_sgd(const one_op *t, double **in, double *out) {
    (void)out;
    double lr = onode(t)->fattr[0], mu = onode(t)->fattr[1];
    for (int64_t i = 0; i < numel(oshape(t)); i++) {
        double *p = &in[0][i], g = in[1][i];
        if (t->n_in < 3) { *p -= lr * g; continue; }
        double *v = &in[2][i];
        *v = mu * *v - lr * g;
        *p += onode(t)->iattr[0] ? mu * *v - lr * g : *v;
    }
}

static void ref_adam(const one_op *t, double **in, double *out) {
    (void)out;
    const double *f = onode(t)->fattr;
    double lr_t = f[0] * sqrt(1 - pow(f[2], (double)t->step)) / (1 - pow(f[1], (double)t->step));
    for (int64_t i = 0; i < numel(oshape(t)); i++) {
        double *p = &in[0][i], g = in[1][i], *m = &in[2][i], *v = &in[3][i];
        *p -= f[0] * f[4] * *p;
        *m = f[1] * *m + (1 - f[1]) * g;
        *v = f[2] * *v + (1 - f[2]) * g * g;
        *p -= lr_t * *m / (sqrt(*v) + f[3]);
    }
}

static void ref_rmsprop(const one_op *t, double **in, double *out) {
    (void)out;
    const double *f = onode(t)->fattr; /* lr, rho, momentum, epsilon */
    for (int64_t i = 0; i < numel(oshape(t)); i++) {
        double *p = &in[0][i], g = in[1][i], *ms = &in[2][i];
        *ms = f[1] * *ms + (1 - f[1]) * g * g;
        double inc = f[0] * g / sqrt(*ms + f[3]);
        if (t->n_in < 4) { *p -= inc; continue; }
        in[3][i] = f[2] * in[3][i] + inc;
        *p -= in[3][i];
    }
}

/* ---- issue 12: adagrad, nadam, lamb (at step t = 3, no clipping: tests/kern/test_optim.c
 * runs every optimizer for several steps with clipping and a schedule), sq_norm ---- */
static void ref_adagrad(const one_op *t, double **in, double *out) {
    (void)out;
    const double *f = onode(t)->fattr; /* lr, initial_accumulator_value, epsilon, weight_decay */
    for (int64_t i = 0; i < numel(oshape(t)); i++) {
        double *p = &in[0][i], g = in[1][i], *acc = &in[2][i];
        *p -= f[0] * f[3] * *p;
        *acc += g * g;
        *p -= f[0] * g / sqrt(*acc + f[2]);
    }
}

static void ref_nadam(const one_op *t, double **in, double *out) {
    (void)out;
    const double *f = onode(t)->fattr; /* lr, beta1, beta2, epsilon, weight_decay */
    double u[5], prod = 1;
    for (int i = 1; i <= (int)t->step + 1; i++) u[i] = f[1] * (1 - 0.5 * pow(0.96, 0.004 * i));
    for (int i = 1; i <= (int)t->step; i++) prod *= u[i];
    double ut = u[t->step], ut1 = u[t->step + 1];
    for (int64_t i = 0; i < numel(oshape(t)); i++) {
        double *p = &in[0][i], g = in[1][i], *m = &in[2][i], *v = &in[3][i];
        *p -= f[0] * f[4] * *p;
        *m = f[1] * *m + (1 - f[1]) * g;
        *v = f[2] * *v + (1 - f[2]) * g * g;
        double m_hat = ut1 * *m / (1 - prod * ut1) + (1 - ut) * g / (1 - prod);
        *p -= f[0] * m_hat / (sqrt(*v / (1 - pow(f[2], (double)t->step))) + f[3]);
    }
}

static void ref_lamb(const one_op *t, double **in, double *out) {
    (void)out;
    const double *f = onode(t)->fattr; /* lr, beta1, beta2, epsilon, weight_decay */
    int64_t n = numel(oshape(t));
    double c1 = 1 - pow(f[1], (double)t->step), c2 = 1 - pow(f[2], (double)t->step), pp = 0, rr = 0;
    double *r = calloc((size_t)n, sizeof *r);
    for (int64_t i = 0; i < n; i++) {
        double *p = &in[0][i], g = in[1][i], *m = &in[2][i], *v = &in[3][i];
        *p -= f[0] * f[4] * *p;
        *m = f[1] * *m + (1 - f[1]) * g;
        *v = f[2] * *v + (1 - f[2]) * g * g;
        r[i] = *m / c1 / (sqrt(*v / c2) + f[3]);
        pp += *p * *p, rr += r[i] * r[i];
    }
    for (int64_t i = 0; i < n; i++) in[0][i] -= f[0] * sqrt(pp) / sqrt(rr) * r[i];
    free(r);
}

static void ref_sq_norm(const one_op *t, double **in, double *out) {
    out[0] = 0;
    for (int j = 0; j < t->n_in; j++)
        for (int64_t i = 0; i < numel(&t->in_nodes[j]->shape); i++) out[0] += in[j][i] * in[j][i];
}

#endif
