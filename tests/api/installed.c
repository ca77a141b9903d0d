/* installed.c - a program built against an installed libmgc with pkg-config
 * alone (tests/api/install.sh): compiles a model that uses the installed
 * stdlib, trains one step, reads a variable. */
#include <stdio.h>

#include <mgc.h>

static const char model[] =
    "use nn\n"
    "model m {\n"
    "  input x: f32[batch, 3]\n"
    "  input label: i32[batch]\n"
    "  logits = dense(x, 2)\n"
    "  loss = sparse_softmax_cross_entropy(logits, label)\n"
    "}\n"
    "train m {\n"
    "  optimizer = sgd(learning_rate: 0.1)\n"
    "  batch = 4 per replica\n"
    "}\n";

int main(void) {
    mgc_error err;
    mgc_plan *p;
    mgc_session *s;
    if (mgc_compile_source(model, "m.mg", NULL, &p, &err) || mgc_session_new(p, NULL, &s, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    float x[4][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 1}}, kernel[3][2];
    int label[4] = {0, 1, 0, 1};
    const int64_t xs[] = {4, 3}, ys[] = {4};
    mgc_feed feeds[] = {{"x", MGC_F32, 2, xs, x}, {"label", MGC_I32, 1, ys, label}};
    mgc_scores v;
    if (mgc_train_step(s, feeds, 2, &v, &err) || mgc_variable_read(s, "dense/kernel", kernel, sizeof kernel, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    printf("step %lld loss %.4f\n", (long long)mgc_session_step(s), v.loss);
    mgc_session_free(s);
    mgc_plan_free(p);
    return v.loss > 0 ? 0 : 1;
}
