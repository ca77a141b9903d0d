/* emu_step.cc - issue 15: the kernels that read the step counter from device
 * memory, run for several steps with the word advanced between launches (as
 * the backend does before each graph replay) and compared at every step with
 * the CPU's computation: the rate through the plan's schedule
 * (ir_learning_rate), mg_adam_lr_t, mg_nadam_coeffs, Lamb's 1 - b^t and the
 * per-element loops of runtime/cpu/optim.c. Each case also runs with the word
 * frozen at step 1 (what a graph replayed with a by-value step would do) and
 * fails unless that run differs from the reference: the comparison can see a
 * frozen step. MGC_EMU_FREEZE_STEP=1 freezes the word in the real runs too,
 * so the whole test fails (CTest: cuda_emu_frozen_step_fails, WILL_FAIL). */
#include <stdlib.h>

#include "emu_util.h" /* first: ir.h with C linkage */

#include "../../runtime/cuda/cuda_step.h"

enum { N = 1003, STEPS = 4 };

static bool freeze_env(void) {
    const char *e = getenv("MGC_EMU_FREEZE_STEP");
    return e && e[0] == '1';
}

/* the schedules the cases use: each makes the rate depend on the step */
static ir_lr_schedule schedule(int kind) {
    ir_lr_schedule s;
    memset(&s, 0, sizeof s);
    s.kind = (ir_lr_kind)kind;
    switch (kind) {
    case LR_COSINE_DECAY: s.decay_steps = 5, s.warmup_steps = 2, s.alpha = 0.1, s.warmup_target = 0.05; break;
    case LR_EXPONENTIAL_DECAY: s.decay_steps = 2, s.decay_rate = 0.5, s.staircase = false; break;
    case LR_PIECEWISE_CONSTANT:
        s.n_boundaries = 2, s.boundaries[0] = 1, s.boundaries[1] = 2, s.values[0] = 0.02, s.values[1] = 0.01,
        s.values[2] = 0.004;
        break;
    default: break;
    }
    return s;
}

/* one optimizer configuration: op, variant (sgd: 0 plain, 1 momentum, 2 nesterov;
 * rmsprop: momentum or not; lamb/adagrad: clipped or not), attrs as the node's fattr */
struct opt_case {
    const char *name;
    int op, variant, sched;
    double f[6];               /* lr, f1, f2, f3, weight_decay, clipnorm (as ir_ops' fattr order of the op) */
    bool clip;
};

static const opt_case opt_cases[] = {
    {"sgd", OP_SGD_UPDATE, 0, LR_EXPONENTIAL_DECAY, {0.1, 0, 0, 0, 1e-2, 0}, false},
    {"sgd momentum", OP_SGD_UPDATE, 1, LR_PIECEWISE_CONSTANT, {0.1, 0.9, 0, 0, 0, 0}, false},
    {"sgd nesterov clipped", OP_SGD_UPDATE, 2, LR_COSINE_DECAY, {0.1, 0.9, 0, 0, 1e-3, 0.5}, true},
    {"adam", OP_ADAM_UPDATE, 0, LR_CONSTANT, {1e-2, 0.9, 0.999, 1e-7, 0, 0}, false},
    {"adamw clipped", OP_ADAM_UPDATE, 0, LR_COSINE_DECAY, {1e-2, 0.9, 0.999, 1e-7, 4e-3, 0.5}, true},
    {"rmsprop", OP_RMSPROP_UPDATE, 0, LR_EXPONENTIAL_DECAY, {1e-2, 0.9, 0, 1e-7, 1e-3, 0}, false},
    {"rmsprop momentum", OP_RMSPROP_UPDATE, 1, LR_PIECEWISE_CONSTANT, {1e-2, 0.9, 0.5, 1e-7, 0, 0}, false},
    {"adagrad clipped", OP_ADAGRAD_UPDATE, 0, LR_CONSTANT, {0.1, 0.1, 1e-7, 0, 1e-3, 0.5}, true},
    {"nadam", OP_NADAM_UPDATE, 0, LR_EXPONENTIAL_DECAY, {1e-2, 0.9, 0.999, 1e-7, 1e-3, 0}, false},
    /* Lamb's trust ratio cancels most of its bias correction: a schedule makes the step show */
    {"lamb", OP_LAMB_UPDATE, 0, LR_EXPONENTIAL_DECAY, {1e-2, 0.9, 0.999, 1e-6, 1e-3, 0}, false},
    {"lamb clipped", OP_LAMB_UPDATE, 0, LR_COSINE_DECAY, {1e-2, 0.9, 0.999, 1e-6, 0, 0.5}, true},
};

