/* causal_matmul_cases.h - issue 14 (char_gpt speed): kernel cases of
 * causal_matmul against double loops: every triangle (the output, op(a),
 * op(b)), lower and upper, each transpose, batch broadcast, sizes across
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
     .ref = ref_causal_matmul},

#endif
