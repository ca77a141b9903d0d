/* data.c - libmgc datasets opened from files (IDX directories, text, --input
 * bindings), fit/evaluate/predict over them, outputs the library allocates,
 * and a session's trace and profile. */
#define _GNU_SOURCE /* open_memstream */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_impl.h"

_Static_assert(MGC_TEXT_MAX_CONTEXT == RT_TEXT_MAX_CONTEXT && MGC_MAX_INPUTS == IR_MAX_INPUTS,
               "mgc.h's limits are the runtime's");

/* The classes of the logits that model input node `input` labels
 * (sparse_xent or argmax_match, directly or through a shard), 0 if none. */
static int64_t label_classes(const ir_module *m, int input) {
    for (int i = 0; i < m->g.n; i++) {
        const ir_node *n = &m->g.nodes[i];
        if (n->op != OP_SPARSE_XENT && n->op != OP_ARGMAX_MATCH) continue;
        const ir_node *lab = &m->g.nodes[n->in[1]], *logits = &m->g.nodes[n->in[0]];
        if (n->in[1] == input || (lab->op == OP_SHARD && lab->in[0] == input))
            return logits->shape.dim[logits->shape.rank - 1];
    }
    return 0;
}

int mgc_plan_input_predicts(const mgc_plan *p, int k) {
    const ir_module *m = p->m;
    rt_input_spec specs[m->n_inputs + 1];
    int which[m->n_inputs + 1], n = rt_input_specs(m, PROG_PREDICT, specs, which);
    for (int i = 0; i < n; i++)
        if (which[i] == k) return 1;
    return 0;
}

/* text:PATH: the labels are the input that the loss reads as labels, else
 * the second; T is the context asked for, else the tokens input's. */
static rt_dataset *open_text(const ir_module *m, const mgc_data_options *o, const char *split, const rt_input_spec *specs,
                             const int *which, int n, char *msg, size_t cap) {
    int labels = n == 2 ? 1 : -1;
    if (n == 2 && label_classes(m, m->inputs[which[0]]) > 0 && !label_classes(m, m->inputs[which[1]])) labels = 0;
    const rt_input_spec *tokens = &specs[labels == 0 ? 1 : 0];
    int64_t T = o->context ? o->context : n >= 1 && tokens->shape.rank == 1 ? tokens->shape.dim[0] : 1;
    return rt_dataset_from_text(o->dir[5] ? o->dir + 5 : MGC_DEFAULT_TEXT_DIR, split, T, specs, n, labels, msg, cap);
}

mgc_status mgc_dataset_open(const mgc_plan *p, mgc_data_use use, const mgc_data_options *o, mgc_dataset **out,
                            mgc_error *err) {
    if (!p || !o || !out) return lib_fail(err, MGC_ERR_ARG, "mgc_dataset_open: plan, options and out must not be NULL");
    *out = NULL;
    if ((unsigned)use > MGC_DATA_PREDICT) return lib_fail(err, MGC_ERR_ARG, "mgc_dataset_open: use %d is not a mgc_data_use", (int)use);
    const ir_module *m = p->m;
    bool text = o->dir && !strncmp(o->dir, "text:", 5);
    if (o->context < 0 || o->context > MGC_TEXT_MAX_CONTEXT)
        return lib_fail(err, MGC_ERR_ARG, "mgc_dataset_open: context %lld is not from 0 to %d", (long long)o->context,
                        MGC_TEXT_MAX_CONTEXT);
    if (o->n_bindings < 0 || (o->n_bindings && !o->bindings) || (text && o->n_bindings))
        return lib_fail(err, MGC_ERR_ARG, "mgc_dataset_open: give text data or bindings, not both");
    const char *split = use == MGC_DATA_TRAIN ? "train" : "test";
    int64_t need = use == MGC_DATA_TRAIN ? m->global_batch : 1;
    rt_input_spec specs[m->n_inputs + 1];
    int which[m->n_inputs + 1];
    int n = rt_input_specs(m, use == MGC_DATA_PREDICT ? PROG_PREDICT : 0, specs, which);
    char msg[1024];
    rt_dataset *ds = o->n_bindings ? rt_dataset_from_bindings(o->bindings, o->n_bindings, specs, n, msg, sizeof msg)
                     : text ? open_text(m, o, split, specs, which, n, msg, sizeof msg)
                            : rt_dataset_from_dir(o->dir ? o->dir : MGC_DEFAULT_DATA_DIR, split, specs, n, msg, sizeof msg);
    for (int k = 0; ds && k < n; k++) {
        int64_t classes = label_classes(m, m->inputs[which[k]]);
        if (classes > 0 && rt_dataset_check_range(ds, k, classes, "label", msg, sizeof msg)) rt_dataset_free(ds), ds = NULL;
    }
    if (ds && n > 0 && rt_dataset_count(ds) < need) {
        if (need > 1)
            snprintf(msg, sizeof msg, "%s: %lld examples%s, fewer than one global batch of %lld", rt_dataset_source(ds, 0),
                     (long long)rt_dataset_count(ds), text ? " of text in its training part" : "", (long long)need);
        else snprintf(msg, sizeof msg, "%s: holds no examples", rt_dataset_source(ds, 0));
        rt_dataset_free(ds), ds = NULL;
    }
    if (!ds) return lib_fail(err, MGC_ERR_IO, "%s", msg);
    if (!(*out = calloc(1, sizeof **out))) {
        rt_dataset_free(ds);
        return lib_fail(err, MGC_ERR_RUNTIME, "out of memory");
    }
    (*out)->ds = ds;
    return lib_ok(err);
}