/* p, g and two slots on the device, with host copies the reference updates */
struct opt_state {
    dbuf<float> p, g, s1, s2, sq;
    float rp[N], rg[N], r1[N], r2[N];
    explicit opt_state(unsigned seed) : p(N), g(N), s1(N), s2(N), sq(1) {
        randomize(p, N, seed), randomize(g, N, seed + 1), randomize(s1, N, seed + 2, -0.1f, 0.1f);
        randomize(s2, N, seed + 3, 0.0f, 0.1f); /* second moments are >= 0 */
        sq[0] = 4.0f;                            /* the norm 2 is clipped to 0.5 */
        memcpy(rp, p.p, sizeof rp), memcpy(rg, g.p, sizeof rg), memcpy(r1, s1.p, sizeof r1), memcpy(r2, s2.p, sizeof r2);
    }
    /* a new gradient for the next step, on both sides */
    void next_grad(unsigned seed) { randomize(g, N, seed), memcpy(rg, g.p, sizeof rg); }
    bool same_as_ref(const char *what, bool quiet) {
        const float *want[3] = {rp, r1, r2}, *got[3] = {p.p, s1.p, s2.p};
        for (int k = 0; k < 3; k++) {
            if (quiet) {
                for (int i = 0; i < N; i++)
                    if (want[k][i] != got[k][i] && fabs((double)want[k][i] - got[k][i]) > 1e-6 * fmax(1.0, fabs(want[k][i])))
                        return false;
            } else if (!same(what, want[k], got[k], N, 1e-6)) {
                return false;
            }
        }
        return true;
    }
};

/* the update of step t on the host arrays, as runtime/cpu/optim.c computes it */
static void reference(const opt_case &c, int64_t t, opt_state &s) {
    ir_optimizer o;
    memset(&o, 0, sizeof o);
    o.lr = c.f[0], o.schedule = schedule(c.sched);
    double lr = ir_learning_rate(&o, t - 1);
    float lr_wd = (float)(lr * c.f[4]), sc = c.clip ? mg_clip_scale(s.sq[0], (float)c.f[5]) : 1.0f;
    float b1 = (float)c.f[1], b2 = (float)c.f[2], eps = (float)c.f[3];
    switch (c.op) {
    case OP_SGD_UPDATE:
        for (int i = 0; i < N; i++) {
            mg_decay(&s.rp[i], lr_wd);
            if (c.variant) mg_sgd_momentum(&s.rp[i], s.rg[i] * sc, &s.r1[i], (float)lr, b1, c.variant == 2);
            else mg_sgd(&s.rp[i], s.rg[i] * sc, (float)lr);
        }
        break;
    case OP_ADAM_UPDATE: {
        float lr_t = mg_adam_lr_t((float)lr, b1, b2, t);
        for (int i = 0; i < N; i++) mg_adam(&s.rp[i], s.rg[i] * sc, &s.r1[i], &s.r2[i], lr_t, b1, b2, eps, lr_wd);
        break;
    }
    case OP_RMSPROP_UPDATE:
        for (int i = 0; i < N; i++) {
            mg_decay(&s.rp[i], lr_wd);
            if (c.variant) mg_rmsprop_momentum(&s.rp[i], s.rg[i] * sc, &s.r2[i], &s.r1[i], (float)lr, b1, b2, eps);
            else mg_rmsprop(&s.rp[i], s.rg[i] * sc, &s.r2[i], (float)lr, b1, eps);
        }
        break;
    case OP_ADAGRAD_UPDATE: /* f1: initial accumulator, f2: epsilon */
        for (int i = 0; i < N; i++) {
            if (t == 1) s.r2[i] = (float)c.f[1];
            mg_decay(&s.rp[i], lr_wd);
            mg_adagrad(&s.rp[i], s.rg[i] * sc, &s.r2[i], (float)lr, (float)c.f[2]);
        }
        break;
    case OP_NADAM_UPDATE: {
        float cm, cg, c2;
        mg_nadam_coeffs(c.f[1], c.f[2], t, &cm, &cg, &c2);
        for (int i = 0; i < N; i++)
            mg_decay(&s.rp[i], lr_wd), mg_nadam(&s.rp[i], s.rg[i] * sc, &s.r1[i], &s.r2[i], (float)lr, b1, b2, eps, cm, cg, c2);
        break;
    }
    default: { /* lamb */
        float c1 = (float)(1.0 - pow(c.f[1], (double)t)), c2 = (float)(1.0 - pow(c.f[2], (double)t));
        double pp = 0, rr = 0;
        for (int i = 0; i < N; i++) {
            mg_decay(&s.rp[i], lr_wd);
            mg_moments(s.rg[i] * sc, &s.r1[i], &s.r2[i], b1, b2);
            float r = mg_lamb_dir(s.r1[i], s.r2[i], c1, c2, eps);
            pp += (double)s.rp[i] * s.rp[i], rr += (double)r * r;
        }
        float step = (float)lr * mg_lamb_ratio(pp, rr);
        for (int i = 0; i < N; i++) s.rp[i] -= step * mg_lamb_dir(s.r1[i], s.r2[i], c1, c2, eps);
    }
    }
}

