/* cuda_step.h - what an optimizer kernel derives from the step counter it
 * reads from device memory (issue 15): the learning rate through the plan's
 * schedule, the decoupled decay and the bias corrections, computed as the CPU
 * kernels compute them on the host (runtime/cpu/optim.c: rt_update_rate,
 * mg_adam_lr_t, mg_nadam_coeffs, Lamb's 1 - b^t), in the same precision and
 * order. Host and device (MG_HD): tests/cuda_emu compares both with the CPU's
 * computation at every step and every schedule. */
#ifndef MGC_CUDA_STEP_H
#define MGC_CUDA_STEP_H

#include "../ops_math.h"
#include "cuda_kernels.h"

/* ir_learning_rate (ir/ir.c) for device code, which cannot call it: the same
 * formulas in the same order; tests/cuda_emu checks every kind against it. */
MG_HD static inline double cuda_lr_at(const ir_lr_schedule *s, double lr, int64_t step) {
    double t = (double)(step > 0 ? step : 0);
    switch (s->kind) {
    case LR_COSINE_DECAY: {
        double peak = s->warmup_target > 0 ? s->warmup_target : lr;
        if (t < (double)s->warmup_steps) return lr + (peak - lr) * t / (double)s->warmup_steps;
        double done = fmin(t - (double)s->warmup_steps, (double)s->decay_steps) / (double)s->decay_steps;
        return peak * ((1 - s->alpha) * 0.5 * (1 + cos(3.14159265358979323846 * done)) + s->alpha);
    }
    case LR_EXPONENTIAL_DECAY: {
        double p = t / (double)s->decay_steps;
        return lr * pow(s->decay_rate, s->staircase ? floor(p) : p);
    }
    case LR_PIECEWISE_CONSTANT: {
        int i = 0;
        while (i < s->n_boundaries && t > (double)s->boundaries[i]) i++;
        return s->values[i];
    }
    default: return lr;
    }
}

/* the per-step scalars of one update at 1-based step t */
typedef struct {
    float lr, lr_wd;            /* rate (schedule at t - 1), lr * weight_decay */
    float lr_t;                 /* adam: lr sqrt(1 - b2^t) / (1 - b1^t) */
    float cm, cg, c2;           /* nadam (mg_nadam_coeffs); c2 also lamb's 1 - b2^t */
    float c1;                   /* lamb: 1 - b1^t */
    int first;                  /* t == 1 (adagrad starts its accumulator) */
} cuda_coeffs;

MG_HD static inline cuda_coeffs cuda_step_coeffs(const cuda_rate *r, int64_t t) {
    cuda_coeffs c;
    double lr = cuda_lr_at(&r->sched, r->lr, t - 1);
    c.lr = (float)lr, c.lr_wd = (float)(lr * r->weight_decay), c.first = t == 1;
    c.lr_t = c.cm = c.cg = c.c2 = c.c1 = 0.0f;
    if (r->op == OP_ADAM_UPDATE) c.lr_t = mg_adam_lr_t((float)lr, (float)r->b1, (float)r->b2, t);
    if (r->op == OP_NADAM_UPDATE) mg_nadam_coeffs(r->b1, r->b2, t, &c.cm, &c.cg, &c.c2);
    if (r->op == OP_LAMB_UPDATE)
        c.c1 = (float)(1.0 - pow(r->b1, (double)t)), c.c2 = (float)(1.0 - pow(r->b2, (double)t));
    return c;
}

#if defined(__CUDACC__) || (defined(MGC_CUDA_EMU) && defined(__cplusplus))
/* the coefficients of the step in the device word *step, computed once per
 * block by thread 0 (double math once, not per element); every thread of the
 * block must call it */
__device__ static inline cuda_coeffs cuda_block_coeffs(const cuda_rate &r, const int64_t *step) {
    __shared__ cuda_coeffs c;
    if (threadIdx.x == 0) c = cuda_step_coeffs(&r, *step);
    __syncthreads();
    return c;
}
#endif

#endif
