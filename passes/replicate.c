/* replicate.c - clone the one-replica training graph once per device and
 * make the data parallelism explicit:
 *
 *   host INPUT [global batch] --shard--> every replica's forward/backward
 *   gradients --(buckets)--> all_reduce(mean) --view--> optimizer updates
 *   loss, metric means --> all_reduce(mean)  (the "report" bucket)
 *   every variable --broadcast from replica 0--> all  (the init program)
 *   an embedding table's gradient, when sparse: all_gather(ids), all_gather(rows)
 *       --> scatter_add / replicas --> its update, outside the buckets
 *   all_reduce of the model itself (synchronized batch statistics): cloned,
 *   a collective of its own on the communication stream
 *
 * Every replica applies the same averaged gradient to the same values, so
 * params and slots stay bit-identical across replicas (state, updated from
 * each replica's own batch, is averaged by the runtime instead).
 */
#include <stdlib.h>
#include <string.h>

#include "../ir/order.h"
#include "passes.h"

typedef struct {
    ir_module *m;
    ir_graph old;
    int n_dev;
    int **map;      /* map[r][i]: replica r's copy of old node i, -1 if none */
    int **shard;    /* shard[r][i]: replica r's SHARD of old INPUT node i */
    int *host;      /* host[i]: new host INPUT node of old INPUT node i */
    bool *sparse;   /* sparse[p]: param p's gradient is exchanged as (ids, rows) */
    int report_at;  /* the last of the old loss and metrics: the report follows its clone (-1: none) */
} replicator;

static bool is_update(const ir_node *n) { return ir_ops[n->op].flags & OPF_UPDATE; }

/* Nodes of the optimizer, which read the all-reduced gradients: the updates
 * and the gradient norms they clip by. */
static bool reads_reduced(const ir_node *n) { return is_update(n) || n->op == OP_SQ_NORM; }

/* Adds a node, infers its type, places it on `device`/`stream`. */
static int add(replicator *R, ir_op op, const int *in, int n_in, ir_loc loc, int device, int stream) {
    int i = ir_add(R->m, op, in, n_in, loc);
    ir_node *n = ir_node_at(R->m, i);
    n->device = device, n->stream = stream, n->origin = -1;
    return i;
}

/* Collectives run on the communication stream, to overlap the compute
 * stream; with one replica they are identities, and a second stream would
 * only add hand-offs between threads. */
static int comm_stream(const replicator *R) { return R->n_dev > 1 ? STREAM_COMM : STREAM_COMPUTE; }

static void infer_or_die(ir_module *m, int i) {
    char err[256];
    if (!ir_infer_node(m, i, err, sizeof err)) {
        fprintf(stderr, "mgc: internal error in replicate: node %d: %s\n", i, err);
        abort();
    }
}

static void add_host_inputs(replicator *R) {
    for (int i = 0; i < R->old.n; i++) {
        const ir_node *o = &R->old.nodes[i];
        if (o->op != OP_INPUT) continue;
        int h = add(R, OP_INPUT, NULL, 0, o->loc, -1, STREAM_COMPUTE);
        ir_node *n = ir_node_at(R->m, h);
        n->dtype = o->dtype, n->shape = o->shape, n->name = o->name, n->origin = i;
        n->shape.dim[0] *= R->n_dev;
        R->host[i] = h;
    }
}

/* The input of old node i's operand k on replica r. */
static int operand(replicator *R, int r, int k) {
    const ir_node *o = &R->old.nodes[k];
    if (o->op != OP_INPUT) return R->map[r][k];
    if (R->shard[r][k] < 0) {
        int s = add(R, OP_SHARD, &R->host[k], 1, o->loc, r, STREAM_COMPUTE);
        ir_node_at(R->m, s)->iattr[0] = r;
        ir_node_at(R->m, s)->iattr[1] = R->n_dev;
        infer_or_die(R->m, s);
        R->shard[r][k] = s;
    }
    return R->shard[r][k];
}