/* the kernel of c reading the step from word (as cuda_launch.c calls it) */
static cudaError_t launch(const opt_case &c, const int64_t *word, opt_state &s) {
    cuda_rate r;
    memset(&r, 0, sizeof r);
    r.op = c.op, r.lr = c.f[0], r.weight_decay = c.f[4], r.b1 = c.f[1], r.b2 = c.f[2], r.sched = schedule(c.sched);
    const float *sq = c.clip ? s.sq.p : NULL;
    float clip = (float)c.f[5];
    switch (c.op) {
    case OP_SGD_UPDATE:
        return cuda_k_sgd(s.p, s.g, c.variant ? s.s1.p : NULL, N, &r, word, (float)c.f[1], c.variant == 2, sq, clip, NULL);
    case OP_ADAM_UPDATE: return cuda_k_adam(s.p, s.g, s.s1, s.s2, N, &r, word, (float)c.f[3], sq, clip, NULL);
    case OP_RMSPROP_UPDATE:
        return cuda_k_rmsprop(s.p, s.g, s.s2, c.variant ? s.s1.p : NULL, N, &r, word, (float)c.f[1], (float)c.f[2],
                              (float)c.f[3], sq, clip, NULL);
    case OP_ADAGRAD_UPDATE:
        return cuda_k_adagrad(s.p, s.g, s.s2, N, &r, word, (float)c.f[2], (float)c.f[1], sq, clip, NULL);
    case OP_NADAM_UPDATE: return cuda_k_nadam(s.p, s.g, s.s1, s.s2, N, &r, word, (float)c.f[3], sq, clip, NULL);
    default: return cuda_k_lamb(s.p, s.g, s.s1, s.s2, N, &r, word, (float)c.f[3], sq, clip, NULL);
    }
}

/* STEPS updates with the word advanced each step (frozen: left at 1); returns
 * whether every step matched the reference (messages unless quiet) */
static bool run_steps(const opt_case &c, unsigned seed, bool frozen, bool quiet) {
    opt_state s(seed);
    dbuf<int64_t> word(1);
    word[0] = -5; /* written before the first step */
    bool all = true;
    for (int64_t t = 1; t <= STEPS && all; t++) {
        if ((t == 1 || !frozen) && !launched_ok(cuda_k_set_step(word, t, NULL), "cuda_k_set_step")) return false;
        if (t > 1) s.next_grad(seed + 10 * (unsigned)t);
        char what[96];
        snprintf(what, sizeof what, "cuda_k_%s step %lld", c.name, (long long)t);
        cudaError_t e = launch(c, word, s);
        if (quiet ? (e != cudaSuccess || cudaGetLastError() != cudaSuccess) : !launched_ok(e, what)) return false;
        reference(c, t, s);
        all = s.same_as_ref(what, quiet);
    }
    return all;
}

/* every configuration of op: right at every step, and a frozen word is seen */
static void optimizer_case(int op) {
    bool freeze = freeze_env();
    for (size_t k = 0; k < sizeof opt_cases / sizeof *opt_cases; k++) {
        const opt_case &c = opt_cases[k];
        if (c.op != op) continue;
        run_steps(c, 500 + 7 * (unsigned)k, freeze, false);
        if (run_steps(c, 500 + 7 * (unsigned)k, true, true)) {
            fprintf(stderr, "FAIL: cuda_k_%s: %d steps with the step word frozen at 1 match the reference: a frozen "
                            "step would go unseen\n", c.name, STEPS);
            failures++;
        }
    }
}

void case_sgd(void) { optimizer_case(OP_SGD_UPDATE); }
void case_adam(void) { optimizer_case(OP_ADAM_UPDATE); }
void case_rmsprop(void) { optimizer_case(OP_RMSPROP_UPDATE); }
void case_adagrad(void) { optimizer_case(OP_ADAGRAD_UPDATE); }
void case_nadam(void) { optimizer_case(OP_NADAM_UPDATE); }
void case_lamb(void) { optimizer_case(OP_LAMB_UPDATE); }

