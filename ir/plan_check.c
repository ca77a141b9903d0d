/* plan_check.c - what running a plan needs beyond ir_verify (plan.h,
 * mgx_check_runnable): checked once when a plan is loaded, so the runtime
 * never meets a plan it cannot run. */
#include "plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int bad_plan(char *err, size_t cap, const char *name, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int bad_plan(char *err, size_t cap, const char *name, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mgx_one_line(msg);
    snprintf(err, cap, "%s: invalid plan: %s", name, msg);
    return -1;
}

/* The node rt_session_peer finds for `node` on replica r, or -1. */
static int peer_of(const ir_module *m, int node, int r) {
    const ir_node *x = &m->g.nodes[node];
    if (x->device == r) return node;
    for (int i = 0; i < m->g.n; i++) {
        const ir_node *y = &m->g.nodes[i];
        if (y->device == r && y->origin == x->origin && y->op == x->op && x->origin >= 0) return i;
    }
    return -1;
}

/* A per-example result (loss, metric, output): on replica 0, `rows` on axis 0,
 * with a copy of the same type on every replica. */
static int check_result(const ir_module *m, int node, const char *what, bool vector, const char *name, char *err,
                        size_t cap) {
    const ir_node *x = &m->g.nodes[node];
    char t[96];
    bool ok = x->device == 0 && x->shape.rank >= 1 && x->shape.dim[0] == m->batch_per_replica &&
              (!vector || (x->dtype == IR_F32 && x->shape.rank == 1));
    if (!ok)
        return bad_plan(err, cap, name, "%s (node %d, %s on device %d) is not %s[%lld%s] on device 0", what, node,
                        ir_type_str(x->dtype, &x->shape, t, sizeof t), x->device, vector ? "f32" : "a tensor",
                        (long long)m->batch_per_replica, vector ? "" : ", ...");
    for (int r = 1; r < m->n_devices; r++) {
        int j = peer_of(m, node, r);
        if (j < 0 || m->g.nodes[j].dtype != x->dtype || !ir_shape_eq(&m->g.nodes[j].shape, &x->shape))
            return bad_plan(err, cap, name, "%s (node %d) has no copy of its type on device %d", what, node, r);
    }
    return 0;
}

static int check_batch(const ir_module *m, const char *name, char *err, size_t cap) {
    if (m->n_devices < 1) return bad_plan(err, cap, name, "it has no devices");
    if (m->batch_per_replica < 1 || m->global_batch != m->batch_per_replica * m->n_devices)
        return bad_plan(err, cap, name, "global batch %lld is not %lld per replica x %d devices",
                        (long long)m->global_batch, (long long)m->batch_per_replica, m->n_devices);
    if (m->n_inputs > IR_MAX_INPUTS)
        return bad_plan(err, cap, name, "%d inputs (mgc runs models of at most %d)", m->n_inputs, IR_MAX_INPUTS);
    for (int k = 0; k < m->n_inputs; k++) {
        const ir_node *x = &m->g.nodes[m->inputs[k]];
        for (int j = 0; j < k; j++)
            if (m->inputs[j] == m->inputs[k]) return bad_plan(err, cap, name, "input '%s' is listed twice", x->name);
        if (x->shape.rank < 1 || x->shape.dim[0] != m->global_batch)
            return bad_plan(err, cap, name, "input '%s' does not hold the global batch of %lld on axis 0", x->name,
                            (long long)m->global_batch);
    }
    return 0;
}

