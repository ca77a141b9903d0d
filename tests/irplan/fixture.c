/* fixture.c - hand-built modules for the ir/plan tests (see fixture.h). */
#include "fixture.h"

#include <string.h>

enum { ALL = PROG_TRAIN | PROG_EVAL | PROG_PREDICT };

static void infer(ir_module *m, int i) {
    char err[256];
    if (!ir_infer_node(m, i, err, sizeof err)) {
        fprintf(stderr, "fixture: node %d: %s\n", i, err);
        exit(1);
    }
}

/* An op node on device dev, typed by its rule. */
static int op(ir_module *m, ir_op o, const int *in, int n_in, int line, int dev, unsigned progs) {
    int i = ir_add(m, o, in, n_in, (ir_loc){ir_intern(m, "tiny.mg"), line, 5});
    ir_node *n = ir_node_at(m, i);
    n->device = dev, n->programs = progs;
    return i;
}

static int typed(ir_module *m, int i) {
    infer(m, i);
    return i;
}

/* A source node with a declared type. */
static int leaf(ir_module *m, ir_op o, ir_dtype t, int rank, const int64_t *dims, const char *name, int line, int dev,
                unsigned progs) {
    int i = op(m, o, NULL, 0, line, dev, progs);
    ir_node *n = ir_node_at(m, i);
    n->dtype = t, n->shape = ir_shape_make(rank, dims), n->name = ir_intern(m, name);
    return i;
}

static void add_replica(ir_module *m, rich_nodes *x, int r) {
    int i;
    i = x->shard_x[r] = op(m, OP_SHARD, &x->image, 1, 2, r, ALL);
    ir_node_at(m, i)->iattr[0] = r, ir_node_at(m, i)->iattr[1] = 2, ir_node_at(m, i)->origin = -1;
    typed(m, i);
    int sl = op(m, OP_SHARD, &x->label, 1, 3, r, PROG_TRAIN | PROG_EVAL);
    ir_node_at(m, sl)->iattr[0] = r, ir_node_at(m, sl)->iattr[1] = 2, ir_node_at(m, sl)->origin = -1;
    typed(m, sl);
    int k = x->kernel[r] = leaf(m, OP_PARAM, IR_F32, 2, (int64_t[]){4, 3}, "dense/kernel", 5, r, ALL | PROG_INIT);
    memcpy(ir_node_at(m, k)->iattr, (int64_t[]){INIT_GLOROT_UNIFORM, 4, 3}, 3 * sizeof(int64_t));
    int b = x->bias[r] = leaf(m, OP_PARAM, IR_F32, 1, (int64_t[]){3}, "dense/bias", 6, r, ALL | PROG_INIT);
    ir_node_at(m, b)->iattr[0] = INIT_ONES;
    int mm = x->matmul[r] = typed(m, op(m, OP_MATMUL, (int[]){x->shard_x[r], k}, 2, 7, r, ALL));
    int lg = x->logits[r] = typed(m, op(m, OP_ADD, (int[]){mm, b}, 2, 7, r, ALL));
    x->xent[r] = typed(m, op(m, OP_SPARSE_XENT, (int[]){lg, sl}, 2, 8, r, PROG_TRAIN | PROG_EVAL));
    x->match[r] = typed(m, op(m, OP_ARGMAX_MATCH, (int[]){lg, sl}, 2, 9, r, PROG_EVAL));
    int dy = leaf(m, OP_CONST, IR_F32, 1, (int64_t[]){4}, NULL, 8, r, PROG_TRAIN);
    ir_node_at(m, dy)->fattr[0] = 0.25;
    int dl = typed(m, op(m, OP_SPARSE_XENT_GRAD, (int[]){lg, sl, dy}, 3, 8, r, PROG_TRAIN));
    i = x->grad_k[r] = op(m, OP_MATMUL, (int[]){x->shard_x[r], dl}, 2, 7, r, PROG_TRAIN);
    ir_node_at(m, i)->iattr[0] = 1;
    typed(m, i);
    i = x->grad_b[r] = op(m, OP_REDUCE_SUM, &dl, 1, 7, r, PROG_TRAIN);
    ir_node_at(m, i)->iattr[0] = 1;
    typed(m, i);
}

