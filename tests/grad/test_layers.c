/* test_layers.c - the stdlib layers of issue 12 built from primitives
 * (layer_norm, upsampling2d, zero_padding2d, split, logsumexp) and the
 * sequence helpers of issue 13 (lstm, gru, causal_mask, multi_head_attention,
 * positional_embedding): each one
 * elaborated from stdlib/nn.mg in a one-layer model, its output against a
 * hand-written double reference and its gradient (input and params) against
 * central differences, both through the reference evaluator.
 *   test_layers STDLIB_DIR */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../ir/diag.h"
#include "../../passes/passes.h"
#include "ref_eval.h"

static int failures;
static const char *stdlib_dir;

/* x [2, ...] is a param; L = mean over the batch of sum(tanh(y + 0.3) * y) */
static ir_module *build(const char *x_type, const char *layer) {
    char text[1024];
    snprintf(text, sizeof text,
             "use nn\nmodel layer {\n  param x: %s = glorot_uniform\n  %s\n  output y\n"
             "  loss = prim.reduce_mean(prim.reduce_sum(prim.reshape(prim.tanh(y + 0.3) * y, 2, -1), axes: 2), axes: 1)\n}\n"
             "train layer {\n  optimizer = sgd\n  batch = 2 per replica\n}\n", x_type, layer);
    ir_source src = {.path = "layer.mg", .text = text}; /* elaborated from memory, no temporary file */
    pass_options o;
    pass_options_default(&o);
    o.n_sources = 1, o.sources = &src;
    ir_diag *d = ir_diag_new(stderr);
    ir_module *m = pass_elaborate("layer.mg", stdlib_dir, d, &o);
    bool ok = m && ir_diag_errors(d) == 0 && pass_autodiff(m, d, &o);
    ir_diag_free(d);
    if (!ok) {
        fprintf(stderr, "FAIL %s: does not compile\n", layer);
        failures++;
        return NULL;
    }
    return m;
}

static uint64_t rng = 88172645463325252ull;
static double uniform(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return 2 * (double)(rng >> 11) / 9007199254740992.0 - 1;
}

static double loss(ref_eval *e, const ir_module *m) {
    ref_eval_run(e, 1, true);
    const double *l = ref_eval_data(e, m->loss);
    return (l[0] + l[1]) / 2;
}

/* worst relative error of every param's gradient against central differences */
static double fd_error(ref_eval *e, const ir_module *m) {
    double worst = 0;
    for (int p = 0; p < m->n_params; p++) {
        int pi = m->params[p];
        int64_t n = ir_shape_numel(&m->g.nodes[pi].shape);
        double *x = ref_eval_data(e, pi), *g = malloc((size_t)n * sizeof *g);
        loss(e, m);
        memcpy(g, ref_eval_data(e, m->grads[p]), (size_t)n * sizeof *g);
        for (int64_t k = 0; k < n; k++) {
            double x0 = x[k], h = 1e-5; /* ~cbrt(eps): 1e-6 left 3e-9 of rounding in the 12-matmul attention */
            x[k] = x0 + h;
            double up = loss(e, m);
            x[k] = x0 - h;
            double down = loss(e, m);
            x[k] = x0;
            double fd = (up - down) / (2 * h), err = fabs(fd - g[k]) / fmax(1e-3, fmax(fabs(fd), fabs(g[k])));
            worst = err > worst ? err : worst;
        }
        free(g);
    }
    return worst;
}

typedef void (*reference)(const ir_shape *xs, const double *x, ref_eval *e, const ir_module *m, double *want);

/* y = layer_norm(x): (x - mean) / sqrt(var + 0.001) * gamma + beta over the last axis */
static void ref_layer_norm(const ir_shape *xs, const double *x, ref_eval *e, const ir_module *m, double *want) {
    int64_t c = xs->dim[xs->rank - 1], rows = ir_shape_numel(xs) / c;
    const double *gamma = ref_eval_data(e, m->params[1]), *beta = ref_eval_data(e, m->params[2]);
    for (int64_t r = 0; r < rows; r++) {
        double mean = 0, var = 0;
        for (int64_t j = 0; j < c; j++) mean += x[r * c + j] / (double)c;
        for (int64_t j = 0; j < c; j++) var += (x[r * c + j] - mean) * (x[r * c + j] - mean) / (double)c;
        for (int64_t j = 0; j < c; j++) want[r * c + j] = (x[r * c + j] - mean) / sqrt(var + 0.001) * gamma[j] + beta[j];
    }
}