static int check_results(const ir_module *m, const char *name, char *err, size_t cap) {
    if (m->n_metrics > IR_MAX_METRICS)
        return bad_plan(err, cap, name, "%d metrics (at most %d)", m->n_metrics, IR_MAX_METRICS);
    if (m->loss >= 0 && check_result(m, m->loss, "the loss", true, name, err, cap)) return -1;
    for (int k = 0; k < m->n_metrics; k++)
        if (check_result(m, m->metrics[k].node, "a metric", true, name, err, cap)) return -1;
    if (m->n_outputs > IR_MAX_OUTPUTS)
        return bad_plan(err, cap, name, "%d outputs (at most %d)", m->n_outputs, IR_MAX_OUTPUTS);
    for (int k = 0; k < m->n_outputs; k++)
        if (check_result(m, m->outputs[k].node, "an output", false, name, err, cap)) return -1;
    if (!m->has_train) return 0;
    if (m->loss < 0) return bad_plan(err, cap, name, "it trains but has no loss");
    for (int r = 0; r < m->n_devices; r++) { /* the report all-reduce of loss and metrics (runtime/train.c) */
        int found = 0;
        for (int i = 0; i < m->g.n; i++) {
            const ir_node *x = &m->g.nodes[i];
            if (x->op == OP_ALL_REDUCE && x->iattr[0] == m->n_buckets && x->device == r)
                found = found ? found : x->dtype == IR_F32 && ir_shape_numel(&x->shape) == 1 + m->n_metrics ? 1 : -1;
        }
        if (found != 1) return bad_plan(err, cap, name, "device %d has no report of the loss and metrics", r);
    }
    return 0;
}

/* Inputs live on the host, everything else at an offset of its device's
 * arena, and an arena is no larger than its tensors laid end to end. */
static int check_memory(const ir_module *m, const char *name, char *err, size_t cap) {
    if (!m->arena_bytes) return bad_plan(err, cap, name, "it has no memory plan");
    int64_t *sum = calloc((size_t)m->n_devices, sizeof *sum);
    if (!sum) abort();
    int rc = 0;
    for (int i = 0; i < m->g.n && !rc; i++) {
        const ir_node *x = &m->g.nodes[i];
        if ((x->op == OP_INPUT) != (x->device < 0))
            rc = bad_plan(err, cap, name, "node %d (%s) is %s", i, ir_ops[x->op].name,
                          x->op == OP_INPUT ? "an input on a device, not on the host" : "on no device");
        else if (x->device >= 0 && x->offset < 0)
            rc = bad_plan(err, cap, name, "node %d (%s) has no place in the arena of device %d", i,
                          ir_ops[x->op].name, x->device);
        else if (x->device >= 0)
            sum[x->device] += (ir_node_bytes(x) + 63) / 64 * 64; /* < 2^43 each: no overflow */
    }
    for (int d = 0; d < m->n_devices && !rc; d++)
        if (m->arena_bytes[d] > sum[d])
            rc = bad_plan(err, cap, name, "the arena of device %d (%lld bytes) exceeds its tensors (%lld bytes)", d,
                          (long long)m->arena_bytes[d], (long long)sum[d]);
    free(sum);
    return rc;
}

/* One list per (program, device, stream), in that order (runtime/exec.c). */
static int check_lists(const ir_module *m, const char *name, char *err, size_t cap) {
    int per = m->n_devices * STREAM_COUNT;
    if (m->n_sched != IR_PROGRAM_COUNT * per)
        return bad_plan(err, cap, name, "%d schedule lists, expected %d (%d programs x %d devices x %d streams)",
                        m->n_sched, IR_PROGRAM_COUNT * per, IR_PROGRAM_COUNT, m->n_devices, STREAM_COUNT);
    for (int s = 0; s < m->n_sched; s++) {
        const ir_sched_list *l = &m->sched[s];
        if (l->program != s / per || l->device != s % per / STREAM_COUNT || l->stream != s % STREAM_COUNT)
            return bad_plan(err, cap, name, "schedule list %d is out of order", s);
    }
    return 0;
}

int mgx_check_runnable(const ir_module *m, const char *name, char *err, size_t cap) {
    if (check_batch(m, name, err, cap) || check_results(m, name, err, cap) || check_memory(m, name, err, cap) ||
        check_lists(m, name, err, cap))
        return -1;
    return 0;
}
