/* test_text.c - the text form (stable, exact lines) and Graphviz output
 * (plain and replicated) accepted by `dot -Tsvg`. */
#include <string.h>

#include "fixture.h"

static char *dot_to_string(const ir_module *m, bool replicated) {
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    ir_print_dot(m, f, replicated);
    fclose(f);
    return s;
}

static void expect_line(const char *text, const char *line) {
    const char *p = strstr(text, line);
    if (!p || (p != text && p[-1] != '\n') || (p[strlen(line)] != '\n')) {
        fprintf(stderr, "missing line:\n  %s\nin:\n%s", line, text);
        exit(1);
    }
}

static void test_text(void) {
    rich_nodes x;
    ir_module *m = rich_module(&x);
    char *t = print_to_string(m), *again = print_to_string(m);
    CHECK_STR(again, t);
    expect_line(t, "# module tiny from tiny.mg");
    expect_line(t, "# input %0 \"image\" f32[8,4]");
    expect_line(t, "# param %4 \"dense/kernel\" f32[4,3] grad %27");
    expect_line(t, "# metric accuracy %9");
    expect_line(t, "# train adamw lr=0.002 beta1=0.85 beta2=0.99 epsilon=1e-07 weight_decay=0.01 momentum=0.5 rho=0.8 "
                   "nesterov=1 global_clipnorm=1.5 batch_per_replica=4 global_batch=8");
    expect_line(t, "# devices cpu:0 cpu:3 cross_device=hierarchical bucket_bytes=1024 sparse_grads=auto");
    expect_line(t, "# bucket 0 bytes=60 grads %4 %5");
    expect_line(t, "# source stdlib/nn.mg (28 bytes)");
    expect_line(t, "%0 = input() : f32[8,4] @host {train,eval,predict} \"image\" # tiny.mg:2:5");
    expect_line(t, "%4 = param() init=glorot_uniform fan_in=4 fan_out=3 : f32[4,3] @cpu:0 {train,eval,predict,init} +128 \"dense/kernel\" # tiny.mg:5:5");
    expect_line(t, "%6 = matmul(%2, %4) trans_a=0 trans_b=0 : f32[4,3] @cpu:0 {train,eval,predict} +256 # tiny.mg:7:5");
    expect_line(t, "%26 = all_reduce(%12, %13) bucket=0 mean=1 : f32[15] @cpu:0/comm {train} +768 origin=-1 # tiny.mg:7:5");
    expect_line(t, "%29 = sgd_update(%4, %27) nesterov=1 lr=0.01 momentum=-0.5 weight_decay=0 clipnorm=0 : f32[4,3] @cpu:0 {train} +128 # tiny.mg:12:5");
    expect_line(t, "# train cpu:0/comm: wait(0) wait(1) %26 record(4)");
    free(t), free(again);
    ir_module_free(m);
}

/* Pipes the DOT text through `dot -Tsvg` and checks it is accepted. */
static void expect_dot_accepts(const char *text) {
    FILE *p = popen("dot -Tsvg > /dev/null", "w");
    CHECK(p);
    fputs(text, p);
    CHECK(pclose(p) == 0);
}

static void test_dot(void) {
    ir_module *m = rich_module(NULL);
    char *plain = dot_to_string(m, false), *rep = dot_to_string(m, true);
    expect_dot_accepts(plain);
    expect_dot_accepts(rep);
    CHECK(!strstr(plain, "cluster"));
    CHECK(strstr(plain, "n6 -> n7;") && strstr(plain, "n4 -> n6;"));
    const char *want[] = {"subgraph cluster_host", "subgraph cluster_dev0", "label=\"replica 1: cpu:3\"",
                          "fillcolor=lightskyblue", "fillcolor=orange", "fillcolor=palegreen",
                          "all_reduce (bucket 0)", "style=\"filled,dashed\"", "cluster_legend"};
    for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
        if (!strstr(rep, want[k])) fprintf(stderr, "missing %s\n", want[k]);
        CHECK(strstr(rep, want[k]));
    }
    free(plain), free(rep);
    ir_module_free(m);
    ir_module *s = small_module(); /* unreplicated module drawn replicated: still valid */
    rep = dot_to_string(s, true);
    expect_dot_accepts(rep);
    free(rep);
    ir_module_free(s);
}

int main(void) {
    test_text();
    test_dot();
    printf("text and dot ok\n");
    return 0;
}