void mgc_dataset_free(mgc_dataset *d) {
    if (!d) return;
    rt_dataset_free(d->ds);
    free(d);
}

int64_t mgc_dataset_count(const mgc_dataset *d) { return rt_dataset_count(d->ds); }

mgc_status mgc_fit_dataset(mgc_session *s, const mgc_dataset *train, const mgc_fit_options *o, mgc_error *err) {
    if (!s || !train) return lib_fail(err, MGC_ERR_ARG, "mgc_fit_dataset: session and train must not be NULL");
    if (o && o->validation) return lib_fail(err, MGC_ERR_ARG, "mgc_fit_dataset: validation feeds are mgc_fit's; give validation_data");
    return lib_fit(s, train->ds, o && o->validation_data ? o->validation_data->ds : NULL, o, err);
}

mgc_status mgc_evaluate_dataset(mgc_session *s, const mgc_dataset *d, mgc_scores *out, mgc_error *err) {
    if (!s || !d) return lib_fail(err, MGC_ERR_ARG, "mgc_evaluate_dataset: session and dataset must not be NULL");
    const ir_module *m = s->plan->m;
    rt_scores v;
    char msg[1024];
    if (rt_evaluate(s->s, d->ds, &v, msg, sizeof msg)) return lib_fail(err, MGC_ERR_RUNTIME, "%s", msg);
    if (out) {
        *out = (mgc_scores){.loss = v.loss, .examples = v.examples};
        for (int k = 0; k < m->n_metrics && k < 16; k++) out->metrics[k] = v.metric[k];
    }
    return lib_ok(err);
}

mgc_status mgc_predict_dataset(mgc_session *s, const mgc_dataset *d, mgc_output **outputs, mgc_error *err) {
    if (!s || !d || !outputs) return lib_fail(err, MGC_ERR_ARG, "mgc_predict_dataset: session, dataset and outputs must not be NULL");
    const ir_module *m = s->plan->m;
    *outputs = NULL;
    if (m->n_outputs < 1) return lib_fail(err, MGC_ERR_ARG, "model '%s' has no output to predict", m->model_name);
    rt_tensor *t = calloc((size_t)m->n_outputs, sizeof *t);
    mgc_output *o = calloc((size_t)m->n_outputs, sizeof *o);
    char msg[1024];
    mgc_status st = !t || !o ? lib_fail(err, MGC_ERR_RUNTIME, "out of memory") : MGC_OK;
    if (!st && rt_predict(s->s, d->ds, t, msg, sizeof msg)) st = lib_fail(err, MGC_ERR_RUNTIME, "%s", msg);
    for (int j = 0; !st && j < m->n_outputs; j++) { /* the tensors' buffers move to the outputs */
        o[j] = (mgc_output){.name = m->outputs[j].name, .dtype = (mgc_dtype)t[j].dtype, .rank = t[j].shape.rank,
                            .data = t[j].data, .bytes = (size_t)rt_tensor_bytes(&t[j])};
        for (int k = 0; k < t[j].shape.rank; k++) o[j].shape[k] = t[j].shape.dim[k];
        t[j].data = NULL;
    }
    for (int j = 0; t && j < m->n_outputs; j++) rt_tensor_free(&t[j]);
    free(t);
    if (st) {
        free(o);
        return st;
    }
    *outputs = o;
    return lib_ok(err);
}