/* y = upsampling2d(x, size: [2, 3]): y[b, i, j, c] = x[b, i / 2, j / 3, c] */
static void ref_upsampling(const ir_shape *xs, const double *x, ref_eval *e, const ir_module *m, double *want) {
    (void)e, (void)m;
    int64_t H = xs->dim[1], W = xs->dim[2], C = xs->dim[3];
    for (int64_t b = 0; b < xs->dim[0]; b++)
        for (int64_t i = 0; i < 2 * H; i++)
            for (int64_t j = 0; j < 3 * W; j++)
                for (int64_t c = 0; c < C; c++)
                    *want++ = x[((b * H + i / 2) * W + j / 3) * C + c];
}

/* y = zero_padding2d(x, padding: [[1, 2], [0, 1]]) */
static void ref_zero_padding(const ir_shape *xs, const double *x, ref_eval *e, const ir_module *m, double *want) {
    (void)e, (void)m;
    int64_t H = xs->dim[1], W = xs->dim[2], C = xs->dim[3];
    for (int64_t b = 0; b < xs->dim[0]; b++)
        for (int64_t i = 0; i < H + 3; i++)
            for (int64_t j = 0; j < W + 1; j++)
                for (int64_t c = 0; c < C; c++)
                    *want++ = i >= 1 && i <= H && j < W ? x[((b * H + i - 1) * W + j) * C + c] : 0;
}

/* p, q, r = split(x [2, 6], 3, axis: 1); y = concat([r, p, q]): columns 4 5 0 1 2 3 */
static void ref_split(const ir_shape *xs, const double *x, ref_eval *e, const ir_module *m, double *want) {
    (void)xs, (void)e, (void)m;
    static const int cols[6] = {4, 5, 0, 1, 2, 3};
    for (int b = 0; b < 2; b++)
        for (int j = 0; j < 6; j++) *want++ = x[b * 6 + cols[j]];
}

/* y = logsumexp(x [2, 3, 4], axis: [1, 2]) */
static void ref_logsumexp(const ir_shape *xs, const double *x, ref_eval *e, const ir_module *m, double *want) {
    (void)xs, (void)e, (void)m;
    for (int b = 0; b < 2; b++) {
        double s = 0;
        for (int k = 0; k < 12; k++) s += exp(x[b * 12 + k]);
        want[b] = log(s);
    }
}

/* issue 13: y = dense(x [2, 3, 4], 5) on the last axis: y[b, t, u] = sum_k x[b, t, k] W[k, u] + bias[u] */
static void ref_dense3(const ir_shape *xs, const double *x, ref_eval *e, const ir_module *m, double *want) {
    (void)xs;
    const double *w = ref_eval_data(e, m->params[1]), *bias = ref_eval_data(e, m->params[2]);
    for (int r = 0; r < 6; r++)
        for (int u = 0; u < 5; u++) {
            double s = bias[u];
            for (int k = 0; k < 4; k++) s += x[r * 4 + k] * w[k * 5 + u];
            *want++ = s;
        }
}

/* issue 13: y = matmul(x [2, 4, 3], w [5, 4], transpose_a: true, transpose_b: true):
 * y[b, i, j] = sum_k x[b, k, i] w[j, k] */
static void ref_matmul_tt(const ir_shape *xs, const double *x, ref_eval *e, const ir_module *m, double *want) {
    (void)xs;
    const double *w = ref_eval_data(e, m->params[1]);
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 5; j++) {
                double s = 0;
                for (int k = 0; k < 4; k++) s += x[(b * 4 + k) * 3 + i] * w[j * 4 + k];
                *want++ = s;
            }
}

/* ---- recurrent layers (issue 13): x [B, T, F], units U, every step (return_sequences) ---- */