/* dropout's mask at each step from the word; a frozen word repeats step 1's mask */
void case_dropout(void) {
    dbuf<float> x(N), out(N);
    dbuf<int64_t> word(1);
    randomize(x, N, 43);
    bool freeze = freeze_env();
    for (int frozen = 0; frozen < 2; frozen++) {
        int same_steps = 0;
        for (int64_t t = 1; t <= STEPS; t++) {
            if ((t == 1 || !(frozen || freeze)) && !launched_ok(cuda_k_set_step(word, t, NULL), "cuda_k_set_step")) return;
            if (!launched_ok(cuda_k_dropout(x, out, N, 42, word, 1000, 0.3f, NULL), "cuda_k_dropout")) return;
            float want[N];
            for (int i = 0; i < N; i++) want[i] = mg_mul(x[i], mg_dropout_scale(42, t, 1000 + (uint64_t)i, 0.3f));
            char what[64];
            snprintf(what, sizeof what, "cuda_k_dropout step %lld", (long long)t);
            if (!frozen) same(what, want, out.p, N, 0);
            else same_steps += memcmp(want, out.p, sizeof want) == 0;
        }
        if (frozen && same_steps == STEPS) {
            fprintf(stderr, "FAIL: cuda_k_dropout: the masks of a frozen step word match every step's\n");
            failures++;
        }
    }
}

/* the word itself, and the device-side math of the rate and corrections
 * (cuda_step.h) against the CPU's for every schedule kind and many steps */
void case_set_step(void) {
    dbuf<int64_t> word(1);
    word[0] = 0;
    if (!launched_ok(cuda_k_set_step(word, 123456789012345LL, NULL), "cuda_k_set_step")) return;
    if (word[0] != 123456789012345LL) {
        fprintf(stderr, "FAIL: cuda_k_set_step: word %lld, want 123456789012345\n", (long long)word[0]);
        failures++;
    }
    ir_lr_schedule scheds[6];
    for (int k = 0; k < LR_COUNT; k++) scheds[k] = schedule(k);
    scheds[4] = schedule(LR_COSINE_DECAY), scheds[4].warmup_steps = 0, scheds[4].warmup_target = 0;
    scheds[5] = schedule(LR_EXPONENTIAL_DECAY), scheds[5].staircase = true, scheds[5].decay_steps = 3;
    const int ops[] = {OP_SGD_UPDATE, OP_ADAM_UPDATE, OP_RMSPROP_UPDATE, OP_ADAGRAD_UPDATE, OP_NADAM_UPDATE, OP_LAMB_UPDATE};
    int bad = 0;
    for (int k = 0; k < 6; k++)
        for (int op : ops)
            for (int64_t t = 1; t <= 300; t++) {
                ir_optimizer o;
                memset(&o, 0, sizeof o);
                o.lr = 0.03, o.schedule = scheds[k];
                cuda_rate r;
                memset(&r, 0, sizeof r);
                r.op = op, r.lr = 0.03, r.weight_decay = 4e-3, r.b1 = 0.9, r.b2 = 0.999, r.sched = scheds[k];
                cuda_coeffs c = cuda_step_coeffs(&r, t);
                double lr = ir_learning_rate(&o, t - 1);
                float cm = 0, cg = 0, c2 = 0, c1 = 0, lr_t = 0;
                if (op == OP_ADAM_UPDATE) lr_t = mg_adam_lr_t((float)lr, 0.9f, 0.999f, t);
                if (op == OP_NADAM_UPDATE) mg_nadam_coeffs(0.9, 0.999, t, &cm, &cg, &c2);
                if (op == OP_LAMB_UPDATE) c1 = (float)(1.0 - pow(0.9, (double)t)), c2 = (float)(1.0 - pow(0.999, (double)t));
                bool ok = cuda_lr_at(&r.sched, r.lr, t - 1) == lr && c.lr == (float)lr && c.lr_wd == (float)(lr * 4e-3) &&
                          c.lr_t == lr_t && c.cm == cm && c.cg == cg && c.c2 == c2 && c.c1 == c1 && c.first == (t == 1);
                if (!ok && bad++ == 0)
                    fprintf(stderr, "FAIL: cuda_step_coeffs: schedule %d, %s, step %lld: lr %.9g want %.9g\n", k,
                            ir_ops[op].name, (long long)t, (double)c.lr, lr);
            }
    if (bad) failures++;
}
