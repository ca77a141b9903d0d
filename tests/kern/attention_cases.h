/* attention_cases.h - issue 14 (char_gpt speed): kernel cases of
 * causal_softmax, causal_softmax_grad, normalize and normalize_grad against
 * double loops; included by
 * test_kernels.c after its helpers, ATTENTION_CASES ends its table. */
#ifndef MGC_KERN_ATTENTION_CASES_H
#define MGC_KERN_ATTENTION_CASES_H

/* rows of the last axis; row i of each [r, c] matrix keeps j <= i, the rest 0:
 * causal_softmax(x) = softmax of scale * x over the kept j;
 * causal_softmax_grad(y, dy) = scale * y * (dy - sum_kept(dy * y)) */
static void ref_causal_softmax(const one_op *t, double **in, double *out) {
    const ir_shape *s = ishape(t, 0);
    int64_t r = s->dim[s->rank - 2], c = s->dim[s->rank - 1];
    double scale = onode(t)->fattr[0];
    bool grad = onode(t)->op == OP_CAUSAL_SOFTMAX_GRAD;
    for (int64_t row = 0; row < numel(s) / c; row++) {
        int64_t i = row % r, n = i + 1 < c ? i + 1 : c;
        const double *x = in[0] + row * c, *dy = grad ? in[1] + row * c : NULL;
        double *y = out + row * c, mx = -INFINITY, sum = 0, dot = 0;
        for (int64_t j = 0; j < n; j++) mx = fmax(mx, scale * x[j]), dot += grad ? x[j] * dy[j] : 0;
        for (int64_t j = 0; j < n; j++) sum += exp(scale * x[j] - mx);
        for (int64_t j = 0; j < c; j++)
            y[j] = j >= n ? 0 : grad ? scale * x[j] * (dy[j] - dot) : exp(scale * x[j] - mx) / sum;
    }
}

/* rows of the last axis: normalize(x) = (x - mean) r, r = 1 / sqrt(var + epsilon);
 * normalize_grad(x, dy) = r (dy - mean(dy) - xhat mean(dy xhat)) */
static void ref_normalize(const one_op *t, double **in, double *out) {
    const ir_shape *s = ishape(t, 0);
    int64_t c = s->dim[s->rank - 1];
    bool grad = onode(t)->op == OP_NORMALIZE_GRAD;
    for (int64_t row = 0; row < numel(s) / c; row++) {
        const double *x = in[0] + row * c, *dy = grad ? in[1] + row * c : NULL;
        double mean = 0, var = 0, m_dy = 0, m_dyx = 0;
        for (int64_t j = 0; j < c; j++) mean += x[j] / (double)c;
        for (int64_t j = 0; j < c; j++) var += (x[j] - mean) * (x[j] - mean) / (double)c;
        double r = 1 / sqrt(var + onode(t)->fattr[0]);
        for (int64_t j = 0; j < c && grad; j++) m_dy += dy[j] / (double)c, m_dyx += dy[j] * (x[j] - mean) * r / (double)c;
        for (int64_t j = 0; j < c; j++)
            out[row * c + j] = grad ? r * (dy[j] - m_dy - (x[j] - mean) * r * m_dyx) : (x[j] - mean) * r;
    }
}

/* char_gpt's [b, heads, t, t] at small sizes; rows longer than 16 and not a
 * multiple of 16 (the vector loops' tails), more rows than columns and fewer */
#define ATTENTION_CASES                                                                                               \
    {"causal_softmax", OP_CAUSAL_SOFTMAX, 1, {"2,3,37,37"}, .fill = {R_WIDE}, .fattr = {0.17}, .ref = ref_causal_softmax}, \
    {"causal_softmax rows > cols", OP_CAUSAL_SOFTMAX, 1, {"3,9,5"}, .fill = {R_WIDE}, .fattr = {1.0},                  \
     .ref = ref_causal_softmax},                                                                                      \
    {"causal_softmax rows < cols", OP_CAUSAL_SOFTMAX, 1, {"4,21"}, .fill = {R_WIDE}, .fattr = {-0.6},                 \
     .ref = ref_causal_softmax},                                                                                      \
    {"causal_softmax_grad", OP_CAUSAL_SOFTMAX_GRAD, 2, {"2,3,37,37", "2,3,37,37"}, .fill = {R_POSITIVE, R_SIGNED},    \
     .fattr = {0.17}, .ref = ref_causal_softmax},                                                                     \
    {"causal_softmax_grad rows > cols", OP_CAUSAL_SOFTMAX_GRAD, 2, {"3,9,5", "3,9,5"},                               \
     .fill = {R_POSITIVE, R_SIGNED}, .fattr = {1.0}, .ref = ref_causal_softmax},                                   \
    {"normalize rows of 128", OP_NORMALIZE, 1, {"2,9,128"}, .fill = {R_WIDE}, .fattr = {1e-5}, .ref = ref_normalize},   \
    {"normalize rows of 37", OP_NORMALIZE, 1, {"5,37"}, .fattr = {1e-3}, .ref = ref_normalize},                        \
    {"normalize_grad rows of 128", OP_NORMALIZE_GRAD, 2, {"2,9,128", "2,9,128"}, .fill = {R_WIDE, R_SIGNED},          \
     .fattr = {1e-5}, .ref = ref_normalize},                                                                          \
    {"normalize_grad rows of 37", OP_NORMALIZE_GRAD, 2, {"5,37", "5,37"}, .fattr = {0.01}, .ref = ref_normalize},

#endif
