/* causal_matmul_cases.h - issue 14 (char_gpt speed): kernel cases of
 * causal_matmul (and of causal_matmul_softmax and its gradient) against
 * double loops: every triangle (the output, op(a), op(b)), lower and upper,
 * each transpose, batch broadcast, sizes across
 * the kernel's 6 x 16 tiles and the 8 x 8 blocks of its transposed
 * packing; included by test_kernels.c after its helpers, CAUSAL_MATMUL_CASES
 * ends its table. The masked triangle of a triangular
 * operand holds random values the kernel must not read. */
#ifndef MGC_KERN_CAUSAL_MATMUL_CASES_H
#define MGC_KERN_CAUSAL_MATMUL_CASES_H

/* [i, j] of a square matrix kept by tril (upper 0) or triu (upper 1) */
static bool cm_keep(int64_t i, int64_t j, int upper) { return upper ? j >= i : j <= i; }

/* ref_matmul with the triangle: tri 0 masks the output, 1 op(a), 2 op(b) */
static void ref_causal_matmul(const one_op *t, double **in, double *out) {
    const ir_node *n = onode(t);
    const ir_shape *as = ishape(t, 0), *bs = ishape(t, 1), *os = oshape(t);
    int ta = n->iattr[0] != 0, tb = n->iattr[1] != 0, tri = (int)n->iattr[2], up = n->iattr[3] != 0;
    int nb = os->rank - 2;
    int64_t M = os->dim[nb], N = os->dim[nb + 1], K = as->dim[as->rank - 1 - ta], ob[IR_MAX_RANK];
    for (int64_t o = 0; o < numel(os); o++) {
        int64_t i = o / N % M, j = o % N, rest = o / (M * N);
        for (int d = nb - 1; d >= 0; d--) ob[d] = rest % os->dim[d], rest /= os->dim[d];
        double s = 0;
        for (int64_t p = 0; p < K; p++) {
            if ((tri == 1 && !cm_keep(i, p, up)) || (tri == 2 && !cm_keep(p, j, up))) continue;
            s += in[0][ta ? mm_at(as, ob, nb, p, i) : mm_at(as, ob, nb, i, p)] *
                 in[1][tb ? mm_at(bs, ob, nb, j, p) : mm_at(bs, ob, nb, p, j)];
        }
        out[o] = tri == 0 && !cm_keep(i, j, up) ? 0 : s;
    }
}

/* causal_matmul_softmax (a, b): the scores s = op(a) op(b) over the lower
 * triangle, then their causal softmax; causal_matmul_softmax_grad (a, b, y):
 * dp = op(a) op(b), masked by dropout's factor (mg_dropout_uniform of the
 * element at the step, as ref_causal_softmax_dropout_grad) when rate > 0,
 * then scale * y * (dp - sum_kept(dp * y)); 0 above the diagonal */
static void ref_causal_matmul_softmax(const one_op *t, double **in, double *out) {
    const ir_node *n = onode(t);
    const ir_shape *as = ishape(t, 0), *bs = ishape(t, 1), *os = oshape(t);
    int ta = n->iattr[0] != 0, tb = n->iattr[1] != 0, nb = os->rank - 2;
    int64_t M = os->dim[nb], K = as->dim[as->rank - 1 - ta], ob[IR_MAX_RANK];
    double scale = n->fattr[0], rate = n->fattr[1];
    bool grad = n->op == OP_CAUSAL_MATMUL_SOFTMAX_GRAD;
    for (int64_t row = 0; row < numel(os) / M; row++) {
        int64_t i = row % M, rest = row / M;
        for (int d = nb - 1; d >= 0; d--) ob[d] = rest % os->dim[d], rest /= os->dim[d];
        double *o = out + row * M, mx = -INFINITY, sum = 0, dot = 0;
        for (int64_t j = 0; j <= i; j++) {
            double s = 0;
            for (int64_t p = 0; p < K; p++)
                s += in[0][ta ? mm_at(as, ob, nb, p, i) : mm_at(as, ob, nb, i, p)] *
                     in[1][tb ? mm_at(bs, ob, nb, j, p) : mm_at(bs, ob, nb, p, j)];
            if (grad && rate > 0)
                s = mg_dropout_uniform((uint64_t)n->iattr[2], t->step, (uint64_t)(row * M + j)) >= (float)rate ? s / (1 - rate) : 0;
            o[j] = s;
            if (grad) dot += s * in[2][row * M + j];
            else mx = fmax(mx, scale * s);
        }
        for (int64_t j = 0; j <= i && !grad; j++) sum += exp(scale * o[j] - mx);
        for (int64_t j = 0; j < M; j++)
            o[j] = j > i ? 0 : grad ? scale * in[2][row * M + j] * (o[j] - dot) : exp(scale * o[j] - mx) / sum;
    }
}

/* causal_matmul_softmax and its gradient with data: char_gpt's q k^T and
 * do v^T forms (rows past the 6 x 16 tiles, with and without dropout), a
 * transposed a broadcast over the batch; run on ATTENTION_DROPOUT_CASES'
 * draws (test_kernels.c), the table holding an empty case of each */
