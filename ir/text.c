/* text.c - the stable text form of a module: a header with the model
 * interface and plan, then one op per line, then the schedule. */
#include <stdio.h>
#include <string.h>

#include "ir.h"

static const char *const sched_names[] = {"kernel", "record", "wait"};

static void print_device(const ir_module *m, int d, FILE *out) {
    if (d < 0) fputs("host", out);
    else if (d < m->n_devices && m->devices[d].name) fprintf(out, "%s:%d", m->devices[d].name, m->devices[d].index);
    else fprintf(out, "dev%d", d);
}

static void print_type(const ir_node *n, FILE *out) {
    char buf[160];
    fputs(ir_type_str(n->dtype, &n->shape, buf, sizeof buf), out);
}

/* Prints `name=value` for each name in a comma-separated list. */
static void print_attrs(const ir_node *n, FILE *out) {
    const ir_opinfo *info = &ir_ops[n->op];
    const char *p = info->iattrs;
    for (int k = 0; *p && k < IR_MAX_IATTR; k++) {
        int len = (int)strcspn(p, ",");
        bool init = (n->op == OP_PARAM || n->op == OP_VAR || n->op == OP_STATE) && k == 0 && n->iattr[0] >= 0 && n->iattr[0] < INIT_COUNT;
        if (init) fprintf(out, " %.*s=%s", len, p, ir_init_names[n->iattr[0]]);
        else fprintf(out, " %.*s=%lld", len, p, (long long)n->iattr[k]);
        p += len + (p[len] == ',');
    }
    p = info->fattrs;
    bool variable = ir_ops[n->op].flags & OPF_VARIABLE;
    int init_f = variable && n->iattr[0] >= 0 && n->iattr[0] < INIT_COUNT ? ir_init_fattr((ir_init)n->iattr[0]) : -1;
    for (int k = 0; *p && k < IR_MAX_FATTR; k++) {
        int len = (int)strcspn(p, ",");
        if (!variable || k == init_f) fprintf(out, " %.*s=%g", len, p, n->fattr[k]); /* a variable: its init's only */
        p += len + (p[len] == ',');
    }
}

static void print_programs(unsigned programs, FILE *out) {
    if (!programs) return;
    const char *sep = " {";
    for (int p = 0; p < IR_PROGRAM_COUNT; p++)
        if (programs & 1u << p) fprintf(out, "%s%s", sep, ir_program_names[p]), sep = ",";
    fputc('}', out);
}

/* A fused node's program (issue 14): " [r2 = add(r0, r1); r3 = relu(r2)]". */
void ir_print_program(const ir_node *n, FILE *out) {
    const ir_fused *f = n->fused;
    fputs(" [", out);
    for (int j = 0; j < f->n; j++) {
        const ir_finstr *in = &f->ins[j];
        fprintf(out, "%sr%d = %s(r%d", j ? "; " : "", n->n_in + j, (unsigned)in->op < OP_COUNT ? ir_ops[in->op].name : "?",
                in->a);
        if (in->b >= 0) fprintf(out, ", r%d", in->b);
        if (in->alpha != 0) fprintf(out, ", alpha=%g", in->alpha);
        fputc(')', out);
    }
    fputc(']', out);
}

static void print_node(const ir_module *m, int i, FILE *out) {
    const ir_node *n = &m->g.nodes[i];
    fprintf(out, "%%%d = %s(", i, (unsigned)n->op < OP_COUNT ? ir_ops[n->op].name : "?");
    for (int k = 0; k < n->n_in; k++) fprintf(out, k ? ", %%%d" : "%%%d", n->in[k]);
    fputc(')', out);
    if ((unsigned)n->op < OP_COUNT) print_attrs(n, out);
    if (n->op == OP_FUSED && n->fused) ir_print_program(n, out);
    fputs(" : ", out);
    print_type(n, out);
    if (m->n_devices > 0 || n->device != 0) {
        fputs(" @", out);
        print_device(m, n->device, out);
    }
    if (n->stream == STREAM_COMM) fputs("/comm", out);
    else if (n->stream != STREAM_COMPUTE) fprintf(out, "/stream%d", n->stream);
    print_programs(n->programs, out);
    if (n->offset != -1) fprintf(out, " +%lld", (long long)n->offset);
    if (n->origin != i) fprintf(out, " origin=%d", n->origin);
    if (n->name) fprintf(out, " \"%s\"", n->name);
    if (n->loc.file || n->loc.line) fprintf(out, " # %s:%d:%d", n->loc.file ? n->loc.file : "?", n->loc.line, n->loc.col);
    fputc('\n', out);
}

/* " %3 "dense/kernel" f32[784,10]" for a node index of the interface. */
static void print_ref(const ir_module *m, int i, FILE *out) {
    fprintf(out, " %%%d", i);
    if (i < 0 || i >= m->g.n) return;
    if (m->g.nodes[i].name) fprintf(out, " \"%s\"", m->g.nodes[i].name);
    fputc(' ', out);
    print_type(&m->g.nodes[i], out);
}

