/* fuse_epilogue.c - the "epilogue" pass (issue 14): after autodiff and the
 * optimizer, before replicate, rewrite in place
 *
 *   relu_grad(x, dy)                 -> relu_grad(relu(x), dy)   (x > 0 iff relu(x) > 0)
 *   act(core + bias [+ residual])    -> core_epilogue(a, b, bias[, residual]; act)
 *       core conv2d or matmul, bias [channels], residual of the output's shape,
 *       act relu, tanh, sigmoid or none; the intermediates used by nothing else
 *   relu_grad(y, max_pool2d_grad(y, dy)) -> max_pool2d_relu_grad(y, dy)
 *   act((conv - mean) * scale + beta [+ residual]) -> conv2d_bn_epilogue(x, w, conv, mean,
 *       scale, beta[, residual]; act), batch norm's: the conv outside training only
 *   causal_softmax_grad(y, dropout_grad(dp)) -> causal_softmax_dropout_grad(y, dp)
 *       (issue 14, char_gpt speed: attention's dropout gradient masks dp on the fly)
 *   causal_softmax(causal_matmul(a, b)) -> causal_matmul_softmax(a, b), and the
 *       gradients likewise (issue 14, char_gpt speed: the scores stay in cache)
 *
 * The first rule leaves the pre-activation to the activation alone (relu_grad
 * now reads the output; tanh_grad and sigmoid_grad always did), which lets the
 * second fuse it away. Each rewrite turns the last node of a pattern into the
 * fused op at the same index, so every reference to it (later nodes, loss,
 * metrics, outputs, gradients) stays valid; the nodes it replaced are left
 * unread, and replicate's program marking never schedules them. Use counts
 * are recomputed after each rewrite (one linear pass; a model has a few
 * hundred epilogues at most). Skipped by
 * `mgc compile --no-fuse`.
 */
#include <stdlib.h>
#include <string.h>

#include "pass_impl.h"
#include "passes.h"

typedef struct {
    ir_module *m;
    bool *live;      /* live[i]: node i is read, through other nodes, by a root (updates, assigns, */
                     /*   collectives, the model interface) */
    int *uses;       /* uses[i]: references to node i from live nodes and the model interface */
    int *user;       /* user[i]: the last live node reading node i, -1 for none */
    int *relu_of;    /* relu_of[x]: a live relu node reading x, -1 for none */
} fuser;

static ir_node *at(const fuser *f, int i) { return ir_node_at(f->m, i); }

static bool is_root(const ir_node *n) {
    return (ir_ops[n->op].flags & (OPF_UPDATE | OPF_COLLECTIVE)) || n->op == OP_ASSIGN;
}

/* live, uses, user and relu_of of the graph as it is now (after each rewrite) */
static void count_uses(fuser *f) {
    ir_module *m = f->m;
    int *ref = f->uses;
    for (int i = 0; i < m->g.n; i++) ref[i] = 0, f->user[i] = -1, f->relu_of[i] = -1;
    if (m->loss >= 0) ref[m->loss]++;
    for (int k = 0; k < m->n_metrics; k++) ref[m->metrics[k].node]++;
    for (int k = 0; k < m->n_outputs; k++) ref[m->outputs[k].node]++;
    for (int k = 0; m->grads && k < m->n_params; k++)
        if (m->grads[k] >= 0) ref[m->grads[k]]++;
    for (int i = m->g.n - 1; i >= 0; i--) { /* readers come after what they read */
        const ir_node *n = at(f, i);
        f->live[i] = ref[i] > 0 || is_root(n);
        if (!f->live[i]) continue;
        for (int k = 0; k < n->n_in; k++) {
            ref[n->in[k]]++;
            if (f->user[n->in[k]] < i) f->user[n->in[k]] = i;
        }
        if (n->op == OP_RELU) f->relu_of[n->in[0]] = i; /* the first such relu wins */
    }
}

/* node i's only reader, -1 when it has several or the interface reads it */
static int only_user(const fuser *f, int i) { return f->uses[i] == 1 ? f->user[i] : -1; }

/* Replaces node i by op(in) with iattr, keeping its index; reverts and returns
 * false when the shape rule rejects it (a pattern that only looked fusable). */