/* Whether old node i is a gradient exchanged sparsely (not cloned: its
 * replicas' scatter_add works on the gathered ids and rows instead). */
static bool sparse_grad(const replicator *R, int i) {
    for (int p = 0; R->sparse && p < R->m->n_params; p++)
        if (R->sparse[p] && R->m->grads[p] == i) return true;
    return false;
}

/* Replica r's batch means of loss and metrics, averaged over replicas for
 * reporting (the bucket after the gradients'). Cloned right after the last
 * of them, so first on the comm stream: the replicas meet there after the
 * forward pass, while the backward runs, not after the last bucket, where
 * the meeting would end the step late. */
static void reduce_report(replicator *R, int r) {
    ir_module *m = R->m;
    int in[1 + m->n_metrics];
    for (int k = 0; k <= m->n_metrics; k++) {
        int src = R->map[r][k == 0 ? m->loss : m->metrics[k - 1].node];
        in[k] = add(R, OP_REDUCE_MEAN, &src, 1, ir_node_at(m, src)->loc, r, STREAM_COMPUTE);
        ir_node_at(m, in[k])->iattr[0] = 1;
        infer_or_die(m, in[k]);
    }
    int ar = add(R, OP_ALL_REDUCE, in, 1 + m->n_metrics, ir_node_at(m, in[0])->loc, r, comm_stream(R));
    ir_node_at(m, ar)->iattr[0] = m->n_buckets, ir_node_at(m, ar)->iattr[1] = 1;
    infer_or_die(m, ar);
}

/* Clones every node but inputs, the optimizer's and sparse gradients onto
 * replica r, and its report after the loss and metrics. */
static void clone_replica(replicator *R, int r) {
    int in[64];
    for (int i = 0; i < R->old.n; i++) {
        const ir_node *o = &R->old.nodes[i];
        if (o->op == OP_INPUT || reads_reduced(o) || sparse_grad(R, i)) continue;
        for (int k = 0; k < o->n_in; k++) in[k] = operand(R, r, o->in[k]);
        int c = add(R, o->op, in, o->n_in, o->loc, r, o->op == OP_ALL_REDUCE ? comm_stream(R) : STREAM_COMPUTE);
        ir_node *n = ir_node_at(R->m, c);
        memcpy(n->iattr, o->iattr, sizeof n->iattr);
        memcpy(n->fattr, o->fattr, sizeof n->fattr);
        n->dtype = o->dtype, n->shape = o->shape, n->name = o->name, n->origin = i;
        n->fused = o->fused; /* issue 14: programs are module-owned and shared */
        R->map[r][i] = c;
        if (i == R->report_at) reduce_report(R, r);
    }
}

/* Packs params into buckets in the order their gradients are produced (the
 * last layer first), as PyTorch DDP does: a bucket closes once it holds
 * bucket_bytes, the first one already at FIRST_BUCKET_BYTES, so that the
 * all-reduce of the last layers' gradients starts early and overlaps the
 * backward pass of the first layers, and only a small tail waits at its end. */
#define FIRST_BUCKET_BYTES (1 << 20)

static void make_buckets(ir_module *m, const ir_graph *old, int64_t bucket_bytes, const bool *sparse) {
    int n = m->n_params, *order = malloc((size_t)n * sizeof *order);
    for (int i = 0; i < n; i++) { /* insertion sort by gradient node: few params */
        int j = i;
        for (; j > 0 && m->grads[order[j - 1]] > m->grads[i]; j--) order[j] = order[j - 1];
        order[j] = i;
    }
    m->buckets = calloc((size_t)n, sizeof *m->buckets);
    m->n_buckets = 0;
    ir_bucket *open = NULL;
    for (int k = 0; k < n; k++) {
        if (sparse[order[k]]) continue;
        if (!open) {
            open = &m->buckets[m->n_buckets++];
            open->grads = malloc((size_t)n * sizeof *open->grads);
        }
        open->grads[open->n_grads++] = order[k]; /* param index for now */
        open->bytes += ir_node_bytes(&old->nodes[m->grads[order[k]]]);
        int64_t cap = m->n_buckets == 1 && bucket_bytes > FIRST_BUCKET_BYTES ? FIRST_BUCKET_BYTES : bucket_bytes;
        if (open->bytes >= cap) open = NULL;
    }
    free(order);
}