void mgc_outputs_free(mgc_output *outputs, int n) {
    for (int j = 0; outputs && j < n; j++) {
        rt_tensor t = {.data = outputs[j].data};
        rt_tensor_free(&t);
    }
    free(outputs);
}

mgc_status mgc_output_save_npy(const mgc_output *o, const char *path, mgc_error *err) {
    if (!o || !path) return lib_fail(err, MGC_ERR_ARG, "mgc_output_save_npy: output and path must not be NULL");
    if (o->rank < 0 || o->rank > IR_MAX_RANK) return lib_fail(err, MGC_ERR_ARG, "mgc_output_save_npy: rank %d", o->rank);
    rt_tensor t = {.dtype = (ir_dtype)o->dtype, .shape = {.rank = o->rank}, .data = o->data};
    for (int k = 0; k < o->rank; k++) t.shape.dim[k] = o->shape[k];
    char msg[1024];
    if (rt_save_npy(path, &t, msg, sizeof msg)) return lib_fail(err, MGC_ERR_IO, "%s", msg);
    return lib_ok(err);
}

/* ---- trace and profile ---- */

mgc_status mgc_session_trace(mgc_session *s, const mgc_trace_options *o, mgc_error *err) {
    if (!s || !o) return lib_fail(err, MGC_ERR_ARG, "mgc_session_trace: session and options must not be NULL");
    if (s->trace) return lib_fail(err, MGC_ERR_ARG, "mgc_session_trace: the session is traced already");
    int64_t at = rt_session_step(s->s); /* steps count from now (a resumed run) */
    rt_trace *t = rt_trace_new(s->plan->m, rt_session_first_replica(s->s), rt_session_local_replicas(s->s), at + o->from,
                               at + o->to, o->profile ? at + 2 : 0);
    if (!t) return lib_fail(err, MGC_ERR_RUNTIME, "out of memory");
    if (rt_session_set_trace(s->s, t)) {
        mgc_status st = lib_fail(err, MGC_ERR_RUNTIME, "%s", rt_session_error(s->s));
        rt_trace_free(t);
        return st;
    }
    s->trace = t;
    return lib_ok(err);
}

mgc_status mgc_session_trace_end(mgc_session *s, const char *path, char **profile, int64_t *kept, mgc_error *err) {
    if (profile) *profile = NULL;
    if (!s || !s->trace) return lib_fail(err, MGC_ERR_ARG, "mgc_session_trace_end: the session is not traced");
    rt_trace *t = s->trace;
    rt_session_set_trace(s->s, NULL);
    s->trace = NULL;
    if (kept) *kept = rt_trace_kept_steps(t);
    mgc_status st = MGC_OK;
    if (profile) {
        size_t len;
        FILE *f = open_memstream(profile, &len);
        if (f) rt_trace_profile(t, 15, f), fclose(f);
        else st = lib_fail(err, MGC_ERR_RUNTIME, "out of memory");
    }
    const mgc_job *j = s->job;
    char msg[640];
    if (!st && path && rt_trace_write(t, path, mgc_job_rank(j), mgc_job_size(j), msg, sizeof msg))
        st = lib_fail(err, MGC_ERR_IO, "%s", msg);
    rt_trace_free(t);
    return st ? st : lib_ok(err);
}
