/* test_verify.c - ir_verify finds each class of problem, one message each,
 * and pass_shapes reports a rule failure once, at the node's position. */
#include <string.h>

#include "../../passes/passes.h"
#include "fixture.h"

typedef struct {
    int n;
    char msgs[16][512];
} collected;

static void collect(void *ctx, const char *msg) {
    collected *c = ctx;
    if (c->n < 16) snprintf(c->msgs[c->n], sizeof c->msgs[0], "%s", msg);
    c->n++;
}

/* Damages a fresh rich module with `damage`, expects exactly `want`. */
#define EXPECT_PROBLEM(damage, want)                                                    \
    do {                                                                                \
        rich_nodes x;                                                                   \
        ir_module *m = rich_module(&x);                                                 \
        (void)x;                                                                        \
        damage;                                                                         \
        collected c = {0};                                                              \
        int n = ir_verify(m, collect, &c);                                              \
        if (n != 1) {                                                                   \
            for (int k = 0; k < c.n && k < 16; k++) fprintf(stderr, "  %s\n", c.msgs[k]); \
        }                                                                               \
        CHECK(n == 1 && c.n == 1);                                                      \
        CHECK_STR(c.msgs[0], want);                                                     \
        ir_module_free(m);                                                              \
    } while (0)

#define N(i) ir_node_at(m, (i))

static void test_graph_problems(void) {
    char want[256];
    rich_nodes x;
    ir_module *m0 = rich_module(&x);
    int mm = x.matmul[0], lg = x.logits[0];
    CHECK(ir_verify(m0, NULL, NULL) == 0);
    ir_module_free(m0);

    snprintf(want, sizeof want, "node %d input 1 refers to node %d", mm, mm + 3);
    EXPECT_PROBLEM(N(mm)->in[1] = mm + 3, want);
    snprintf(want, sizeof want, "node %d (matmul): takes 2 inputs, has 1", mm);
    EXPECT_PROBLEM(N(mm)->n_in = 1, want);
    snprintf(want, sizeof want, "node %d (argmax_match): declared f32[5] but its rule gives f32[4]", x.match[0]);
    EXPECT_PROBLEM(N(x.match[0])->shape.dim[0] = 5, want);
    snprintf(want, sizeof want, "node %d (argmax_match): declared i32[4] but its rule gives f32[4]", x.match[1]);
    EXPECT_PROBLEM(N(x.match[1])->dtype = IR_I32, want);
    /* a wrong type propagates: the consumer's rule fails too (two messages) */
    rich_nodes y;
    ir_module *m1 = rich_module(&y);
    ir_node_at(m1, lg)->shape.dim[1] = 5;
    CHECK(ir_verify(m1, NULL, NULL) == 2);
    ir_module_free(m1);
    snprintf(want, sizeof want, "node %d (matmul): inner dimensions of 'matmul' differ: f32[4,4] x f32[4,3]", mm);
    EXPECT_PROBLEM(N(mm)->iattr[1] = 1, want);
    snprintf(want, sizeof want, "node %d (param): has no name", x.bias[1]);
    EXPECT_PROBLEM(N(x.bias[1])->name = NULL, want);
    snprintf(want, sizeof want, "node %d (param): device 2 out of range (2 devices)", x.bias[0]);
    EXPECT_PROBLEM(N(x.bias[0])->device = 2; N(x.bias[0])->offset = -1, want);
    snprintf(want, sizeof want, "node %d (param): stream 5 out of range", x.bias[0]);
    EXPECT_PROBLEM(N(x.bias[0])->stream = 5, want);
    snprintf(want, sizeof want, "node %d: dtype 9 out of range", x.image);
    EXPECT_PROBLEM(N(x.image)->dtype = 9, want);
    snprintf(want, sizeof want, "node %d: rank 7 out of range", x.image);
    EXPECT_PROBLEM(N(x.image)->shape.rank = 7, want);
    snprintf(want, sizeof want, "node %d (param): f32[-4,3] has a negative dimension or 2^40 elements or more",
             x.kernel[1]);
    EXPECT_PROBLEM(N(x.kernel[1])->shape.dim[0] = -4, want);
    snprintf(want, sizeof want, "node %d (shard): attribute 1 is out of range", x.shard_x[0]);
    EXPECT_PROBLEM(N(x.shard_x[0])->iattr[1] = INT64_C(1) << 50, want);
    snprintf(want, sizeof want, "node %d (matmul): origin 999 out of range", mm);
    EXPECT_PROBLEM(N(mm)->origin = 999, want);
}

static void test_interface_problems(void) {
    char want[256];
    rich_nodes x;
    ir_module *m0 = rich_module(&x);
    ir_module_free(m0);
    EXPECT_PROBLEM(m->loss = 500, "the loss refers to node 500 (of 40)");
    snprintf(want, sizeof want, "param 1 refers to node %d, a 'matmul' node, not 'param'", x.matmul[0]);
    EXPECT_PROBLEM(m->params[1] = x.matmul[0], want);
    EXPECT_PROBLEM(m->inputs[0] = -3, "input 0 refers to node -3 (of 40)");
    EXPECT_PROBLEM(m->metrics[0].name = NULL, "metric 0 has no name");
    EXPECT_PROBLEM(m->opt.kind = OPT_COUNT, "optimizer kind 7 out of range");
    EXPECT_PROBLEM(m->opt.clipnorm = 2, "clipnorm and global_clipnorm are both set");
    EXPECT_PROBLEM(m->opt.global_clipnorm = -1, "a clipping norm is negative");
    EXPECT_PROBLEM(m->batch_per_replica = 16, "batch per replica 16 exceeds the global batch 8");
    EXPECT_PROBLEM(m->devices[1].name = NULL, "device 1 is malformed");
    snprintf(want, sizeof want, "bucket 0 gradient 1 refers to node %d, a 'add' node, not 'param'", x.logits[0]);
    EXPECT_PROBLEM(m->buckets[0].grads[1] = x.logits[0], want);
    EXPECT_PROBLEM(m->sources[1].text = NULL, "source 1 has no path or text");
}