/* all_reduce per bucket and replica, then one view per gradient. Returns
 * view[r][param index]. */
static int **reduce_gradients(replicator *R) {
    ir_module *m = R->m;
    int **view = malloc((size_t)R->n_dev * sizeof *view);
    for (int r = 0; r < R->n_dev; r++) view[r] = malloc((size_t)m->n_params * sizeof **view);
    for (int b = 0; b < m->n_buckets; b++) {
        ir_bucket *bk = &m->buckets[b];
        for (int r = 0; r < R->n_dev; r++) {
            int in[bk->n_grads];
            for (int j = 0; j < bk->n_grads; j++) in[j] = R->map[r][m->grads[bk->grads[j]]];
            ir_loc loc = R->old.nodes[m->grads[bk->grads[0]]].loc;
            int ar = add(R, OP_ALL_REDUCE, in, bk->n_grads, loc, r, comm_stream(R));
            ir_node_at(m, ar)->iattr[0] = b, ir_node_at(m, ar)->iattr[1] = 1;
            infer_or_die(m, ar);
            int64_t offset = 0;
            for (int j = 0; j < bk->n_grads; j++) {
                const ir_node *g = &R->old.nodes[m->grads[bk->grads[j]]];
                int v = add(R, OP_VIEW, &ar, 1, g->loc, r, STREAM_COMPUTE);
                ir_node_at(m, v)->iattr[0] = offset, ir_node_at(m, v)->shape = g->shape;
                infer_or_die(m, v);
                offset += ir_shape_numel(&g->shape);
                view[r][bk->grads[j]] = v;
            }
        }
    }
    return view;
}

/* ---- issue 13: sparse gradient exchange (TF's IndexedSlices) ----
 * A param whose one-replica gradient is one scatter_add(ids, dy) -- a table
 * read by exactly one gather; a shared table's gradient is a sum and stays
 * dense -- may be exchanged as (ids, rows) instead of through a bucket:
 *
 *   all_gather(ids), all_gather(dy) --> scatter_add --> / replicas --> update
 *
 * --sparse-grads auto picks that when each replica sends fewer bytes so:
 *   replicas * numel(ids) * (4 + 4 D)  <  4 V D      (table f32[V, D])
 * The gathers concatenate in replica order, which is the global batch's, so
 * the scatter_add sums the rows in one device's order. */

/* Whether every reader of old node g is the optimizer's (so it need not be cloned). */
static bool only_optimizer_reads(const ir_graph *old, int g) {
    for (int i = 0; i < old->n; i++)
        for (int k = 0; k < old->nodes[i].n_in; k++)
            if (old->nodes[i].in[k] == g && !reads_reduced(&old->nodes[i])) return false;
    return true;
}

static void choose_sparse(replicator *R, ir_sparse_grads mode) {
    ir_module *m = R->m;
    R->sparse = calloc((size_t)m->n_params + 1, sizeof *R->sparse);
    for (int p = 0; p < m->n_params && mode != SPARSE_NEVER; p++) {
        const ir_node *g = &R->old.nodes[m->grads[p]];
        if (g->op != OP_SCATTER_ADD || !only_optimizer_reads(&R->old, m->grads[p])) continue;
        int64_t ids = ir_shape_numel(&R->old.nodes[g->in[0]].shape), V = g->shape.dim[0], D = g->shape.dim[1];
        int64_t sparse_bytes = R->n_dev * ids * (4 + 4 * D), dense_bytes = 4 * V * D;
        R->sparse[p] = mode == SPARSE_ALWAYS || sparse_bytes < dense_bytes;
    }
}