static bool rewrite(fuser *f, int i, ir_op op, const int *in, int n_in, const int64_t *iattr, ir_loc loc) {
    ir_node *n = at(f, i), old = *n;
    n->op = op, n->n_in = n_in, n->loc = loc;
    n->in = malloc((size_t)n_in * sizeof *n->in);
    memcpy(n->in, in, (size_t)n_in * sizeof *in);
    memcpy(n->iattr, iattr, sizeof n->iattr);
    memset(n->fattr, 0, sizeof n->fattr);
    char err[256];
    if (n->in && ir_infer_node(f->m, i, err, sizeof err)) {
        free(old.in);
        count_uses(f);
        return true;
    }
    free(n->in);
    *n = old;
    return false;
}

/* relu_grad(x, dy) reads relu(x) instead of x, when that relu exists */
static void grads_read_outputs(fuser *f) {
    for (int i = 0; i < f->m->g.n; i++) {
        ir_node *n = at(f, i);
        int y = n->op == OP_RELU_GRAD && f->live[i] ? f->relu_of[n->in[0]] : -1;
        if (y >= 0 && y < i) n->in[0] = y;
    }
}

static int act_of(ir_op op) {
    return op == OP_RELU ? EPI_RELU : op == OP_TANH ? EPI_TANH : op == OP_SIGMOID ? EPI_SIGMOID : -1;
}

/* bias of add node t over core c: its other operand, a vector of c's channels */
static int bias_of(const fuser *f, int t, int c) {
    const ir_node *n = at(f, t), *core = at(f, c);
    int b = n->in[0] == c ? n->in[1] : n->in[0];
    const ir_node *bn = at(f, b);
    if (b == c || bn->shape.rank != 1 || bn->dtype != IR_F32 || !ir_shape_eq(&n->shape, &core->shape)) return -1;
    return bn->shape.dim[0] == core->shape.dim[core->shape.rank - 1] ? b : -1;
}

/* Rule 2 through a reshape (issue 14, char_gpt): a dense layer on [b, t, d]
 * is reshape(matmul([b t, d], W)) + bias, the reshape keeping the last axis.
 * The matmul becomes matmul_epilogue(a, W, bias[; act]) in its own place (the
 * bias, a param, comes before it) and the last node a reshape of it; the old
 * reshape is read by nothing. No residual: it has the reshaped shape. */
static void fuse_reshaped_at(fuser *f, int t, int r, int b) {
    int mm = at(f, r)->in[0], last = t, act = EPI_NONE, u = only_user(f, t);
    if (u >= 0 && act_of(at(f, u)->op) >= 0) act = act_of(at(f, u)->op), last = u;
    const ir_node *core = at(f, mm);
    int in[3] = {core->in[0], core->in[1], b}, view = mm;
    int64_t iattr[IR_MAX_IATTR] = {core->iattr[0], core->iattr[1], act}, none[IR_MAX_IATTR] = {0};
    if (b < mm && rewrite(f, mm, OP_MATMUL_EPILOGUE, in, 3, iattr, core->loc)) {
        /* the same element count as the matmul: it cannot fail, and left as the add it would add the bias twice */
        bool ok = rewrite(f, last, OP_RESHAPE, &view, 1, none, at(f, last)->loc);
        ASSERT(ok, "epilogue: node %d cannot become a reshape of the matmul_epilogue %d", last, mm);
    }
}

/* node c is reshape(matmul) read by t alone, the matmul by the reshape alone,
 * the last axis kept */
static bool reshaped_matmul(const fuser *f, int c, int t) {
    const ir_node *r = at(f, c);
    if (r->op != OP_RESHAPE || only_user(f, c) != t) return false;
    const ir_node *mm = at(f, r->in[0]);
    return mm->op == OP_MATMUL && mm->dtype == IR_F32 && only_user(f, r->in[0]) == c &&
           mm->shape.dim[mm->shape.rank - 1] == r->shape.dim[r->shape.rank - 1];
}

/* The epilogue rooted at add node t (core + bias): extended over a residual
 * add and an activation its single readers, then written into the last node. */