static void add_reduction(ir_module *m, rich_nodes *x, int r) {
    int ar = x->all_reduce[r] = op(m, OP_ALL_REDUCE, (int[]){x->grad_k[r], x->grad_b[r]}, 2, 7, r, PROG_TRAIN);
    ir_node *n = ir_node_at(m, ar);
    n->stream = STREAM_COMM, n->iattr[0] = 0, n->iattr[1] = 1, n->origin = -1;
    typed(m, ar);
    int vk = x->view_k[r] = op(m, OP_VIEW, &ar, 1, 5, r, PROG_TRAIN);
    ir_node_at(m, vk)->shape = ir_shape_make(2, (int64_t[]){4, 3}), ir_node_at(m, vk)->origin = -1;
    typed(m, vk);
    int vb = x->view_b[r] = op(m, OP_VIEW, &ar, 1, 6, r, PROG_TRAIN);
    ir_node_at(m, vb)->shape = ir_shape_make(1, (int64_t[]){3}), ir_node_at(m, vb)->iattr[0] = 12;
    ir_node_at(m, vb)->origin = -1;
    typed(m, vb);
    int uk = x->update_k[r] = op(m, OP_SGD_UPDATE, (int[]){x->kernel[r], vk}, 2, 12, r, PROG_TRAIN);
    ir_node_at(m, uk)->iattr[0] = 1, ir_node_at(m, uk)->fattr[0] = 0.01, ir_node_at(m, uk)->fattr[1] = -0.5;
    typed(m, uk);
    int ub = op(m, OP_SGD_UPDATE, (int[]){x->bias[r], vb}, 2, 12, r, PROG_TRAIN);
    ir_node_at(m, ub)->fattr[0] = 0.01;
    typed(m, ub);
}

static void add_broadcasts(ir_module *m, rich_nodes *x, int r) {
    int params[2] = {x->kernel[r], x->bias[r]};
    for (int g = 0; g < 2; g++) {
        int i = op(m, OP_BROADCAST, &params[g], 1, 5 + g, r, PROG_INIT);
        ir_node_at(m, i)->stream = STREAM_COMM, ir_node_at(m, i)->iattr[0] = g, ir_node_at(m, i)->origin = -1;
        typed(m, i);
        if (g == 0) x->bcast_k[r] = i;
    }
}

/* Sequential offsets per device; aliasing ops share their input's bytes. */
static void plan_memory(ir_module *m) {
    m->arena_bytes = calloc((size_t)m->n_devices, sizeof *m->arena_bytes);
    m->unplanned_bytes = calloc((size_t)m->n_devices, sizeof *m->unplanned_bytes);
    for (int i = 0; i < m->g.n; i++) {
        ir_node *n = ir_node_at(m, i);
        if (n->device < 0) continue;
        if (ir_ops[n->op].flags & (OPF_ALIAS | OPF_INPLACE)) {
            n->offset = ir_node_at(m, n->in[0])->offset + (n->op == OP_VIEW ? 4 * n->iattr[0] : 0);
            continue;
        }
        n->offset = m->arena_bytes[n->device];
        m->arena_bytes[n->device] += (ir_node_bytes(n) + 63) / 64 * 64;
    }
    for (int d = 0; d < m->n_devices; d++) m->unplanned_bytes[d] = m->arena_bytes[d] + 100 * (d + 1);
}

static void push(ir_sched_list *l, ir_sched_kind kind, int arg) {
    if (l->n == l->cap) l->cap = l->cap ? 2 * l->cap : 16, l->items = realloc(l->items, (size_t)l->cap * sizeof *l->items);
    l->items[l->n++] = (ir_sched_item){kind, arg};
}

/* The node whose kernel wrote what node i names (views have no kernel). */
static int writer(const ir_module *m, int i) {
    while (ir_ops[m->g.nodes[i].op].flags & OPF_ALIAS) i = m->g.nodes[i].in[0];
    return i;
}

static bool read_by_other_stream(const ir_module *m, int i, unsigned prog) {
    const ir_node *n = &m->g.nodes[i];
    for (int j = i + 1; j < m->g.n; j++) {
        const ir_node *u = &m->g.nodes[j];
        if (!(u->programs & prog) || u->device != n->device || u->stream == n->stream) continue;
        for (int k = 0; k < u->n_in; k++)
            if (writer(m, u->in[k]) == i) return true;
    }
    return false;
}

/* Per (program, device, stream) lists in graph order with events across streams. */
static void schedule(ir_module *m) {
    int per = m->n_devices * STREAM_COUNT, *event_of = malloc((size_t)m->g.n * sizeof *event_of);
    m->n_sched = IR_PROGRAM_COUNT * per;
    m->sched = calloc((size_t)(unsigned)m->n_sched, sizeof *m->sched);
    for (int s = 0; s < m->n_sched; s++)
        m->sched[s] = (ir_sched_list){.program = s / per, .device = s % per / STREAM_COUNT, .stream = s % STREAM_COUNT};
    for (int p = 0; p < IR_PROGRAM_COUNT; p++) {
        for (int i = 0; i < m->g.n; i++) event_of[i] = -1;
        for (int i = 0; i < m->g.n; i++) {
            const ir_node *n = &m->g.nodes[i];
            if (!(n->programs & 1u << p) || n->device < 0 || ir_ops[n->op].flags & (OPF_SOURCE | OPF_ALIAS)) continue;
            ir_sched_list *l = &m->sched[p * per + n->device * STREAM_COUNT + n->stream];
            for (int k = 0; k < n->n_in; k++)
                if (event_of[writer(m, n->in[k])] >= 0 && m->g.nodes[writer(m, n->in[k])].stream != n->stream)
                    push(l, SCHED_WAIT, event_of[writer(m, n->in[k])]);
            push(l, SCHED_KERNEL, i);
            if (read_by_other_stream(m, i, 1u << p)) push(l, SCHED_RECORD, event_of[i] = m->n_events++);
        }
    }
    free(event_of);
}