static void test_plan_problems(void) {
    char want[256];
    rich_nodes x;
    ir_module *m0 = rich_module(&x);
    int64_t arena0 = m0->arena_bytes[0];
    ir_module_free(m0);
    snprintf(want, sizeof want, "node %d (matmul): bytes [%lld, +48) outside the %lld-byte arena of device 0", x.matmul[0],
             (long long)arena0 - 8, (long long)arena0);
    EXPECT_PROBLEM(N(x.matmul[0])->offset = m->arena_bytes[0] - 8, want);
    snprintf(want, sizeof want, "node %d (input): has an offset but no arena on its device", x.image);
    EXPECT_PROBLEM(N(x.image)->offset = 0, want);
    snprintf(want, sizeof want, "node %d (view): at offset 64, not on its input's bytes (0)", x.view_k[0]);
    EXPECT_PROBLEM((N(x.all_reduce[0])->offset = 0, N(x.view_k[0])->offset = 64, N(x.view_b[0])->offset = 48), want);
    /* a bucket far outside the arena: one problem, and no overflow in placing its views (found by fuzz_mgx) */
    snprintf(want, sizeof want, "node %d (all_reduce): bytes [%lld, +60) outside the %lld-byte arena of device 0",
             x.all_reduce[0], (long long)(INT64_MAX - 8), (long long)arena0);
    EXPECT_PROBLEM(N(x.all_reduce[0])->offset = INT64_MAX - 8, want);
    EXPECT_PROBLEM(m->sched[0].items[0].arg = 77, "schedule list 0 item 0: kernel of node 77 (of 40)");
    snprintf(want, sizeof want, "schedule list 0 item 0: node %d (view) has no kernel", x.view_k[0]);
    EXPECT_PROBLEM(m->sched[0].items[0].arg = x.view_k[0], want);
    EXPECT_PROBLEM(m->sched[4].device = 5, "schedule list 4: program 1, device 5, stream 0 out of range");
    snprintf(want, sizeof want, "schedule list 4 item 0: node %d runs on device 1 stream 0, not this list's", x.shard_x[1]);
    EXPECT_PROBLEM(m->sched[4].items[0].arg = x.shard_x[1], want);
}

/* The events of the rich module's train program on device 0. */
static void test_event_problems(void) {
    rich_nodes x;
    ir_module *m0 = rich_module(&x);
    CHECK(m0->n_events == 6); /* per device: gk, gb -> comm; all_reduce -> compute */
    const ir_sched_list *comm = &m0->sched[1];
    CHECK(comm->program == 0 && comm->device == 0 && comm->stream == STREAM_COMM);
    CHECK(comm->n == 4 && comm->items[0].kind == SCHED_WAIT && comm->items[2].kind == SCHED_KERNEL);
    ir_module_free(m0);
    EXPECT_PROBLEM(m->sched[1].items[0].arg = 6, "schedule list 1 item 0: event 6 (of 6)");
    EXPECT_PROBLEM(m->sched[1].items[3].kind = SCHED_WAIT, "schedule: event 4 is waited on but never recorded");
    EXPECT_PROBLEM(m->sched[1].items[0].kind = SCHED_RECORD, "schedule list 1 item 0: event 0 recorded twice");
    EXPECT_PROBLEM(m->sched[1].items[0].kind = 9, "schedule list 1 item 0: kind 9 out of range");
    EXPECT_PROBLEM(m->n_events = 100, "schedule: 100 events but only 58 items");
}

static void test_pass_shapes(void) {
    ir_module *m = ir_module_new();
    ir_loc l = {ir_intern(m, "t.mg"), 3, 7};
    int a = ir_add(m, OP_INPUT, NULL, 0, l);
    N(a)->dtype = IR_F32, N(a)->shape = ir_shape_make(2, (int64_t[]){2, 3}), N(a)->name = "a";
    int b = ir_add(m, OP_PARAM, NULL, 0, l);
    N(b)->dtype = IR_F32, N(b)->shape = ir_shape_make(2, (int64_t[]){4, 5}), N(b)->name = "b";
    int r = ir_add(m, OP_RELU, &a, 1, l);
    int mm = ir_add(m, OP_MATMUL, (int[]){r, b}, 2, (ir_loc){l.file, 4, 9});
    ir_add(m, OP_RELU, &mm, 1, l); /* depends on the failed node: not reported */
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    ir_diag *d = ir_diag_new(f);
    pass_options o;
    pass_options_default(&o);
    CHECK(!pass_shapes(m, d, &o));
    CHECK(ir_diag_errors(d) == 1);
    fclose(f);
    CHECK_STR(out, "t.mg:4:9: error: inner dimensions of 'matmul' differ: f32[2,3] x f32[4,5]\n");
    CHECK(N(r)->shape.rank == 2 && N(r)->shape.dim[1] == 3 && N(r)->dtype == IR_F32);
    free(out);
    ir_diag_free(d);
    ir_module_free(m);
}

int main(void) {
    test_graph_problems();
    test_interface_problems();
    test_plan_problems();
    test_event_problems();
    test_pass_shapes();
    printf("verify: every problem class reported once\n");
    return 0;
}