static double sigm(double v) { return 1 / (1 + exp(-v)); }

/* Keras LSTM: z = x_s W + h R + bias, gates i f c o; c = f c + i tanh(c~), h = o tanh(c) */
static void lstm_ref(const ir_shape *xs, const double *x, ref_eval *e, const ir_module *m, double *want, bool seq) {
    int64_t B = xs->dim[0], T = xs->dim[1], F = xs->dim[2], U = 3;
    const double *W = ref_eval_data(e, m->params[1]), *R = ref_eval_data(e, m->params[2]), *bias = ref_eval_data(e, m->params[3]);
    for (int64_t b = 0; b < B; b++) {
        double h[3] = {0}, c[3] = {0}, z[12];
        for (int64_t s = 0; s < T; s++) {
            for (int64_t g = 0; g < 4 * U; g++) {
                z[g] = bias[g];
                for (int64_t k = 0; k < F; k++) z[g] += x[(b * T + s) * F + k] * W[k * 4 * U + g];
                for (int64_t k = 0; k < U; k++) z[g] += h[k] * R[k * 4 * U + g];
            }
            for (int64_t j = 0; j < U; j++) {
                c[j] = sigm(z[U + j]) * c[j] + sigm(z[j]) * tanh(z[2 * U + j]);
                h[j] = sigm(z[3 * U + j]) * tanh(c[j]);
                if (seq) want[(b * T + s) * U + j] = h[j];
                else if (s == T - 1) want[b * U + j] = h[j];
            }
        }
    }
}
static void ref_lstm_seq(const ir_shape *xs, const double *x, ref_eval *e, const ir_module *m, double *want) {
    lstm_ref(xs, x, e, m, want, true);
}
static void ref_lstm_last(const ir_shape *xs, const double *x, ref_eval *e, const ir_module *m, double *want) {
    lstm_ref(xs, x, e, m, want, false);
}

/* Keras 3 GRU, reset_after: xz = x_s W + bias[0], hr = h R + bias[1], gates z r h;
 * h~ = tanh(xz_h + r hr_h), h = z h + (1 - z) h~ */
static void ref_gru_seq(const ir_shape *xs, const double *x, ref_eval *e, const ir_module *m, double *want) {
    int64_t B = xs->dim[0], T = xs->dim[1], F = xs->dim[2], U = 3;
    const double *W = ref_eval_data(e, m->params[1]), *R = ref_eval_data(e, m->params[2]), *bias = ref_eval_data(e, m->params[3]);
    for (int64_t b = 0; b < B; b++) {
        double h[3] = {0}, xz[9], hr[9];
        for (int64_t s = 0; s < T; s++) {
            for (int64_t g = 0; g < 3 * U; g++) {
                xz[g] = bias[g], hr[g] = bias[3 * U + g];
                for (int64_t k = 0; k < F; k++) xz[g] += x[(b * T + s) * F + k] * W[k * 3 * U + g];
                for (int64_t k = 0; k < U; k++) hr[g] += h[k] * R[k * 3 * U + g];
            }
            for (int64_t j = 0; j < U; j++) {
                double zg = sigm(xz[j] + hr[j]), r = sigm(xz[U + j] + hr[U + j]);
                double cand = tanh(xz[2 * U + j] + r * hr[2 * U + j]);
                h[j] = zg * h[j] + (1 - zg) * cand;
                want[(b * T + s) * U + j] = h[j];
            }
        }
    }
}

/* y = x * causal_mask(t), x [2, t, t]: x where j <= i, else 0 */
static void ref_causal(const ir_shape *xs, const double *x, ref_eval *e, const ir_module *m, double *want) {
    (void)e, (void)m;
    int64_t t = xs->dim[1];
    for (int64_t b = 0; b < xs->dim[0]; b++)
        for (int64_t i = 0; i < t; i++)
            for (int64_t j = 0; j < t; j++, x++) *want++ = j <= i ? *x : 0;
}

/* ---- attention (issue 13) ---- */

/* y = multi_head_attention(x [B, T, D], ...): Keras self-attention in doubles.
 * Params (after x): query kernel [D, H, K] (+ bias [H, K]), key the same,
 * value kernel [D, H, V] (+ bias), output kernel [H, V, D] (+ bias [D]); with
 * use_bias false the biases are absent. Causal: position i sees j <= i only. */
