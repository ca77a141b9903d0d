/* describe.c - libmgc's descriptions of a plan: the IR as text or
 * Graphviz dot (mgc dump) and the summary of mgc inspect (inputs, outputs,
 * devices, optimizer, params, buckets, sparse exchanges, memory, races). */
#define _GNU_SOURCE /* open_memstream */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/order.h"
#include "../ir/plan.h"
#include "api_impl.h"

static void print_bytes(FILE *f, int64_t b) {
    if (b >= INT64_C(1) << 40) fprintf(f, "%.2f TiB", (double)b / (double)(INT64_C(1) << 40));
    else if (b >= 1 << 30) fprintf(f, "%.2f GiB", (double)b / (1 << 30));
    else if (b >= 1 << 20) fprintf(f, "%.2f MiB", (double)b / (1 << 20));
    else if (b >= 1 << 10) fprintf(f, "%.1f KiB", (double)b / (1 << 10));
    else fprintf(f, "%lld B", (long long)b);
}

/* 693962 -> "693,962" */
static const char *thousands(int64_t v, char *buf) {
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%lld", (long long)v), k = 0;
    for (int i = 0; i < n; i++) {
        if (i && (n - i) % 3 == 0) buf[k++] = ',';
        buf[k++] = tmp[i];
    }
    buf[k] = 0;
    return buf;
}

static void inspect(FILE *f, const char *path, const ir_module *m) {
    char t[96], num[32];
    fprintf(f, "plan          %s (format version %d)\n", path, MGX_VERSION);
    fprintf(f, "model         %s (%s)\n", m->model_name, m->source_file ? m->source_file : "?");
    fprintf(f, "inputs       ");
    for (int k = 0; k < m->n_inputs; k++) {
        const ir_node *n = &m->g.nodes[m->inputs[k]];
        fprintf(f, " %s: %s", n->name, ir_type_str(n->dtype, &n->shape, t, sizeof t));
    }
    fprintf(f, "   (global batch %lld = %lld per replica x %d)\n", (long long)m->global_batch,
           (long long)m->batch_per_replica, m->n_devices);
    if (m->n_outputs) fprintf(f, "outputs      ");
    for (int k = 0; k < m->n_outputs; k++) { /* as predict writes them: every example */
        ir_shape s = m->g.nodes[m->outputs[k].node].shape;
        s.dim[0] = m->global_batch;
        fprintf(f, " %s: %s%s", m->outputs[k].name, ir_type_str(m->g.nodes[m->outputs[k].node].dtype, &s, t, sizeof t),
               k < m->n_outputs - 1 ? "" : m->n_outputs > 1 ? "   (predict -o OUT.npy writes OUT.NAME.npy each)\n" : "\n");
    }
    fprintf(f, "devices      ");
    for (int d = 0; d < m->n_devices; d++) fprintf(f, " %s:%d", m->devices[d].name, m->devices[d].index);
    fprintf(f, "   (cross-device ops: %s)\n", ir_cross_device_names[m->cross_device]);
    if (m->has_train) {
        const ir_optimizer *o = &m->opt;
        const ir_lr_schedule *sc = &o->schedule;
        fprintf(f, "optimizer     %s  learning_rate=", ir_optimizer_names[o->kind]);
        if (sc->kind == LR_CONSTANT) fprintf(f, "%g", o->lr);
        else if (sc->kind == LR_COSINE_DECAY)
            fprintf(f, "cosine_decay(%g, decay_steps=%lld, alpha=%g, warmup_target=%g, warmup_steps=%lld)", o->lr,
                   (long long)sc->decay_steps, sc->alpha, sc->warmup_target, (long long)sc->warmup_steps);
        else if (sc->kind == LR_EXPONENTIAL_DECAY)
            fprintf(f, "exponential_decay(%g, decay_steps=%lld, decay_rate=%g, staircase=%s)", o->lr,
                   (long long)sc->decay_steps, sc->decay_rate, sc->staircase ? "true" : "false");
        else {
            fprintf(f, "piecewise_constant(boundaries=[");
            for (int k = 0; k < sc->n_boundaries; k++) fprintf(f, "%s%lld", k ? ", " : "", (long long)sc->boundaries[k]);
            fprintf(f, "], values=[");
            for (int k = 0; k <= sc->n_boundaries; k++) fprintf(f, "%s%g", k ? ", " : "", sc->values[k]);
            fprintf(f, "])");
        }
        bool adam_like = o->kind == OPT_ADAM || o->kind == OPT_ADAMW || o->kind == OPT_NADAM || o->kind == OPT_LAMB;
        if (adam_like) fprintf(f, " beta1=%g beta2=%g epsilon=%g", o->beta1, o->beta2, o->epsilon);
        if (o->kind == OPT_SGD) fprintf(f, " momentum=%g nesterov=%s", o->momentum, o->nesterov ? "true" : "false");
        if (o->kind == OPT_RMSPROP) fprintf(f, " rho=%g momentum=%g epsilon=%g", o->rho, o->momentum, o->epsilon);
        if (o->kind == OPT_ADAGRAD) fprintf(f, " initial_accumulator_value=%g epsilon=%g", o->initial_accumulator_value, o->epsilon);
        if (o->kind == OPT_ADAMW || o->weight_decay > 0) fprintf(f, " weight_decay=%g", o->weight_decay);
        if (o->clipnorm > 0) fprintf(f, " clipnorm=%g", o->clipnorm);
        if (o->global_clipnorm > 0) fprintf(f, " global_clipnorm=%g", o->global_clipnorm);
        fprintf(f, "\n");
        if (m->epochs) fprintf(f, "epochs        %lld (the train block's; --epochs overrides)\n", (long long)m->epochs);
    }
    int width = 24; /* the name column: the longest param or state name */
    for (int i = 0; i < m->g.n; i++)
        if ((m->g.nodes[i].op == OP_PARAM || m->g.nodes[i].op == OP_STATE) && m->g.nodes[i].name &&
            (int)strlen(m->g.nodes[i].name) > width)
            width = (int)strlen(m->g.nodes[i].name);
    fprintf(f, "params\n");
    int64_t total = 0;
    for (int p = 0; p < m->n_params; p++) {
        const ir_node *n = &m->g.nodes[m->params[p]];
        int64_t count = ir_shape_numel(&n->shape);
        total += count;
        fprintf(f, "  %-*s %-20s %12s\n", width, n->name, ir_type_str(n->dtype, &n->shape, t, sizeof t), thousands(count, num));
    }
    fprintf(f, "trainable parameters: %s\n", thousands(total, num));
    int64_t fixed = 0; /* state: moving statistics, set by the forward pass (Keras' non-trainable count) */
    for (int i = 0; i < m->g.n; i++) {
        const ir_node *n = &m->g.nodes[i];
        if (n->op != OP_STATE || n->device > 0) continue;
        int64_t count = ir_shape_numel(&n->shape);
        if (!fixed) fprintf(f, "state (non-trainable)\n");
        fixed += count;
        fprintf(f, "  %-*s %-20s %12s\n", width, n->name, ir_type_str(n->dtype, &n->shape, t, sizeof t), thousands(count, num));
    }
    fprintf(f, "non-trainable parameters: %s\n", thousands(fixed, num));
    if (m->n_buckets) {
        fprintf(f, "gradient buckets (each closes at ");
        print_bytes(f, m->bucket_bytes);
        fprintf(f, "%s; in the order the backward pass fills them)\n", m->bucket_bytes > (1 << 20) ? ", the first at 1 MiB" : "");
    }
    for (int b = 0; b < m->n_buckets; b++) {
        fprintf(f, "  bucket %d: ", b);
        print_bytes(f, m->buckets[b].bytes);
        fprintf(f, ",");
        for (int j = 0; j < m->buckets[b].n_grads; j++) fprintf(f, " %s", m->g.nodes[m->buckets[b].grads[j]].name);
        fprintf(f, "\n");
    }
    ir_sparse_info si;
    for (int k = 0; ir_sparse_exchange(m, k, &si); k++) {
        if (!k) fprintf(f, "sparse gradients (--sparse-grads %s; bytes each replica sends per step)\n",
                       ir_sparse_grads_names[m->sparse_grads]);
        fprintf(f, "  %s: ids and rows ", si.param);
        print_bytes(f, si.sparse_bytes);
        fprintf(f, " instead of the table's ");
        print_bytes(f, si.dense_bytes);
        fprintf(f, "\n");
    }
    fprintf(f, "memory per device (the planned arena with reuse; without: variables and every tensor that owns bytes, "
           "each in bytes of its own)\n");
    for (int d = 0; d < m->n_devices; d++) {
        fprintf(f, "  %s:%d  planned with reuse ", m->devices[d].name, m->devices[d].index);
        print_bytes(f, m->arena_bytes ? m->arena_bytes[d] : 0);
        fprintf(f, "   without reuse ");
        print_bytes(f, m->unplanned_bytes ? m->unplanned_bytes[d] : 0);
        fprintf(f, "\n");
    }
    if (m->n_devices)
        fprintf(f, "work per replica (matmul and convolution flops, forward and backward): train step %.3f GFLOP, "
                "predict %.3f GFLOP\n",
                1e-9 * (double)ir_step_flops(m, 0, 0), 1e-9 * (double)ir_step_flops(m, 2, 0));
    int64_t pairs = 0; /* mgx_read verified the plan, the race check included; this counts its work */
    ir_check_races(m, NULL, NULL, &pairs);
    fprintf(f, "checked       race-free: %s pairs of nodes on different streams touch the same bytes, each pair\n"
           "              ordered by events; no value is overwritten before its last read (docs/runtime.md)\n",
           thousands(pairs, num));
}