#define CAUSAL_SCORES_CASES                                                                                           \
    {"causal_matmul_softmax q k^T", OP_CAUSAL_MATMUL_SOFTMAX, 2, {"2,3,37,8", "2,3,37,8"}, .iattr = {0, 1},           \
     .fattr = {0.17}, .ref = ref_causal_matmul_softmax},                                                              \
    {"causal_matmul_softmax trans_a broadcast", OP_CAUSAL_MATMUL_SOFTMAX, 2, {"2,1,9,21", "1,3,9,21"},               \
     .iattr = {1, 0}, .fattr = {-0.6}, .ref = ref_causal_matmul_softmax},                                             \
    {"causal_matmul_softmax_grad do v^T, dropout", OP_CAUSAL_MATMUL_SOFTMAX_GRAD, 3,                                  \
     {"2,3,37,8", "2,3,37,8", "2,3,37,37"}, .fill = {0, 0, R_POSITIVE}, .iattr = {0, 1, 42}, .fattr = {0.17, 0.3},   \
     .ref = ref_causal_matmul_softmax},                                                                               \
    {"causal_matmul_softmax_grad no dropout", OP_CAUSAL_MATMUL_SOFTMAX_GRAD, 3, {"3,20,5", "3,20,5", "3,20,20"},      \
     .fill = {0, 0, R_POSITIVE}, .iattr = {0, 1, 7}, .fattr = {1.3, 0}, .ref = ref_causal_matmul_softmax},

/* char_gpt's q k^T (tri 0, trans_b) and p v (tri 1) and their gradients'
 * forms at small sizes, then each triangle with each transpose */
#define CAUSAL_MATMUL_CASES                                                                                           \
    {"causal_matmul q k^T", OP_CAUSAL_MATMUL, 2, {"2,3,37,8", "2,3,37,8"}, .iattr = {0, 1, 0, 0},                     \
     .ref = ref_causal_matmul},                                                                                       \
    {"causal_matmul q k^T, k past 8 x 8 blocks", OP_CAUSAL_MATMUL, 2, {"1,2,45,19", "1,2,45,19"},                 \
     .iattr = {0, 1, 0, 0}, .ref = ref_causal_matmul},                                                                \
    {"causal_matmul p v", OP_CAUSAL_MATMUL, 2, {"2,3,37,37", "2,3,37,8"}, .iattr = {0, 0, 1, 0},                      \
     .ref = ref_causal_matmul},                                                                                       \
    {"causal_matmul dp^T q (a upper)", OP_CAUSAL_MATMUL, 2, {"2,3,37,37", "2,3,37,8"}, .iattr = {1, 0, 1, 1},         \
     .ref = ref_causal_matmul},                                                                                       \
    {"causal_matmul output upper trans_a", OP_CAUSAL_MATMUL, 2, {"3,7,70", "3,7,70"}, .iattr = {1, 0, 0, 1},           \
     .ref = ref_causal_matmul},                                                                                       \
    {"causal_matmul output lower trans_ab", OP_CAUSAL_MATMUL, 2, {"5,33", "33,5"}, .iattr = {1, 1, 0, 0},             \
     .ref = ref_causal_matmul},                                                                                       \
    {"causal_matmul a lower trans_ab", OP_CAUSAL_MATMUL, 2, {"9,9", "6,9"}, .iattr = {1, 1, 1, 0},                    \
     .ref = ref_causal_matmul},                                                                                       \
    {"causal_matmul a upper trans_b", OP_CAUSAL_MATMUL, 2, {"2,9,9", "6,9"}, .iattr = {0, 1, 1, 1},                   \
     .ref = ref_causal_matmul},                                                                                       \
    {"causal_matmul a upper trans_b, wide", OP_CAUSAL_MATMUL, 2, {"2,13,13", "21,13"}, .iattr = {0, 1, 1, 1},        \
     .ref = ref_causal_matmul},                                                                                       \
    {"causal_matmul b lower", OP_CAUSAL_MATMUL, 2, {"6,9", "2,9,9"}, .iattr = {0, 0, 2, 0}, .ref = ref_causal_matmul}, \
    {"causal_matmul b upper trans_ab", OP_CAUSAL_MATMUL, 2, {"2,1,9,6", "1,3,9,9"}, .iattr = {1, 1, 2, 1},            \
     .ref = ref_causal_matmul},                                                                                       \
    {"causal_matmul b lower trans_b", OP_CAUSAL_MATMUL, 2, {"4,6,9", "4,9,9"}, .iattr = {0, 1, 2, 0},                 \
     .ref = ref_causal_matmul},                                                                                       \
    {"causal_matmul b upper trans_a", OP_CAUSAL_MATMUL, 2, {"9,6", "9,9"}, .iattr = {1, 0, 2, 1},                     \
     .ref = ref_causal_matmul},                                                                                       \
    /* with data: CAUSAL_SCORES_CASES */                                                                              \
    {"causal_matmul_softmax no matrices", OP_CAUSAL_MATMUL_SOFTMAX, 2, {"0,5,4", "0,5,4"}, .iattr = {0, 1},           \
     .fattr = {0.5}, .ref = ref_causal_matmul_softmax},                                                               \
    {"causal_matmul_softmax_grad no matrices", OP_CAUSAL_MATMUL_SOFTMAX_GRAD, 3, {"0,5,4", "0,5,4", "0,5,5"},         \
     .iattr = {0, 1, 3}, .fattr = {0.5, 0.2}, .ref = ref_causal_matmul_softmax},

#endif