static int infer_at(replicator *R, int i) {
    infer_or_die(R->m, i);
    return i;
}

/* Replica r's all_gather of x, number `group`, named after the param. */
static int gather(replicator *R, int r, int x, int64_t group, const char *name, ir_loc loc) {
    int ag = add(R, OP_ALL_GATHER, &x, 1, loc, r, comm_stream(R));
    ir_node *n = ir_node_at(R->m, ag);
    n->iattr[0] = group, n->iattr[1] = R->n_dev, n->name = name;
    return infer_at(R, ag);
}

/* The sparse params' exchanges; sets view[r][p] to each replica's mean gradient. */
static void sparse_gradients(replicator *R, int **view) {
    ir_module *m = R->m;
    int64_t group = 0;
    for (int p = 0; p < m->n_params; p++) {
        if (!R->sparse[p]) continue;
        const ir_node *g = &R->old.nodes[m->grads[p]];
        const char *name = R->old.nodes[m->params[p]].name;
        for (int r = 0; r < R->n_dev; r++) {
            int ids = gather(R, r, operand(R, r, g->in[0]), group, name, g->loc);
            int rows = gather(R, r, operand(R, r, g->in[1]), group + 1, name, g->loc);
            int sc = add(R, OP_SCATTER_ADD, (int[]){ids, rows}, 2, g->loc, r, STREAM_COMPUTE);
            ir_node_at(m, sc)->shape = g->shape;
            view[r][p] = infer_at(R, sc);
            if (R->n_dev == 1) continue;
            int n = add(R, OP_CONST, NULL, 0, g->loc, r, STREAM_COMPUTE); /* the mean, as all_reduce's */
            ir_node_at(m, n)->dtype = IR_F32, ir_node_at(m, n)->fattr[0] = R->n_dev;
            ir_node_at(m, n)->shape = (ir_shape){0};
            infer_at(R, n);
            view[r][p] = infer_at(R, add(R, OP_DIV, (int[]){sc, n}, 2, g->loc, r, STREAM_COMPUTE));
        }
        group += 2;
    }
}

/* When old node i (an update or a norm) can run: after the last bucket whose
 * all-reduce it reads, directly or through a norm (bucket_of[param]; n_buckets
 * for a sparse gradient, exchanged after every bucket). 0 for any other node.
 * grad_of[j]: the param whose gradient old node j is, or -1. */
static int ready_after(const replicator *R, const int *grad_of, const int *bucket_of, const int *ready, int i) {
    const ir_node *o = &R->old.nodes[i];
    int at = 0;
    if (!reads_reduced(o)) return 0;
    for (int k = 0; k < o->n_in; k++) {
        int p = grad_of[o->in[k]], in = p >= 0 ? bucket_of[p] : ready[o->in[k]]; /* inputs come first */
        if (in > at) at = in;
    }
    return at;
}

/* The optimizer's nodes on every replica, after the all-reduces: where they
 * read a gradient they read its all-reduced view, so every replica clips by
 * the same norm and applies the same update. They go in the order their
 * buckets finish (a stable sort, so a norm stays before the updates that read
 * it): the compute stream updates the last layers while the first layers'
 * bucket is still being reduced, instead of waiting for it in param order. */