static void fuse_epilogue_at(fuser *f, int t) {
    const ir_node *n = at(f, t);
    int c = -1, b = -1;
    for (int k = 0; k < 2 && b < 0; k++) {
        c = n->in[k];
        ir_op op = at(f, c)->op;
        if ((op == OP_CONV2D || op == OP_MATMUL) && only_user(f, c) == t && at(f, c)->dtype == IR_F32)
            b = bias_of(f, t, c);
        else if (reshaped_matmul(f, c, t) && (b = bias_of(f, t, c)) >= 0)
            return fuse_reshaped_at(f, t, c, b);
    }
    if (b < 0) return;
    int last = t, res = -1, act = EPI_NONE, u = only_user(f, t);
    if (u >= 0 && at(f, u)->op == OP_ADD && ir_shape_eq(&at(f, u)->shape, &n->shape)) {
        res = at(f, u)->in[0] == t ? at(f, u)->in[1] : at(f, u)->in[0];
        if (res != t && ir_shape_eq(&at(f, res)->shape, &n->shape)) last = u, u = only_user(f, u);
        else res = -1;
    }
    if (u >= 0 && act_of(at(f, u)->op) >= 0) act = act_of(at(f, u)->op), last = u;
    const ir_node *core = at(f, c);
    int in[4] = {core->in[0], core->in[1], b, res};
    int64_t iattr[IR_MAX_IATTR] = {0};
    if (core->op == OP_CONV2D) {
        memcpy(iattr, core->iattr, 9 * sizeof *iattr), iattr[9] = act;
        rewrite(f, last, OP_CONV2D_EPILOGUE, in, res >= 0 ? 4 : 3, iattr, core->loc);
    } else {
        iattr[0] = core->iattr[0], iattr[1] = core->iattr[1], iattr[2] = act;
        rewrite(f, last, OP_MATMUL_EPILOGUE, in, res >= 0 ? 4 : 3, iattr, core->loc);
    }
}

/* ---- batch norm's scale/shift in eval and predict (docs/epilogue.md, rule 4) ----
 * act((c - mean) * scale + beta [+ residual]) -> conv2d_bn_epilogue(x, w, c,
 * mean, scale, beta[, residual]; act) at the last node's index, c = conv2d(x, w)
 * f32, mean an in_training node (batch_norm's: the batch mean in training, the
 * moving mean outside it), mean, scale and beta vectors of c's channels, the
 * mul, add, residual add and activation each the single reader of what they
 * extend. The sub stays (training reads it for the batch variance and the
 * gradients); outside training nothing reads c or the sub any more, so eval
 * and predict run the convolution with the rest as its epilogue. */

/* node v is f32[channels of c] */
static bool channel_vec(const fuser *f, int v, int c) {
    const ir_node *n = at(f, v), *core = at(f, c);
    return n->dtype == IR_F32 && n->shape.rank == 1 && n->shape.dim[0] == core->shape.dim[core->shape.rank - 1];
}

/* the batch norm ending at node add (its beta add or scale_shift), over conv c:
 * extended over a residual add and an activation its single readers, then
 * written into the last node */
static void fuse_bn_tail(fuser *f, int add, int c, int mean, int scale, int beta) {
    const ir_node *n = at(f, add), *core = at(f, c);
    int last = add, res = -1, act = EPI_NONE, u = only_user(f, add);
    if (u >= 0 && at(f, u)->op == OP_ADD && ir_shape_eq(&at(f, u)->shape, &n->shape)) {
        res = at(f, u)->in[0] == add ? at(f, u)->in[1] : at(f, u)->in[0];
        if (res != add && ir_shape_eq(&at(f, res)->shape, &n->shape) && at(f, res)->dtype == IR_F32)
            last = u, u = only_user(f, u);
        else res = -1;
    }
    if (u >= 0 && act_of(at(f, u)->op) >= 0) act = act_of(at(f, u)->op), last = u;
    int in[7] = {core->in[0], core->in[1], c, mean, scale, beta, res};
    int64_t iattr[IR_MAX_IATTR] = {0};
    memcpy(iattr, core->iattr, 9 * sizeof *iattr), iattr[9] = act;
    rewrite(f, last, OP_CONV2D_BN_EPILOGUE, in, res >= 0 ? 7 : 6, iattr, core->loc);
}