mgc_status mgc_plan_describe(const mgc_plan *p, mgc_describe_kind kind, char **text, mgc_error *err) {
    if (!p || !text) return lib_fail(err, MGC_ERR_ARG, "mgc_plan_describe: plan and text must not be NULL");
    *text = NULL;
    if ((unsigned)kind > MGC_DESCRIBE_INSPECT) return lib_fail(err, MGC_ERR_ARG, "mgc_plan_describe: kind %d is unknown", (int)kind);
    if (kind == MGC_DESCRIBE_INSPECT && p->forward_only)
        return lib_fail(err, MGC_ERR_ARG, "mgc_plan_describe: a forward_only plan has no plan to inspect");
    size_t len = 0;
    FILE *f = open_memstream(text, &len);
    if (!f) return lib_fail(err, MGC_ERR_RUNTIME, "out of memory");
    if (kind == MGC_DESCRIBE_IR) ir_print(p->m, f);
    else if (kind == MGC_DESCRIBE_INSPECT) inspect(f, p->path ? p->path : "(not saved)", p->m);
    else ir_print_dot(p->m, f, kind == MGC_DESCRIBE_DOT_REPLICATED);
    if (fclose(f)) {
        free(*text), *text = NULL;
        return lib_fail(err, MGC_ERR_RUNTIME, "out of memory");
    }
    return lib_ok(err);
}