static void clone_updates(replicator *R, int **view) {
    ir_module *m = R->m;
    int n_old = R->old.n, *bucket_of = malloc((size_t)(m->n_params + 1) * sizeof *bucket_of); /* +1: never 0 bytes */
    int *ready = malloc((size_t)n_old * sizeof *ready), *order = malloc((size_t)n_old * sizeof *order);
    int *grad_of = malloc((size_t)n_old * sizeof *grad_of), *count = calloc((size_t)m->n_buckets + 2, sizeof *count);
    if (!bucket_of || !ready || !order || !grad_of || !count) abort();
    for (int i = 0; i < n_old; i++) grad_of[i] = -1;
    for (int p = m->n_params - 1; p >= 0; p--) /* the first param, should two share a gradient node */
        if (m->grads[p] >= 0) grad_of[m->grads[p]] = p;
    for (int p = 0; p < m->n_params; p++) bucket_of[p] = m->n_buckets; /* sparse: after every bucket */
    for (int b = 0; b < m->n_buckets; b++)
        for (int j = 0; j < m->buckets[b].n_grads; j++) bucket_of[m->buckets[b].grads[j]] = b;
    int n_order = 0;
    for (int i = 0; i < n_old; i++) {
        ready[i] = ready_after(R, grad_of, bucket_of, ready, i);
        if (reads_reduced(&R->old.nodes[i])) count[ready[i] + 1]++, n_order++;
    }
    for (int b = 0; b <= m->n_buckets; b++) count[b + 1] += count[b]; /* count[b]: where key b starts */
    for (int i = 0; i < n_old; i++)
        if (reads_reduced(&R->old.nodes[i])) order[count[ready[i]]++] = i;
    for (int r = 0; r < R->n_dev; r++)
        for (int t = 0; t < n_order; t++) {
            int i = order[t];
            const ir_node *o = &R->old.nodes[i];
            int *in = malloc((size_t)o->n_in * sizeof *in);
            if (!in) abort();
            for (int k = 0; k < o->n_in; k++) {
                int p = grad_of[o->in[k]];
                in[k] = p >= 0 ? view[r][p] : R->map[r][o->in[k]];
            }
            int u = add(R, o->op, in, o->n_in, o->loc, r, STREAM_COMPUTE);
            free(in);
            ir_node *n = ir_node_at(m, u);
            memcpy(n->iattr, o->iattr, sizeof n->iattr);
            memcpy(n->fattr, o->fattr, sizeof n->fattr);
            n->origin = i;
            R->map[r][i] = u;
            infer_or_die(m, u);
        }
    free(bucket_of), free(ready), free(order), free(grad_of), free(count);
}

/* All-reduces of the forward pass (sync batch_norm's statistics) are
 * collectives of their own, numbered after the buckets and the report. */
static void number_forward_collectives(replicator *R) {
    int next = R->m->n_buckets + 1;
    for (int i = 0; i < R->old.n; i++) {
        if (R->old.nodes[i].op != OP_ALL_REDUCE) continue;
        for (int r = 0; r < R->n_dev; r++) ir_node_at(R->m, R->map[r][i])->iattr[0] = next;
        next++;
    }
}

/* The init program: every variable of replica 0 broadcast to all. */
static void add_broadcasts(replicator *R) {
    int group = 0;
    for (int i = 0; i < R->old.n; i++) {
        if (!(ir_ops[R->old.nodes[i].op].flags & OPF_VARIABLE)) continue;
        for (int r = 0; r < R->n_dev; r++) {
            int b = add(R, OP_BROADCAST, &R->map[r][i], 1, R->old.nodes[i].loc, r, comm_stream(R));
            ir_node_at(R->m, b)->iattr[0] = group;
            infer_or_die(R->m, b);
        }
        group++;
    }
}

/* Marks node i and everything it reads in `program` as part of it. */
static void mark(ir_module *m, int i, unsigned program) {
    ir_node *n = ir_node_at(m, i);
    if (n->programs & program) return;
    n->programs |= program;
    for (int k = 0; k < n->n_in; k++)
        if (ir_reads_input(n, k, __builtin_ctz(program))) mark(m, n->in[k], program);
}

static void mark_programs(ir_module *m, int n_dev) {
    for (int i = 0; i < m->g.n; i++) {
        const ir_node *n = ir_node_at(m, i);
        if (is_update(n) || n->op == OP_ALL_REDUCE || n->op == OP_ASSIGN) mark(m, i, PROG_TRAIN);
        if (n->op == OP_BROADCAST) mark(m, i, PROG_INIT);
    }
    for (int r = 0; r < n_dev; r++) {
        /* replica r's copies of the model interface nodes */
        for (int i = 0; i < m->g.n; i++) {
            const ir_node *n = ir_node_at(m, i);
            if (n->device != r || n->origin < 0) continue;
            bool is_metric = false;
            for (int k = 0; k < m->n_metrics; k++) is_metric |= n->origin == m->metrics[k].node;
            if (n->origin == m->loss || is_metric) mark(m, i, PROG_EVAL);
            for (int k = 0; k < m->n_outputs; k++)
                if (n->origin == m->outputs[k].node) mark(m, i, PROG_PREDICT);
        }
    }
}

