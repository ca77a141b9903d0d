/* elab_main.c - test driver: elaborates a model file and prints its errors
 * (stderr, exit 1) or a summary of the module (stdout).
 *   elab FILE STDLIB_DIR [N_DEVICES [GLOBAL_BATCH]] */
#include <stdio.h>
#include <stdlib.h>

#include "../../passes/passes.h"

static const char *type_of(const ir_node *n) {
    static char buf[128];
    return ir_type_str(n->dtype, &n->shape, buf, sizeof buf);
}

static void summary(const ir_module *m) {
    const ir_node *g = m->g.nodes;
    printf("model %s (%s)\n", m->model_name, m->source_file);
    for (int i = 0; i < m->n_inputs; i++) printf("input %s %s\n", g[m->inputs[i]].name, type_of(&g[m->inputs[i]]));
    long long total = 0;
    for (int i = 0; i < m->n_params; i++) {
        const ir_node *p = &g[m->params[i]];
        long long n = (long long)ir_shape_numel(&p->shape);
        total += n;
        printf("param %s %s %lld init=%s fan_in=%lld fan_out=%lld\n", p->name, type_of(p), n,
               ir_init_names[p->iattr[0]], (long long)p->iattr[1], (long long)p->iattr[2]);
    }
    printf("trainable parameters %lld\n", total);
    if (m->loss >= 0) printf("loss %s %s\n", ir_ops[g[m->loss].op].name, type_of(&g[m->loss]));
    for (int i = 0; i < m->n_metrics; i++)
        printf("metric %s %s %s\n", m->metrics[i].name, ir_ops[g[m->metrics[i].node].op].name, type_of(&g[m->metrics[i].node]));
    for (int k = 0; k < m->n_outputs; k++) {
        const ir_node *o = &g[m->outputs[k].node];
        printf("output %s%s%s %s\n", m->n_outputs > 1 ? m->outputs[k].name : "", m->n_outputs > 1 ? " " : "", ir_ops[o->op].name, type_of(o));
    }
    const ir_optimizer *o = &m->opt;
    printf("train %s optimizer %s lr=%g beta1=%g beta2=%g epsilon=%g weight_decay=%g momentum=%g rho=%g nesterov=%d\n",
           m->has_train ? "yes" : "no", ir_optimizer_names[o->kind], o->lr, o->beta1, o->beta2, o->epsilon,
           o->weight_decay, o->momentum, o->rho, o->nesterov);
    if (o->kind == OPT_ADAGRAD) printf("initial_accumulator_value=%g\n", o->initial_accumulator_value);
    if (o->clipnorm > 0 || o->global_clipnorm > 0) printf("clipnorm=%g global_clipnorm=%g\n", o->clipnorm, o->global_clipnorm);
    printf("batch %lld per replica, %lld global\n", (long long)m->batch_per_replica, (long long)m->global_batch);
    printf("nodes %d sources", m->g.n);
    for (int i = 0; i < m->n_sources; i++) printf(" %s", m->sources[i].path);
    printf("\n");
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: elab FILE STDLIB_DIR [N_DEVICES [GLOBAL_BATCH]]\n");
        return 2;
    }
    pass_options o = {.n_devices = argc > 3 ? atoi(argv[3]) : 1, .global_batch = argc > 4 ? atoll(argv[4]) : 0};
    ir_diag *d = ir_diag_new(stderr);
    ir_module *m = pass_elaborate(argv[1], argv[2], d, &o);
    int status = 1;
    if (m) {
        summary(m);
        char err[256];
        status = 0;
        for (int i = 0; i < m->g.n; i++)
            if (!ir_infer_node(m, i, err, sizeof err)) printf("node %d re-infers with an error: %s\n", i, err), status = 1;
    }
    ir_module_free(m);
    ir_diag_free(d);
    return status;
}