static void mha_ref(const ir_shape *xs, const double *x, ref_eval *e, const ir_module *m, double *want, bool causal) {
    int64_t B = xs->dim[0], T = xs->dim[1], D = xs->dim[2];
    bool bias = m->n_params == 9;
    int step = bias ? 2 : 1, wo_at = 1 + 3 * step;
    const ir_shape *qs = &m->g.nodes[m->params[1]].shape, *vs = &m->g.nodes[m->params[1 + 2 * step]].shape;
    int64_t H = qs->dim[1], K = qs->dim[2], V = vs->dim[2];
    const double *w[3], *bb[3], *wo = ref_eval_data(e, m->params[wo_at]);
    const double *bo = bias ? ref_eval_data(e, m->params[wo_at + 1]) : NULL;
    for (int k = 0; k < 3; k++) {
        w[k] = ref_eval_data(e, m->params[1 + k * step]);
        bb[k] = bias ? ref_eval_data(e, m->params[2 + k * step]) : NULL;
    }
    double *proj[3], *p = malloc((size_t)T * sizeof *p), *o = malloc((size_t)(T * H * V) * sizeof *o);
    int64_t width[3] = {K, K, V};
    for (int k = 0; k < 3; k++) proj[k] = malloc((size_t)(T * H * width[k]) * sizeof *proj[k]);
    for (int64_t b = 0; b < B; b++) {
        const double *xb = x + b * T * D;
        for (int k = 0; k < 3; k++) /* proj[k][t, h, c] = x[t] . w[:, h, c] + bias[h, c] */
            for (int64_t t = 0; t < T; t++)
                for (int64_t hc = 0; hc < H * width[k]; hc++) {
                    double s = bb[k] ? bb[k][hc] : 0;
                    for (int64_t c = 0; c < D; c++) s += xb[t * D + c] * w[k][c * H * width[k] + hc];
                    proj[k][t * H * width[k] + hc] = s;
                }
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < T; i++) {
                double mx = -INFINITY, sum = 0;
                int64_t seen = causal ? i + 1 : T;
                for (int64_t j = 0; j < seen; j++) {
                    double s = 0;
                    for (int64_t c = 0; c < K; c++) s += proj[0][(i * H + h) * K + c] * proj[1][(j * H + h) * K + c];
                    p[j] = s / sqrt((double)K), mx = fmax(mx, p[j]);
                }
                for (int64_t j = 0; j < seen; j++) p[j] = exp(p[j] - mx), sum += p[j];
                for (int64_t c = 0; c < V; c++) {
                    double s = 0;
                    for (int64_t j = 0; j < seen; j++) s += p[j] / sum * proj[2][(j * H + h) * V + c];
                    o[(i * H + h) * V + c] = s;
                }
            }
        for (int64_t i = 0; i < T; i++) /* y[i, u] = o[i] . wo[:, :, u] + bo[u] */
            for (int64_t u = 0; u < D; u++) {
                double s = bo ? bo[u] : 0;
                for (int64_t hc = 0; hc < H * V; hc++) s += o[i * H * V + hc] * wo[hc * D + u];
                want[(b * T + i) * D + u] = s;
            }
    }
    for (int k = 0; k < 3; k++) free(proj[k]);
    free(p), free(o);
}
static void ref_mha(const ir_shape *xs, const double *x, ref_eval *e, const ir_module *m, double *want) {
    mha_ref(xs, x, e, m, want, false);
}
static void ref_mha_causal(const ir_shape *xs, const double *x, ref_eval *e, const ir_module *m, double *want) {
    mha_ref(xs, x, e, m, want, true);
}

/* y = positional_embedding(x [B, T, D], max_len): x[b, t] + embeddings[t] */
static void ref_positional(const ir_shape *xs, const double *x, ref_eval *e, const ir_module *m, double *want) {
    int64_t n = ir_shape_numel(xs), td = xs->dim[1] * xs->dim[2];
    const double *table = ref_eval_data(e, m->params[1]);
    for (int64_t k = 0; k < n; k++) want[k] = x[k] + table[k % td];
}