static void fuse_bn_at(fuser *f, int mul) {
    const ir_node *n = at(f, mul);
    int sub = -1, scale = -1;
    for (int k = 0; k < 2 && sub < 0; k++) {
        const ir_node *s = at(f, n->in[k]);
        if (s->op == OP_SUB && at(f, s->in[0])->op == OP_CONV2D && at(f, s->in[1])->op == OP_IN_TRAINING)
            sub = n->in[k], scale = n->in[1 - k];
    }
    if (sub < 0) return;
    int c = at(f, sub)->in[0], mean = at(f, sub)->in[1];
    const ir_node *core = at(f, c);
    if (core->dtype != IR_F32 || !ir_shape_eq(&core->shape, &n->shape) || !channel_vec(f, mean, c) ||
        !channel_vec(f, scale, c))
        return;
    int add = only_user(f, mul), beta = -1;
    if (add < 0 || at(f, add)->op != OP_ADD || !ir_shape_eq(&at(f, add)->shape, &n->shape)) return;
    beta = at(f, add)->in[0] == mul ? at(f, add)->in[1] : at(f, add)->in[0];
    if (beta == mul || !channel_vec(f, beta, c)) return;
    fuse_bn_tail(f, add, c, mean, scale, beta);
}

/* issue 14 (batch norm in training): stdlib batch_norm's scale_shift(c, mean,
 * scale, beta) is the sub, mul and add of the rule in one node */
static void fuse_scale_shift_at(fuser *f, int ss) {
    const ir_node *n = at(f, ss);
    int c = n->in[0];
    if (at(f, c)->op != OP_CONV2D || at(f, c)->dtype != IR_F32 || at(f, n->in[1])->op != OP_IN_TRAINING) return;
    fuse_bn_tail(f, ss, c, n->in[1], n->in[2], n->in[3]);
}

/* relu_grad(y, max_pool2d_grad(y, dy)) -> max_pool2d_relu_grad(y, dy) */
static void fuse_pool_relu_grad(fuser *f, int i) {
    const ir_node *n = at(f, i);
    int pg = n->in[1];
    const ir_node *p = at(f, pg);
    if (p->op != OP_MAX_POOL2D_GRAD || p->in[0] != n->in[0] || only_user(f, pg) != i) return;
    rewrite(f, i, OP_MAX_POOL2D_RELU_GRAD, (int[]){n->in[0], p->in[1]}, 2, p->iattr, p->loc);
}

/* ---- issue 14 (seed CNN speed): the first convolution's gradients through a 2x2 max-pool ----
 *   conv2d_grad_filter(x, max_pool2d_relu_grad(y, dy)) -> conv2d_grad_filter_pool2(x, y, dy)
 *       2x2 windows of stride 2 tiling y; one input channel, groups 1, output
 *       channels a multiple of 8 (where its CPU kernel beats oneDNN's, docs/cpu-kernels.md)
 *   reduce_sum over N, H, W of max_pool2d_relu_grad(y, dy) -> of relu_grad(max_pool2d(y), dy)
 *       (the bias gradient) when the pool's windows do not overlap (window = stride, no
 *       padding) and only such sums read it: each window passes dy, masked by its
 *       maximum > 0, to one element, so the sums agree but for the order of the terms;
 *       the [N, H, W, C] gradient is then read by nothing and never made. */

static bool pool2(const int64_t *a) {
    return a[0] == 2 && a[1] == 2 && a[2] == 2 && a[3] == 2 && !a[4] && !a[5] && !a[6] && !a[7];
}

static void fuse_grad_filter_pool(fuser *f, int i) {
    const ir_node *n = at(f, i), *x = at(f, n->in[0]), *g = at(f, n->in[1]);
    if (g->op != OP_MAX_POOL2D_RELU_GRAD || !pool2(g->iattr) || x->shape.rank != 4 || x->shape.dim[3] != 1 ||
        n->iattr[8] != 1 || n->shape.rank != 4 || n->shape.dim[3] % 8)
        return;
    const ir_shape *y = &at(f, g->in[0])->shape;
    if (y->rank != 4 || y->dim[1] % 2 || y->dim[2] % 2) return;
    rewrite(f, i, OP_CONV2D_GRAD_FILTER_POOL2, (int[]){n->in[0], g->in[0], g->in[1]}, 3, n->iattr, n->loc);
}

