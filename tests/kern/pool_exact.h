/* pool_exact.h (issue 14, speed) - the max-pool gradient's 2x2 stride-2 loop
 * (runtime/cpu/pool.c, what the kernel table runs) against epilogue.c's
 * general window kernel, bit for bit, with ties, -0/+0, -inf and NaN in x
 * and NaN in dy; included by test_kernels.c after its helpers. */
#ifndef MGC_KERN_POOL_EXACT_H
#define MGC_KERN_POOL_EXACT_H

#include <math.h>

#include "../../runtime/cpu/kernels_impl.h"

static int test_pool_grad_exact(void) {
    static const char *const shapes[][2] = {{"3,6,8,20", "3,3,4,20"}, {"2,26,26,32", "2,13,13,32"},
                                            {"1,4,2,70", "1,2,1,70"}};
    const float specials[] = {-INFINITY, -1.0f, -0.0f, 0.0f, 0.5f, 1.0f, NAN};
    int failed = 0;
    for (int op = 0; op < 2; op++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
            char err[256];
            ir_shape in[2] = {kh_shape(shapes[s][0]), kh_shape(shapes[s][1])};
            ir_dtype f[2] = {IR_F32, IR_F32};
            ir_op which = op ? OP_MAX_POOL2D_RELU_GRAD : OP_MAX_POOL2D_GRAD;
            one_op t;
            if (kh_build(&t, which, 2, in, f, (int64_t[IR_MAX_IATTR]){2, 2, 2, 2}, (double[6]){0}, NULL, 0, err,
                         sizeof err)) {
                fprintf(stderr, "FAIL pool grad exact: %s\n", err);
                failed++;
                continue;
            }
            int64_t nx = numel(&in[0]), ny = numel(&in[1]);
            float *x = t.in[0], *dy = t.in[1], *fast = malloc((size_t)nx * sizeof *fast);
            for (int64_t j = 0; j < nx; j++) /* half specials (ties within windows), half random */
                x[j] = uniform() < 0.5 ? specials[(int)(uniform() * 7)] : (float)(2 * uniform() - 1);
            for (int64_t j = 0; j < ny; j++) dy[j] = j % 97 == 5 ? NAN : (float)(2 * uniform() - 1);
            if (kh_run(&t, err, sizeof err) || (memcpy(fast, t.out, (size_t)nx * sizeof *fast), 0) ||
                cpu_k_max_pool_grad(&t.args, err, sizeof err)) {
                fprintf(stderr, "FAIL pool grad exact: %s\n", err);
                failed++;
            } else if (memcmp(fast, t.out, (size_t)nx * sizeof *fast)) {
                int64_t j = 0;
                while (!memcmp(&fast[j], &((float *)t.out)[j], sizeof *fast)) j++;
                fprintf(stderr, "FAIL pool grad exact %s %s: dx[%lld] = %.9g, epilogue.c's %.9g\n",
                        ir_ops[which].name, shapes[s][0], (long long)j, fast[j], ((float *)t.out)[j]);
                failed++;
            }
            free(fast);
            kh_free(&t);
        }
    return failed;
}

#endif