static void check(const char *x_type, const char *layer, reference ref) {
    ir_module *m = build(x_type, layer);
    if (!m) return;
    ref_eval *e = ref_eval_new(m);
    for (int p = 0; p < m->n_params; p++) {
        double *v = ref_eval_data(e, m->params[p]);
        for (int64_t k = 0; k < ir_shape_numel(&m->g.nodes[m->params[p]].shape); k++) v[k] = uniform();
    }
    loss(e, m);
    const ir_node *xn = &m->g.nodes[m->params[0]], *yn = &m->g.nodes[m->outputs[0].node];
    int64_t n = ir_shape_numel(&yn->shape);
    double *want = calloc((size_t)n + 1, sizeof *want), worst = 0;
    ref(&xn->shape, ref_eval_data(e, m->params[0]), e, m, want);
    for (int64_t k = 0; k < n; k++) worst = fmax(worst, fabs(ref_eval_data(e, m->outputs[0].node)[k] - want[k]));
    double fd = fd_error(e, m);
    printf("  %-50s output error %.1e, gradient error %.1e\n", layer, worst, fd);
    if (!(worst < 1e-12) || !(fd < 1e-6)) {
        fprintf(stderr, "FAIL %s: output differs by %g from the reference, gradient by %g\n", layer, worst, fd);
        failures++;
    }
    free(want);
    ref_eval_free(e);
    ir_module_free(m);
}

int main(int argc, char **argv) {
    if (argc != 2) return fprintf(stderr, "usage: test_layers STDLIB_DIR\n"), 2;
    stdlib_dir = argv[1];
    check("f32[2, 5]", "y = layer_norm(x)", ref_layer_norm);
    check("f32[2, 3, 4, 5]", "y = layer_norm(x)", ref_layer_norm);
    check("f32[2, 3, 2, 3]", "y = upsampling2d(x, size: [2, 3])", ref_upsampling);
    check("f32[2, 3, 2, 3]", "y = zero_padding2d(x, padding: [[1, 2], [0, 1]])", ref_zero_padding);
    check("f32[2, 6]", "p, q, r = split(x, 3, axis: 1)\n  y = concat([r, p, q], axis: 1)", ref_split);
    check("f32[2, 3, 4]", "y = logsumexp(x, axis: [1, 2])", ref_logsumexp);
    check("f32[2, 3, 4]", "y = dense(x, 5)", ref_dense3);
    check("f32[2, 4, 3]", "param w: f32[5, 4] = glorot_uniform\n  y = matmul(x, w, transpose_a: true, transpose_b: true)",
          ref_matmul_tt);
    check("f32[2, 3, 2]", "y = lstm(x, 3, return_sequences: true)", ref_lstm_seq);
    check("f32[2, 4, 2]", "y = lstm(x, 3)", ref_lstm_last);
    check("f32[2, 3, 2]", "y = gru(x, 3, return_sequences: true)", ref_gru_seq);
    check("f32[2, 1, 1]", "y = x * causal_mask(1)", ref_causal);
    check("f32[2, 2, 2]", "y = x * causal_mask(2)", ref_causal);
    check("f32[2, 5, 5]", "y = x * causal_mask(5)", ref_causal);
    /* attention (issue 13): Keras MultiHeadAttention and a position embedding */
    check("f32[2, 4, 6]", "y = multi_head_attention(x, heads: 2, key_dim: 3)", ref_mha);
    check("f32[2, 5, 4]", "y = multi_head_attention(x, heads: 3, key_dim: 2, causal: true)", ref_mha_causal);
    check("f32[2, 3, 4]", "y = multi_head_attention(x, heads: 2, key_dim: 3, value_dim: 2, causal: true, use_bias: false)",
          ref_mha_causal);
    check("f32[2, 3, 4]", "y = positional_embedding(x, 5)", ref_positional);
    check("f32[2, 3, 4]", "y = positional_embedding(x, 3)", ref_positional);
    printf("layers: %s\n", failures ? "FAILED" : "all passed");
    return failures != 0;
}