static void fuse_bias_grad_pool(fuser *f, int j) {
    ir_node *g = at(f, j);
    const int64_t *a = g->iattr;
    if (a[0] != a[2] || a[1] != a[3] || a[4] || a[5] || a[6] || a[7] || g->shape.rank != 4) return;
    int p = -1, readers = 0;
    for (int i = 0; i < f->m->g.n; i++) {
        const ir_node *u = at(f, i);
        if (!f->live[i]) continue;
        if (u->op == OP_MAX_POOL2D && u->in[0] == g->in[0] && !memcmp(u->iattr, a, 8 * sizeof *a) && i < j) p = i;
        for (int k = 0; k < u->n_in; k++)
            if (u->in[k] == j && (u->op != OP_REDUCE_SUM || u->iattr[0] != 7)) return; /* a reader needing dx */
            else if (u->in[k] == j) readers++;
    }
    if (p < 0 || readers < 1 || f->uses[j] != readers) return; /* the interface reads it too */
    if (!rewrite(f, j, OP_RELU_GRAD, (int[]){p, g->in[1]}, 2, (int64_t[IR_MAX_IATTR]){0}, g->loc)) return;
    char err[256];
    for (int i = j + 1; i < f->m->g.n; i++)
        if (f->live[i] && at(f, i)->op == OP_REDUCE_SUM && at(f, i)->in[0] == j) ir_infer_node(f->m, i, err, sizeof err);
}

/* ---- issue 14 (seed CNN speed): the first convolution, relu and 2x2 max-pool in one pass (rule 6) ----
 *   y = conv2d_epilogue(x, w, bias; relu), f32, no residual, read by nothing but
 *       max_pool2d(y) (2x2 windows of stride 2 tiling y) and conv2d_grad_filter_pool2(x, y, dy)
 *       (the same x and convolution):
 *   y                                  -> f = conv2d_relu_pool2(x, w, bias), [2, N, P, Q, C]
 *   max_pool2d(y)                      -> view(f) of its first half, the pooled maxima
 *   conv2d_grad_filter_pool2(x, y, dy) -> conv2d_relu_pool2_grad_filter(x, w, f, dy)
 *       y is then never made: the forward pools two rows of it at a time in cache and
 *       writes, behind the maxima, each window's pixel the gradient goes to, which the
 *       filter gradient reads instead of making y again. f takes y's index, which comes
 *       before every reader. */

/* node u reads y as rule 6 takes it: 1 a max_pool2d, 2 a filter gradient through it, 0 otherwise */
static int relu_pool2_reader(const fuser *f, int u, int y) {
    const ir_node *n = at(f, u), *c = at(f, y);
    if (n->op == OP_MAX_POOL2D && n->in[0] == y && pool2(n->iattr)) return 1;
    if (n->op == OP_CONV2D_GRAD_FILTER_POOL2 && n->in[1] == y && n->in[0] == c->in[0] && n->in[2] != y &&
        !memcmp(n->iattr, c->iattr, 9 * sizeof *n->iattr))
        return 2;
    return 0;
}

static void fuse_relu_pool2(fuser *f, int y) {
    const ir_node *c = at(f, y);
    if (c->n_in != 3 || c->iattr[9] != EPI_RELU || c->dtype != IR_F32 || c->shape.rank != 4 || c->shape.dim[1] % 2 ||
        c->shape.dim[2] % 2)
        return;
    int readers = 0, pools = 0, n = f->m->g.n;
    for (int u = y + 1; u < n; u++) {
        if (!f->live[u]) continue;
        const ir_node *r = at(f, u);
        for (int k = 0; k < r->n_in; k++)
            if (r->in[k] == y) {
                int kind = relu_pool2_reader(f, u, y);
                if (!kind) return; /* a reader needing y itself */
                readers++, pools += kind == 1;
            }
    }
    if (!pools || f->uses[y] != readers) return; /* the interface reads y too */
    int x = c->in[0], w = c->in[1], b = c->in[2];
    int64_t iattr[IR_MAX_IATTR] = {0};
    memcpy(iattr, c->iattr, 9 * sizeof *iattr);
    int kinds[n]; /* the readers' kinds, taken before y changes */
    for (int u = y + 1; u < n; u++) kinds[u] = f->live[u] ? relu_pool2_reader(f, u, y) : 0;
    if (!rewrite(f, y, OP_CONV2D_RELU_POOL2, (int[]){x, w, b}, 3, iattr, c->loc)) return;
    for (int u = y + 1; u < n; u++)
        if (kinds[u] == 1) { /* a view keeps the pool's shape (rewrite keeps it, and rule_view reads it) */
            if (!rewrite(f, u, OP_VIEW, (int[]){y}, 1, (int64_t[IR_MAX_IATTR]){0}, at(f, u)->loc)) abort();
        } else if (kinds[u] == 2 && !rewrite(f, u, OP_CONV2D_RELU_POOL2_GRAD_FILTER, (int[]){x, w, y, at(f, u)->in[2]},
                                             4, iattr, at(f, u)->loc))
            abort(); /* the shape rules accept what relu_pool2_reader did */
}

