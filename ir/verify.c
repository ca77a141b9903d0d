/* verify.c - structural checks of a module: graph order, arity, types against
 * the shape rules, devices, the model interface, buckets, memory plan, schedule. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "order.h"

/* Limits that keep every later computation on a node free of overflow. */
#define MAX_ELEMS IR_MAX_ELEMENTS
#define MAX_IATTR (INT64_C(1) << 40)

typedef struct {
    const ir_module *m;
    ir_report_fn report;
    void *ctx;
    int problems;
} checker;

static void problem(checker *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(checker *c, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->problems++;
    if (c->report) c->report(c->ctx, msg);
}

static const char *op_name(ir_op op) { return (unsigned)op < OP_COUNT ? ir_ops[op].name : "?"; }

static bool node_ok(const ir_module *m, int i) { return i >= 0 && i < m->g.n; }

/* Bytes of a node, or -1 when its dtype, rank or dims are out of range or it
 * has MAX_ELEMS elements or more. */
static int64_t safe_bytes(const ir_node *n) {
    if ((unsigned)n->dtype >= IR_DTYPE_COUNT || n->shape.rank < 0 || n->shape.rank > IR_MAX_RANK) return -1;
    int64_t numel = 1;
    for (int k = 0; k < n->shape.rank; k++) {
        int64_t d = n->shape.dim[k];
        if (d < 0 || (d && numel > MAX_ELEMS / d)) return -1;
        numel *= d;
    }
    return numel < MAX_ELEMS ? numel * (int64_t)ir_dtype_size(n->dtype) : -1;
}

static bool check_type(checker *c, int i, const ir_node *n) {
    if (safe_bytes(n) >= 0) return true;
    if ((unsigned)n->dtype >= IR_DTYPE_COUNT) problem(c, "node %d: dtype %d out of range", i, (int)n->dtype);
    else if (n->shape.rank < 0 || n->shape.rank > IR_MAX_RANK) problem(c, "node %d: rank %d out of range", i, n->shape.rank);
    else {
        char t[96];
        problem(c, "node %d (%s): %s has a negative dimension or 2^40 elements or more", i, op_name(n->op),
                ir_type_str(n->dtype, &n->shape, t, sizeof t));
    }
    return false;
}

/* op, inputs earlier, arity, attribute magnitudes */
static bool check_operands(checker *c, int i, const ir_node *n) {
    if ((unsigned)n->op >= OP_COUNT) return problem(c, "node %d: op %d out of range", i, (int)n->op), false;
    const ir_opinfo *info = &ir_ops[n->op];
    bool ok = true;
    if (n->n_in < 0 || (n->n_in > 0 && !n->in)) return problem(c, "node %d: bad input count %d", i, n->n_in), false;
    for (int k = 0; k < n->n_in; k++)
        if (n->in[k] < 0 || n->in[k] >= i) problem(c, "node %d input %d refers to node %d", i, k, n->in[k]), ok = false;
    if (info->arity >= 0 && n->n_in != info->arity)
        problem(c, "node %d (%s): takes %d inputs, has %d", i, info->name, info->arity, n->n_in), ok = false;
    if (info->arity < 0 && n->n_in < 1) problem(c, "node %d (%s): has no inputs", i, info->name), ok = false;
    for (int k = 0; k < IR_MAX_IATTR; k++)
        if (n->iattr[k] > MAX_IATTR || n->iattr[k] < -MAX_IATTR)
            problem(c, "node %d (%s): attribute %d is out of range", i, info->name, k), ok = false;
    return ok;
}

/* name, device, stream, programs, origin, source position */
static void check_placement(checker *c, int i, const ir_node *n) {
    const ir_module *m = c->m;
    const char *op = op_name(n->op);
    bool needs_name = n->op == OP_INPUT || n->op == OP_PARAM || n->op == OP_VAR || n->op == OP_STATE;
    if (needs_name && (!n->name || !*n->name)) problem(c, "node %d (%s): has no name", i, op);
    int max_dev = m->n_devices > 0 ? m->n_devices : 1;
    if (n->device < -1 || n->device >= max_dev)
        problem(c, "node %d (%s): device %d out of range (%d devices)", i, op, n->device, m->n_devices);
    if (n->stream != STREAM_COMPUTE && n->stream != STREAM_COMM) problem(c, "node %d (%s): stream %d out of range", i, op, n->stream);
    if (n->programs >> IR_PROGRAM_COUNT) problem(c, "node %d (%s): program mask %#x out of range", i, op, n->programs);
    if (n->origin < -1 || n->origin >= m->g.n) problem(c, "node %d (%s): origin %d out of range", i, op, n->origin);
    if (n->loc.line < 0 || n->loc.col < 0) problem(c, "node %d (%s): negative source position", i, op);
}

/* Sum of all_reduce input sizes stays below MAX_ELEMS (the rule adds them). */
static bool check_reduce_size(checker *c, int i, const ir_node *n) {
    int64_t total = 0;
    for (int k = 0; n->op == OP_ALL_REDUCE && k < n->n_in; k++) {
        total += ir_shape_numel(&c->m->g.nodes[n->in[k]].shape);
        if (total >= MAX_ELEMS) return problem(c, "node %d (all_reduce): more than 2^40 elements", i), false;
    }
    return true;
}

/* Runs the shape rule on a scratch copy of the graph and compares. */
static void check_rule(checker *c, ir_module *scratch, int i) {
    ir_node *s = &scratch->g.nodes[i];
    const ir_node *n = &c->m->g.nodes[i];
    char err[256], b1[96], b2[96];
    if (!ir_infer_node(scratch, i, err, sizeof err)) {
        problem(c, "node %d (%s): %s", i, op_name(n->op), err);
    } else if (s->dtype != n->dtype || !ir_shape_eq(&s->shape, &n->shape)) {
        problem(c, "node %d (%s): declared %s but its rule gives %s", i, op_name(n->op),
                ir_type_str(n->dtype, &n->shape, b1, sizeof b1), ir_type_str(s->dtype, &s->shape, b2, sizeof b2));
    }
    *s = *n;
}

static void check_graph(checker *c) {
    const ir_module *m = c->m;
    if (m->g.n < 0 || (m->g.n > 0 && !m->g.nodes)) {
        problem(c, "graph: bad node count %d", m->g.n);
        return;
    }
    bool *ok = calloc((size_t)m->g.n + 1, sizeof *ok);
    ir_module scratch = *m;
    scratch.g.nodes = malloc(((size_t)m->g.n + 1) * sizeof *scratch.g.nodes);
    if (!ok || !scratch.g.nodes) abort();
    if (m->g.n) memcpy(scratch.g.nodes, m->g.nodes, (size_t)m->g.n * sizeof *m->g.nodes);
    for (int i = 0; i < m->g.n; i++) {
        const ir_node *n = &m->g.nodes[i];
        bool type_ok = check_type(c, i, n);
        ok[i] = check_operands(c, i, n) && type_ok;
        check_placement(c, i, n);
        for (int k = 0; ok[i] && k < n->n_in; k++) ok[i] = ok[n->in[k]];
        if (ok[i] && check_reduce_size(c, i, n)) check_rule(c, &scratch, i);
    }
    free(scratch.g.nodes);
    free(ok);
}

/* Node index `i` (or -1 when allowed) naming a node of op `want` (-1: any). */
static void check_ref(checker *c, const char *what, int i, int want, bool may_be_none) {
    const ir_module *m = c->m;
    if (i == -1 && may_be_none) return;
    if (!node_ok(m, i)) problem(c, "%s refers to node %d (of %d)", what, i, m->g.n);
    else if (want >= 0 && m->g.nodes[i].op != (ir_op)want)
        problem(c, "%s refers to node %d, a '%s' node, not '%s'", what, i, op_name(m->g.nodes[i].op), ir_ops[want].name);
}

static void check_interface(checker *c) {
    const ir_module *m = c->m;
    char what[64];
    for (int k = 0; k < m->n_inputs; k++) {
        snprintf(what, sizeof what, "input %d", k);
        check_ref(c, what, m->inputs[k], OP_INPUT, false);
    }
    check_ref(c, "the loss", m->loss, -1, true);
    for (int k = 0; k < m->n_outputs; k++) {
        snprintf(what, sizeof what, "output %d", k);
        if (!m->outputs[k].name) problem(c, "output %d has no name", k);
        check_ref(c, what, m->outputs[k].node, -1, false);
    }
    for (int k = 0; k < m->n_metrics; k++) {
        snprintf(what, sizeof what, "metric %d", k);
        if (!m->metrics[k].name) problem(c, "metric %d has no name", k);
        check_ref(c, what, m->metrics[k].node, -1, false);
    }
    for (int k = 0; k < m->n_params; k++) {
        snprintf(what, sizeof what, "param %d", k);
        check_ref(c, what, m->params[k], OP_PARAM, false);
        snprintf(what, sizeof what, "the gradient of param %d", k);
        if (m->grads) check_ref(c, what, m->grads[k], -1, true);
    }
    if (m->n_inputs < 0 || m->n_metrics < 0 || m->n_params < 0) problem(c, "negative interface count");
}

/* A schedule gives a finite rate at every step (no division by zero). */
static void check_schedule_values(checker *c, const ir_lr_schedule *s) {
    if ((unsigned)s->kind >= LR_COUNT) return problem(c, "learning-rate schedule %d out of range", (int)s->kind);
    bool decays = s->kind == LR_COSINE_DECAY || s->kind == LR_EXPONENTIAL_DECAY;
    if (decays && s->decay_steps < 1) problem(c, "learning-rate schedule: decay_steps %lld < 1", (long long)s->decay_steps);
    if (s->warmup_steps < 0 || (unsigned)s->n_boundaries > IR_MAX_BOUNDARIES)
        problem(c, "learning-rate schedule: bad warmup_steps or boundary count");
    for (int k = 1; k < s->n_boundaries && k < IR_MAX_BOUNDARIES; k++)
        if (s->boundaries[k] <= s->boundaries[k - 1]) problem(c, "learning-rate schedule: boundaries not increasing");
    double f[] = {s->alpha, s->warmup_target, s->decay_rate};
    for (size_t k = 0; k < sizeof f / sizeof *f; k++)
        if (!isfinite(f[k])) problem(c, "learning-rate schedule: a parameter is not finite");
}

static void check_train(checker *c) {
    const ir_module *m = c->m;
    if ((unsigned)m->opt.kind >= OPT_COUNT) problem(c, "optimizer kind %d out of range", (int)m->opt.kind);
    if (m->batch_per_replica < 0 || m->global_batch < 0) problem(c, "negative batch size");
    if (m->has_train && m->batch_per_replica > m->global_batch)
        problem(c, "batch per replica %lld exceeds the global batch %lld", (long long)m->batch_per_replica,
                (long long)m->global_batch);
    if (m->epochs < 0) problem(c, "negative epoch count");
    if (m->opt.clipnorm < 0 || m->opt.global_clipnorm < 0) problem(c, "a clipping norm is negative");
    else if (m->opt.clipnorm > 0 && m->opt.global_clipnorm > 0) problem(c, "clipnorm and global_clipnorm are both set");
    check_schedule_values(c, &m->opt.schedule);
}

static void check_devices(checker *c) {
    const ir_module *m = c->m;
    if ((unsigned)m->cross_device >= XDEV_COUNT) problem(c, "cross-device algorithm %d out of range", (int)m->cross_device);
    for (int d = 0; d < m->n_devices; d++)
        if (!m->devices[d].name || m->devices[d].index < 0) problem(c, "device %d is malformed", d);
    if (m->bucket_bytes < 0) problem(c, "negative bucket size");
    for (int b = 0; b < m->n_buckets; b++) {
        const ir_bucket *bk = &m->buckets[b];
        if (bk->n_grads < 1 || bk->bytes < 0) problem(c, "bucket %d is empty or has a negative size", b);
        char what[64];
        for (int j = 0; j < bk->n_grads; j++) {
            snprintf(what, sizeof what, "bucket %d gradient %d", b, j);
            check_ref(c, what, bk->grads[j], OP_PARAM, false);
        }
    }
}

/* A view or reshape must lie on its input's bytes (it has no kernel). Input
 * offsets out of range are problems of their own. */
static int64_t view_offset(const ir_module *m, const ir_node *n) {
    int64_t shift = n->op == OP_VIEW ? n->iattr[0] * (int64_t)ir_dtype_size(n->dtype) : 0;
    return m->g.nodes[n->in[0]].offset + shift; /* |iattr| <= 2^40 (check_operands), offset checked by the caller */
}

static bool view_misplaced(const ir_module *m, const ir_node *n) {
    if (!ir_is_view(n) || n->n_in < 1 || !n->in || !node_ok(m, n->in[0]) || (unsigned)n->dtype >= IR_DTYPE_COUNT ||
        n->iattr[0] > MAX_IATTR || n->iattr[0] < -MAX_IATTR)
        return false;
    int64_t at = m->g.nodes[n->in[0]].offset;
    if (at != -1 && (at < 0 || at > (INT64_C(1) << 60))) return false;
    return at == -1 || n->offset != view_offset(m, n);
}

/* Every planned tensor lies inside its device's arena; views on their input. */
static void check_memory(checker *c) {
    const ir_module *m = c->m;
    for (int d = 0; m->arena_bytes && d < m->n_devices; d++)
        if (m->arena_bytes[d] < 0 || (m->unplanned_bytes && m->unplanned_bytes[d] < 0))
            problem(c, "device %d: negative arena size", d);
    for (int i = 0; i < m->g.n; i++) {
        const ir_node *n = &m->g.nodes[i];
        if (n->offset == -1) continue;
        if (n->offset < 0) {
            problem(c, "node %d (%s): offset %lld is negative", i, op_name(n->op), (long long)n->offset);
        } else if (!m->arena_bytes || n->device < 0 || n->device >= m->n_devices) {
            problem(c, "node %d (%s): has an offset but no arena on its device", i, op_name(n->op));
        } else if (safe_bytes(n) >= 0 && m->arena_bytes[n->device] >= 0 && n->offset > m->arena_bytes[n->device] - safe_bytes(n)) {
            problem(c, "node %d (%s): bytes [%lld, +%lld) outside the %lld-byte arena of device %d", i,
                    op_name(n->op), (long long)n->offset, (long long)safe_bytes(n),
                    (long long)m->arena_bytes[n->device], n->device);
        } else if (view_misplaced(m, n)) {
            problem(c, "node %d (%s): at offset %lld, not on its input's bytes (%lld)", i, op_name(n->op),
                    (long long)n->offset, (long long)view_offset(m, n));
        }
    }
}

static void check_list(checker *c, int s, const ir_sched_list *l, int *recorded, int *waited) {
    const ir_module *m = c->m;
    if (l->program < 0 || l->program >= IR_PROGRAM_COUNT || l->device < 0 || l->device >= m->n_devices ||
        l->stream < 0 || l->stream >= STREAM_COUNT) {
        problem(c, "schedule list %d: program %d, device %d, stream %d out of range", s, l->program, l->device,
                l->stream);
        return;
    }
    for (int k = 0; k < l->n; k++) {
        const ir_sched_item *it = &l->items[k];
        bool is_event = it->kind == SCHED_RECORD || it->kind == SCHED_WAIT;
        if (it->kind == SCHED_KERNEL && !node_ok(m, it->arg)) {
            problem(c, "schedule list %d item %d: kernel of node %d (of %d)", s, k, it->arg, m->g.n);
        } else if (it->kind == SCHED_KERNEL) {
            const ir_node *n = &m->g.nodes[it->arg];
            if (n->device != l->device || n->stream != l->stream)
                problem(c, "schedule list %d item %d: node %d runs on device %d stream %d, not this list's", s, k,
                        it->arg, n->device, n->stream);
            else if ((unsigned)n->op < OP_COUNT && (ir_ops[n->op].flags & OPF_SOURCE || ir_is_view(n)))
                problem(c, "schedule list %d item %d: node %d (%s) has no kernel", s, k, it->arg, op_name(n->op));
        } else if (!is_event) {
            problem(c, "schedule list %d item %d: kind %d out of range", s, k, (int)it->kind);
        } else if (it->arg < 0 || it->arg >= m->n_events) {
            problem(c, "schedule list %d item %d: event %d (of %d)", s, k, it->arg, m->n_events);
        } else if (it->kind == SCHED_RECORD && recorded[it->arg]++) {
            problem(c, "schedule list %d item %d: event %d recorded twice", s, k, it->arg);
        } else if (it->kind == SCHED_WAIT) {
            waited[it->arg] = 1;
        }
    }
}

static void check_schedule(checker *c) {
    const ir_module *m = c->m;
    int64_t items = 0;
    for (int s = 0; s < m->n_sched; s++) items += m->sched[s].n;
    if (m->n_events < 0 || m->n_events > items) {
        problem(c, "schedule: %d events but only %lld items", m->n_events, (long long)items);
        return;
    }
    int *recorded = calloc((size_t)m->n_events + 1, sizeof *recorded);
    int *waited = calloc((size_t)m->n_events + 1, sizeof *waited);
    if (!recorded || !waited) abort();
    for (int s = 0; s < m->n_sched; s++) check_list(c, s, &m->sched[s], recorded, waited);
    for (int e = 0; e < m->n_events; e++)
        if (waited[e] && !recorded[e]) problem(c, "schedule: event %d is waited on but never recorded", e);
    free(recorded), free(waited);
}

static void check_sources(checker *c) {
    for (int k = 0; k < c->m->n_sources; k++)
        if (!c->m->sources[k].path || !c->m->sources[k].text) problem(c, "source %d has no path or text", k);
}

/* A memory plan and one schedule list per (program, device, stream), in
 * order: what the race check walks. */
static bool planned_and_scheduled(const ir_module *m) {
    int per = m->n_devices * STREAM_COUNT;
    if (!m->arena_bytes || m->n_devices < 1 || m->n_sched != IR_PROGRAM_COUNT * per) return false;
    for (int s = 0; s < m->n_sched; s++)
        if (m->sched[s].program != s / per || m->sched[s].device != s % per / STREAM_COUNT ||
            m->sched[s].stream != s % STREAM_COUNT)
            return false;
    for (int i = 0; i < m->g.n; i++)
        if (m->g.nodes[i].device >= 0 && m->g.nodes[i].offset < 0) return false;
    return true;
}

int ir_verify(const ir_module *m, ir_report_fn report, void *ctx) {
    checker c = {m, report, ctx, 0};
    check_graph(&c);
    check_interface(&c);
    check_train(&c);
    check_devices(&c);
    check_memory(&c);
    check_schedule(&c);
    check_sources(&c);
    if (!c.problems && planned_and_scheduled(m)) c.problems += ir_check_races(m, report, ctx, NULL);
    return c.problems;
}
