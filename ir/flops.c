/* flops.c - the arithmetic of a plan's step: what `mgc inspect` prints and
 * bench/train.sh divides by the step time. Only matmuls and convolutions
 * count (2 flops a multiply-add, as sgemm's peak is counted); elementwise
 * work is memory-bound and not compared with that peak. */
#include "ir.h"

/* Multiply-adds of a convolution: every element of the side that is the
 * convolution's output (y of conv2d, dy of its gradients) meets one filter
 * window of kh * kw * (input channels per group) taps. */
static int64_t conv_macs(const ir_module *m, const ir_node *n) {
    const ir_shape *w = n->op == OP_CONV2D_GRAD_FILTER || n->op == OP_CONV2D_GRAD_FILTER_POOL2 ? &n->shape : &m->g.nodes[n->in[1]].shape; /* the filter */
    int64_t taps = w->dim[0] * w->dim[1] * w->dim[2];
    switch (n->op) {
    case OP_CONV2D:
    case OP_CONV2D_EPILOGUE:
    case OP_CONV2D_BN_EPILOGUE: return ir_shape_numel(&n->shape) * taps;
    case OP_CONV2D_GRAD_INPUT: return ir_shape_numel(&m->g.nodes[n->in[0]].shape) * taps;
    case OP_CONV2D_GRAD_FILTER: return ir_shape_numel(&m->g.nodes[n->in[1]].shape) * taps;
    case OP_CONV2D_GRAD_FILTER_POOL2: return ir_shape_numel(&m->g.nodes[n->in[1]].shape) * taps; /* y: dx's shape */
    /* issue 14 (seed CNN speed): y, 4 times the pooled output (half of the node's); the unfused count */
    case OP_CONV2D_RELU_POOL2: return 2 * ir_shape_numel(&n->shape) * taps;
    case OP_CONV2D_RELU_POOL2_GRAD_FILTER: return 4 * ir_shape_numel(&m->g.nodes[n->in[3]].shape) * taps;
    default: /* conv2d_transpose, w [kh, kw, cout, cin]: each input element meets kh * kw * cout taps */
        return ir_shape_numel(&m->g.nodes[n->in[0]].shape) * w->dim[0] * w->dim[1] * w->dim[2];
    }
}

int64_t ir_node_flops(const ir_module *m, const ir_node *n) {
    switch (n->op) {
    case OP_MATMUL:
    case OP_MATMUL_EPILOGUE: {
        ir_matmul g = ir_matmul_of(n, &m->g.nodes[n->in[0]].shape, &m->g.nodes[n->in[1]].shape);
        return 2 * g.batch * g.m * g.n * g.k;
    }
    case OP_CAUSAL_MATMUL: /* issue 14: the triangle's products only, t (t + 1) / 2 of the square t x t */
    case OP_CAUSAL_MATMUL_SOFTMAX: case OP_CAUSAL_MATMUL_SOFTMAX_GRAD: { /* the output's triangle (tri 0) */
        ir_matmul g = ir_matmul_of(n, &m->g.nodes[n->in[0]].shape, &m->g.nodes[n->in[1]].shape);
        int64_t tri = n->op == OP_CAUSAL_MATMUL ? n->iattr[2] : 0, t = tri == 2 ? g.n : g.m,
                other = tri == 0 ? g.k : tri == 1 ? g.n : g.m;
        return g.batch * other * t * (t + 1);
    }
    case OP_CONV2D:
    case OP_CONV2D_EPILOGUE:
    case OP_CONV2D_BN_EPILOGUE: /* eval and predict only: ir_step_flops */
    case OP_CONV2D_GRAD_INPUT:
    case OP_CONV2D_GRAD_FILTER:
    case OP_CONV2D_GRAD_FILTER_POOL2: /* issue 14: the filter gradient through a 2x2 max-pool */
    case OP_CONV2D_RELU_POOL2: case OP_CONV2D_RELU_POOL2_GRAD_FILTER: /* issue 14: conv, relu, pool in one */
    case OP_CONV2D_TRANSPOSE: return 2 * conv_macs(m, n);
    default: return 0;
    }
}

int64_t ir_step_flops(const ir_module *m, int program, int device) { /* program: bit index, as in ir_sched_list */
    int64_t total = 0;
    for (int l = 0; l < m->n_sched; l++) {
        const ir_sched_list *s = &m->sched[l];
        if (s->program != program || s->device != device) continue;
        for (int k = 0; k < s->n; k++)
            if (s->items[k].kind == SCHED_KERNEL &&
                (program != 0 || m->g.nodes[s->items[k].arg].op != OP_CONV2D_BN_EPILOGUE)) /* no convolution in train */
                total += ir_node_flops(m, &m->g.nodes[s->items[k].arg]);
    }
    return total;
}