/* ---- issue 14 (seed CNN speed): the conv bias gradient in the filter gradient (rule 6b) ----
 *   g = conv2d_relu_pool2_grad_filter(x, w, f, dy),
 *   reduce_sum(relu_grad(view(f), dy), axes N, P, Q), the relu_grad read by nothing else:
 *   relu_grad -> h = conv2d_relu_pool2_grad_filter(x, w, f, dy; bias=1), f32[C + numel(w)]
 *   reduce_sum -> view(h) of its first C, the bias gradient
 *   g          -> view(h) after them, the filter gradient
 *       The bias gradient sums the dy the filter gradient already loads where the
 *       window's pixel is >= 0 (the pooled maximum is > 0, relu_grad's test), so
 *       relu_grad's [N, P, Q, C] is never written nor read again. h takes the
 *       relu_grad's index, which only the reduce_sum reads: the gradients' indices
 *       (model->grads, the buckets) stay the views'. */
static void fuse_relu_pool2_bias_grad(fuser *f, int i) {
    const ir_node *g = at(f, i);
    if (g->iattr[9]) return;
    for (int j = 0; j < i; j++) {
        const ir_node *r = at(f, j), *v;
        if (!f->live[j] || r->op != OP_REDUCE_SUM || r->iattr[0] != 7) continue;
        int rg = r->in[0];
        const ir_node *n = at(f, rg);
        if (n->op != OP_RELU_GRAD || only_user(f, rg) != j || n->in[1] != g->in[3] || n->shape.rank != 4) continue;
        v = at(f, n->in[0]);
        if (v->op != OP_VIEW || v->in[0] != g->in[2] || v->iattr[0] != 0) continue;
        int64_t iattr[IR_MAX_IATTR];
        memcpy(iattr, g->iattr, sizeof iattr);
        iattr[9] = 1;
        int64_t c = n->shape.dim[3];
        if (!rewrite(f, rg, OP_CONV2D_RELU_POOL2_GRAD_FILTER, g->in, 4, iattr, g->loc)) return;
        if (!rewrite(f, j, OP_VIEW, (int[]){rg}, 1, (int64_t[IR_MAX_IATTR]){0}, r->loc) ||
            !rewrite(f, i, OP_VIEW, (int[]){rg}, 1, (int64_t[IR_MAX_IATTR]){c}, at(f, i)->loc))
            abort(); /* views of h's bytes, checked by rule_view */
        return;
    }
}

/* ---- issue 14 (char_gpt speed): attention's dropout gradient in causal_softmax_grad ----
 *   causal_softmax_grad(y, dropout_grad(dp)) -> causal_softmax_dropout_grad(y, dp)
 *       when nothing else reads the dropout_grad: the mask (dropout's seed and
 *       rate) applied to dp over the kept triangle only, in the same pass, so
 *       the [.., t, t] masked gradient is never written nor read again */
static void fuse_causal_dropout_grad(fuser *f, int i) {
    const ir_node *n = at(f, i), *g = at(f, n->in[1]);
    if (g->op != OP_DROPOUT_GRAD || only_user(f, n->in[1]) != i) return;
    int64_t seed = g->iattr[0];
    double scale = n->fattr[0], rate = g->fattr[0];
    if (rewrite(f, i, OP_CAUSAL_SOFTMAX_DROPOUT_GRAD, (int[]){n->in[0], g->in[0]}, 2, (int64_t[IR_MAX_IATTR]){seed},
                n->loc)) {
        ir_node *r = at(f, i);
        r->fattr[0] = scale, r->fattr[1] = rate;
    }
}

/* ---- issue 14 (char_gpt speed): attention's scores and their softmax in one pass ----
 *   causal_softmax(causal_matmul(a, b; tri 0, lower)) -> causal_matmul_softmax(a, b)
 *   causal_softmax_dropout_grad(y, causal_matmul(a, b; tri 0, lower)) and
 *   causal_softmax_grad(y, causal_matmul(...)) -> causal_matmul_softmax_grad(a, b, y)
 *       when nothing else reads the causal_matmul: each [t, t] matrix of
 *       scores (or of the weights' gradient) is made and consumed in cache,
 *       the [.., t, t] tensor never written nor read back */