static void set_interface(ir_module *m, const rich_nodes *x) {
    m->model_name = ir_intern(m, "tiny");
    m->source_file = ir_intern(m, "tiny.mg");
    m->n_inputs = 2, m->inputs = malloc(2 * sizeof *m->inputs);
    m->inputs[0] = x->image, m->inputs[1] = x->label;
    m->loss = x->xent[0];
    m->n_metrics = 1, m->metrics = malloc(sizeof *m->metrics);
    m->metrics[0] = (ir_metric){ir_intern(m, "accuracy"), x->match[0]};
    m->n_outputs = 2, m->outputs = malloc(2 * sizeof *m->outputs);
    m->outputs[0] = (ir_output){ir_intern(m, "logits"), x->logits[0]};
    m->outputs[1] = (ir_output){ir_intern(m, "xent"), x->xent[0]};
    m->n_params = 2, m->params = malloc(2 * sizeof *m->params), m->grads = malloc(2 * sizeof *m->grads);
    m->params[0] = x->kernel[0], m->params[1] = x->bias[0];
    m->grads[0] = x->view_k[0], m->grads[1] = x->view_b[0];
    m->has_train = true;
    m->opt = (ir_optimizer){OPT_ADAMW, 0.002, 0.85, 0.99, 1e-7, 0.01, 0.5, 0.8, true,
                            {LR_PIECEWISE_CONSTANT, 0, 0, 0, 0, 0, false, 2, {100, 200}, {0.002, 0.001, 0.0005}},
                            0.05, 0, 1.5};
    m->epochs = 7;
    m->batch_per_replica = 4, m->global_batch = 8;
}

static void set_replication(ir_module *m, const rich_nodes *x) {
    m->n_devices = 2, m->devices = malloc(2 * sizeof *m->devices);
    m->devices[0] = (ir_device){ir_intern(m, "cpu"), 0};
    m->devices[1] = (ir_device){ir_intern(m, "cpu"), 3};
    m->cross_device = XDEV_HIERARCHICAL;
    m->bucket_bytes = 1024;
    m->n_buckets = 1, m->buckets = calloc(1, sizeof *m->buckets);
    m->buckets[0] = (ir_bucket){60, 2, malloc(2 * sizeof(int))};
    m->buckets[0].grads[0] = x->kernel[0], m->buckets[0].grads[1] = x->bias[0];
    m->n_sources = 2, m->sources = malloc(2 * sizeof *m->sources);
    m->sources[0] = (ir_source){ir_intern(m, "tiny.mg"), ir_intern(m, "model tiny {\n  input image: f32[batch, 4]\n}\n")};
    m->sources[1] = (ir_source){ir_intern(m, "stdlib/nn.mg"), ir_intern(m, "fn dense() {}\n# \xc3\xa9 \"quoted\"\n")};
}

ir_module *rich_module(rich_nodes *ix) {
    ir_module *m = ir_module_new();
    rich_nodes x;
    x.image = leaf(m, OP_INPUT, IR_F32, 2, (int64_t[]){8, 4}, "image", 2, -1, ALL);
    x.label = leaf(m, OP_INPUT, IR_I32, 1, (int64_t[]){8}, "label", 3, -1, PROG_TRAIN | PROG_EVAL);
    for (int r = 0; r < 2; r++) add_replica(m, &x, r);
    for (int r = 0; r < 2; r++) add_reduction(m, &x, r);
    for (int r = 0; r < 2; r++) add_broadcasts(m, &x, r);
    set_interface(m, &x);
    set_replication(m, &x);
    plan_memory(m);
    schedule(m);
    if (ix) *ix = x;
    return m;
}

ir_module *small_module(void) {
    ir_module *m = ir_module_new();
    m->model_name = ir_intern(m, "small");
    int x = leaf(m, OP_INPUT, IR_F32, 2, (int64_t[]){2, 3}, "x", 1, 0, 0);
    int w = leaf(m, OP_PARAM, IR_F32, 2, (int64_t[]){3, 4}, "w", 2, 0, 0);
    int mm = typed(m, op(m, OP_MATMUL, (int[]){x, w}, 2, 3, 0, 0));
    m->n_outputs = 1, m->outputs = malloc(sizeof *m->outputs);
    m->outputs[0] = (ir_output){ir_intern(m, "y"), typed(m, op(m, OP_RELU, &mm, 1, 4, 0, 0))};
    m->n_inputs = 1, m->inputs = malloc(sizeof(int)), m->inputs[0] = x;
    m->n_params = 1, m->params = malloc(sizeof(int)), m->params[0] = w;
    return m;
}

char *print_to_string(const ir_module *m) {
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    ir_print(m, f);
    fclose(f);
    return s;
}