static void print_interface(const ir_module *m, FILE *out) {
    fprintf(out, "# module %s", m->model_name ? m->model_name : "?");
    if (m->source_file) fprintf(out, " from %s", m->source_file);
    fputc('\n', out);
    for (int k = 0; k < m->n_inputs; k++) {
        fputs("# input", out);
        print_ref(m, m->inputs[k], out);
        fputc('\n', out);
    }
    for (int k = 0; k < m->n_params; k++) {
        fputs("# param", out);
        print_ref(m, m->params[k], out);
        if (m->grads && m->grads[k] >= 0) fprintf(out, " grad %%%d", m->grads[k]);
        fputc('\n', out);
    }
    if (m->loss >= 0) fprintf(out, "# loss %%%d\n", m->loss);
    for (int k = 0; k < m->n_metrics; k++) fprintf(out, "# metric %s %%%d\n", m->metrics[k].name, m->metrics[k].node);
    for (int k = 0; k < m->n_outputs; k++) fprintf(out, "# output %s %%%d\n", m->outputs[k].name, m->outputs[k].node);
}

static void print_train(const ir_module *m, FILE *out) {
    if (!m->has_train) return;
    const ir_optimizer *o = &m->opt;
    fprintf(out, "# train %s lr=%g beta1=%g beta2=%g epsilon=%g weight_decay=%g momentum=%g rho=%g nesterov=%d",
            (unsigned)o->kind < OPT_COUNT ? ir_optimizer_names[o->kind] : "?", o->lr, o->beta1, o->beta2,
            o->epsilon, o->weight_decay, o->momentum, o->rho, o->nesterov);
    if (o->kind == OPT_ADAGRAD) fprintf(out, " initial_accumulator_value=%g", o->initial_accumulator_value);
    if (o->clipnorm > 0) fprintf(out, " clipnorm=%g", o->clipnorm);
    if (o->global_clipnorm > 0) fprintf(out, " global_clipnorm=%g", o->global_clipnorm);
    fprintf(out, " batch_per_replica=%lld global_batch=%lld\n", (long long)m->batch_per_replica,
            (long long)m->global_batch);
}

static void print_replication(const ir_module *m, FILE *out) {
    if (m->n_devices == 0) return;
    fputs("# devices", out);
    for (int d = 0; d < m->n_devices; d++) fputc(' ', out), print_device(m, d, out);
    fprintf(out, " cross_device=%s bucket_bytes=%lld sparse_grads=%s\n",
            (unsigned)m->cross_device < XDEV_COUNT ? ir_cross_device_names[m->cross_device] : "?",
            (long long)m->bucket_bytes, (unsigned)m->sparse_grads < SPARSE_COUNT ? ir_sparse_grads_names[m->sparse_grads] : "?");
    for (int b = 0; b < m->n_buckets; b++) {
        fprintf(out, "# bucket %d bytes=%lld grads", b, (long long)m->buckets[b].bytes);
        for (int j = 0; j < m->buckets[b].n_grads; j++) fprintf(out, " %%%d", m->buckets[b].grads[j]);
        fputc('\n', out);
    }
    ir_sparse_info si;
    for (int k = 0; ir_sparse_exchange(m, k, &si); k++)
        fprintf(out, "# sparse %s ids=%%%d rows=%%%d sparse_bytes=%lld dense_bytes=%lld\n", si.param, si.ids, si.rows,
                (long long)si.sparse_bytes, (long long)si.dense_bytes);
    for (int d = 0; m->arena_bytes && d < m->n_devices; d++) {
        fputs("# memory ", out);
        print_device(m, d, out);
        fprintf(out, " arena=%lld unplanned=%lld\n", (long long)m->arena_bytes[d],
                m->unplanned_bytes ? (long long)m->unplanned_bytes[d] : -1LL);
    }
}

static void print_schedule(const ir_module *m, FILE *out) {
    if (m->n_sched == 0) return;
    fprintf(out, "# schedule: %d lists, %d events\n", m->n_sched, m->n_events);
    for (int s = 0; s < m->n_sched; s++) {
        const ir_sched_list *l = &m->sched[s];
        if (l->n == 0) continue;
        fprintf(out, "# %s ", l->program >= 0 && l->program < IR_PROGRAM_COUNT ? ir_program_names[l->program] : "?");
        print_device(m, l->device, out);
        fputs(l->stream == STREAM_COMM ? "/comm:" : ":", out);
        for (int k = 0; k < l->n; k++) {
            const ir_sched_item *it = &l->items[k];
            if (it->kind == SCHED_KERNEL) fprintf(out, " %%%d", it->arg);
            else fprintf(out, " %s(%d)", (unsigned)it->kind <= SCHED_WAIT ? sched_names[it->kind] : "?", it->arg);
        }
        fputc('\n', out);
    }
}

void ir_print(const ir_module *m, FILE *out) {
    print_interface(m, out);
    print_train(m, out);
    print_replication(m, out);
    for (int k = 0; k < m->n_sources; k++)
        fprintf(out, "# source %s (%zu bytes)\n", m->sources[k].path, strlen(m->sources[k].text));
    for (int i = 0; i < m->g.n; i++) print_node(m, i, out);
    print_schedule(m, out);
}