bool pass_replicate(ir_module *m, ir_diag *d, const pass_options *o) {
    (void)d;
    replicator R = {.m = m, .old = m->g, .n_dev = o->n_devices > 0 ? o->n_devices : 1};
    m->g = (ir_graph){0};
    R.host = malloc((size_t)R.old.n * sizeof *R.host);
    R.map = malloc((size_t)R.n_dev * sizeof *R.map);
    R.shard = malloc((size_t)R.n_dev * sizeof *R.shard);
    for (int r = 0; r < R.n_dev; r++) {
        R.map[r] = malloc((size_t)R.old.n * sizeof **R.map);
        R.shard[r] = malloc((size_t)R.old.n * sizeof **R.shard);
        for (int i = 0; i < R.old.n; i++) R.map[r][i] = R.shard[r][i] = -1;
    }
    m->n_devices = R.n_dev;
    m->devices = malloc((size_t)R.n_dev * sizeof *m->devices);
    for (int r = 0; r < R.n_dev; r++)
        m->devices[r] = o->devices ? (ir_device){ir_intern(m, o->devices[r].name), o->devices[r].index}
                                   : (ir_device){ir_intern(m, "cpu"), r};
    m->cross_device = o->cross_device;
    m->bucket_bytes = o->bucket_bytes;
    m->sparse_grads = o->sparse_grads;

    add_host_inputs(&R);
    if (m->has_train && m->grads) choose_sparse(&R, o->sparse_grads);
    R.report_at = -1;
    if (m->has_train && m->grads) {
        make_buckets(m, &R.old, m->bucket_bytes, R.sparse); /* numbers the report */
        R.report_at = m->loss;
        for (int k = 0; k < m->n_metrics && m->loss >= 0; k++)
            if (m->metrics[k].node > R.report_at) R.report_at = m->metrics[k].node;
    }
    for (int r = 0; r < R.n_dev; r++) clone_replica(&R, r);
    int **view = NULL;
    if (m->has_train && m->grads) {
        view = reduce_gradients(&R);
        sparse_gradients(&R, view);
        clone_updates(&R, view);
    }
    add_broadcasts(&R);
    number_forward_collectives(&R);

    /* the model interface now names replica 0's nodes */
    for (int b = 0; b < m->n_buckets; b++)
        for (int j = 0; j < m->buckets[b].n_grads; j++) m->buckets[b].grads[j] = R.map[0][m->params[m->buckets[b].grads[j]]];
    mark_programs(m, R.n_dev);
    for (int k = 0; k < m->n_inputs; k++) m->inputs[k] = R.host[m->inputs[k]];
    for (int p = 0; p < m->n_params; p++) {
        if (view) m->grads[p] = view[0][p];
        m->params[p] = R.map[0][m->params[p]];
    }
    if (m->loss >= 0) m->loss = R.map[0][m->loss];
    for (int k = 0; k < m->n_metrics; k++) m->metrics[k].node = R.map[0][m->metrics[k].node];
    for (int k = 0; k < m->n_outputs; k++) m->outputs[k].node = R.map[0][m->outputs[k].node];

    for (int r = 0; r < R.n_dev; r++) {
        free(R.map[r]), free(R.shard[r]);
        if (view) free(view[r]);
    }
    free(view), free(R.map), free(R.shard), free(R.host), free(R.sparse);
    for (int i = 0; i < R.old.n; i++) free(R.old.nodes[i].in);
    free(R.old.nodes);
    return true;
}