static void fuse_causal_scores(fuser *f, int i) {
    const ir_node *n = at(f, i);
    bool grad = n->op != OP_CAUSAL_SOFTMAX;
    int x = n->in[grad ? 1 : 0];
    const ir_node *s = at(f, x);
    if (s->op != OP_CAUSAL_MATMUL || s->iattr[2] != 0 || s->iattr[3] != 0 || only_user(f, x) != i) return;
    bool dropout = n->op == OP_CAUSAL_SOFTMAX_DROPOUT_GRAD;
    double scale = n->fattr[0], rate = dropout ? n->fattr[1] : 0;
    int64_t iattr[IR_MAX_IATTR] = {s->iattr[0], s->iattr[1], dropout ? n->iattr[0] : 0};
    int in[3] = {s->in[0], s->in[1], n->in[0]};
    if (rewrite(f, i, grad ? OP_CAUSAL_MATMUL_SOFTMAX_GRAD : OP_CAUSAL_MATMUL_SOFTMAX, in, grad ? 3 : 2, iattr, n->loc)) {
        ir_node *r = at(f, i);
        r->fattr[0] = scale, r->fattr[1] = rate;
    }
}

bool pass_epilogue(ir_module *m, ir_diag *d, const pass_options *o) {
    (void)d;
    if (o->no_fuse) return true;
    size_t n = (size_t)m->g.n;
    fuser f = {m, malloc(n * sizeof(bool)), malloc(n * sizeof(int)), malloc(n * sizeof(int)), malloc(n * sizeof(int))};
    count_uses(&f);
    grads_read_outputs(&f);
    count_uses(&f);
    for (int i = 0; i < m->g.n; i++) /* batch norm first: its adds are no conv bias */
        if (f.live[i] && at(&f, i)->op == OP_MUL) fuse_bn_at(&f, i);
        else if (f.live[i] && at(&f, i)->op == OP_SCALE_SHIFT) fuse_scale_shift_at(&f, i);
    for (int i = 0; i < m->g.n; i++)
        if (f.live[i] && at(&f, i)->op == OP_ADD) fuse_epilogue_at(&f, i);
    for (int i = 0; i < m->g.n; i++)
        if (f.live[i] && at(&f, i)->op == OP_RELU_GRAD) fuse_pool_relu_grad(&f, i);
    for (int i = 0; i < m->g.n; i++) /* issue 14 (seed CNN speed): after max_pool2d_relu_grad exists */
        if (f.live[i] && at(&f, i)->op == OP_CONV2D_GRAD_FILTER) fuse_grad_filter_pool(&f, i);
    for (int i = 0; i < m->g.n; i++)
        if (f.live[i] && at(&f, i)->op == OP_MAX_POOL2D_RELU_GRAD) fuse_bias_grad_pool(&f, i);
    for (int i = 0; i < m->g.n; i++) /* issue 14 (seed CNN speed): after conv2d_grad_filter_pool2 exists */
        if (f.live[i] && at(&f, i)->op == OP_CONV2D_EPILOGUE) fuse_relu_pool2(&f, i);
    for (int i = 0; i < m->g.n; i++) /* issue 14 (seed CNN speed): after conv2d_relu_pool2_grad_filter exists */
        if (f.live[i] && at(&f, i)->op == OP_CONV2D_RELU_POOL2_GRAD_FILTER) fuse_relu_pool2_bias_grad(&f, i);
    for (int i = 0; i < m->g.n; i++) /* issue 14 (char_gpt speed) */
        if (f.live[i] && at(&f, i)->op == OP_CAUSAL_SOFTMAX_GRAD) fuse_causal_dropout_grad(&f, i);
    for (int i = 0; i < m->g.n; i++) { /* issue 14 (char_gpt speed): after causal_softmax_dropout_grad exists */
        ir_op op = at(&f, i)->op;
        if (f.live[i] && (op == OP_CAUSAL_SOFTMAX || op == OP_CAUSAL_SOFTMAX_GRAD || op == OP_CAUSAL_SOFTMAX_DROPOUT_GRAD))
            fuse_causal_scores(&f, i);
    }
    free(f.live), free(f.uses), free(f.user), free(f.relu_of);
    return true;
}
