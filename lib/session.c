/* session.c - libmgc sessions: bind a plan to devices, check the caller's
 * feeds against the plan, and run one train step, a fit (runtime/train.c's
 * loop, its progress routed to the callback), evaluation and prediction. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/data.h"
#include "../runtime/train.h"
#include "api_impl.h"

void mgc_session_options_init(mgc_session_options *o) {
    *o = (mgc_session_options){.seed = 1, .threads_per_device = 1, .collective_timeout = 60};
}

void mgc_fit_options_init(mgc_fit_options *o) { *o = (mgc_fit_options){.epochs = 1}; }

/* Replica 0's variables, sorted by name (the order of checkpoints). */
static void list_variables(mgc_session *s) {
    const ir_module *m = s->plan->m;
    s->vars = calloc((size_t)m->g.n + 1, sizeof *s->vars);
    for (int i = 0; i < m->g.n; i++) {
        if (!(ir_ops[m->g.nodes[i].op].flags & OPF_VARIABLE) || m->g.nodes[i].device != 0) continue;
        int at = s->n_vars++; /* insertion: a model has hundreds of variables at most */
        while (at > 0 && strcmp(m->g.nodes[s->vars[at - 1]].name, m->g.nodes[i].name) > 0) s->vars[at] = s->vars[at - 1], at--;
        s->vars[at] = i;
    }
}

mgc_status mgc_session_new(const mgc_plan *p, const mgc_session_options *o, mgc_session **out, mgc_error *err) {
    if (!p || !out) return lib_fail(err, MGC_ERR_ARG, "mgc_session_new: plan and out must not be NULL");
    *out = NULL;
    mgc_session_options d;
    if (!o) mgc_session_options_init(&d), o = &d;
    if (p->forward_only) return lib_fail(err, MGC_ERR_ARG, "mgc_session_new: a forward_only plan cannot run");
    if (o->threads_per_device < 0 || o->threads_per_device > 1024)
        return lib_fail(err, MGC_ERR_ARG, "threads_per_device %d is not from 0 to 1024", o->threads_per_device);
    if (!(o->collective_timeout > 0 && o->collective_timeout <= 86400))
        return lib_fail(err, MGC_ERR_ARG, "collective_timeout %g is not a number of seconds above 0 and at most 86400",
                        o->collective_timeout);
    if (o->check_replicas < 0) return lib_fail(err, MGC_ERR_ARG, "check_replicas %d is negative", o->check_replicas);
    char msg[1024];
    const mgc_job *j = o->job;
    const char *absent = getenv("MGC_FAULT_ABSENT_REPLICA"); /* tests: a replica that never arrives */
    rt_session_options so = {.threads_per_device = o->threads_per_device, .collective_timeout = o->collective_timeout,
                             .check_numerics = o->check_numerics != 0, .no_graphs = o->no_cuda_graphs != 0,
                             .ip = j ? j->ip : NULL, .first_replica = j && j->ip ? j->first : 0,
                             .local_replicas = j && j->ip ? j->local : 0, .absent_replica = absent ? atoi(absent) + 1 : 0};
    rt_session *rs = rt_session_new(p->m, &so, msg, sizeof msg);
    if (!rs) return lib_fail(err, MGC_ERR_RUNTIME, "%s", msg);
    if (!j && rt_session_init_variables(rs, o->seed)) {
        mgc_status st = lib_fail(err, MGC_ERR_RUNTIME, "%s", rt_session_error(rs));
        rt_session_free(rs);
        return st;
    }
    mgc_session *s = calloc(1, sizeof *s);
    *s = (mgc_session){.plan = p, .s = rs, .seed = o->seed, .check_replicas = o->check_replicas,
                       .check_numerics = o->check_numerics != 0, .job = j};
    list_variables(s);
    *out = s;
    return lib_ok(err);
}

void mgc_session_free(mgc_session *s) {
    if (!s) return;
    if (s->trace) rt_session_set_trace(s->s, NULL);
    rt_trace_free(s->trace);
    rt_session_free(s->s);
    free(s->vars);
    free(s);
}

int64_t mgc_session_step(const mgc_session *s) { return rt_session_step(s->s); }
uint64_t mgc_session_seed(const mgc_session *s) { return s->seed; }
void mgc_session_set_seed(mgc_session *s, uint64_t seed) { s->seed = seed; }

mgc_status mgc_session_init(mgc_session *s, mgc_error *err) {
    if (rt_session_init_variables(s->s, s->seed)) return lib_fail(err, MGC_ERR_RUNTIME, "%s", rt_session_error(s->s));
    return lib_ok(err);
}

/* ---- feeds ---- */

/* "f32[N,28,28,1]": a feed's type, or (dims NULL) the plan's with N. */
static void type_str(ir_dtype t, int rank, const int64_t *dims, const ir_shape *example, char *buf, size_t cap) {
    size_t at = (size_t)snprintf(buf, cap, "%s[", (unsigned)t < IR_DTYPE_COUNT ? ir_dtype_name(t) : "?");
    for (int d = 0; d < rank && at < cap; d++) {
        if (d) at += (size_t)snprintf(buf + at, cap - at, ",");
        if (at >= cap) break;
        if (!dims && d == 0) at += (size_t)snprintf(buf + at, cap - at, "N");
        else at += (size_t)snprintf(buf + at, cap - at, "%lld", (long long)(dims ? dims[d] : example->dim[d - 1]));
    }
    if (at < cap) snprintf(buf + at, cap - at, "]");
}

/* The feed for spec, checked: dtype and per-example shape equal, N as the others'. */
static mgc_status check_feed(const mgc_feed *f, const rt_input_spec *spec, int64_t *n, mgc_error *err) {
    bool same = (int)f->dtype == (int)spec->dtype && f->rank == spec->shape.rank + 1 && f->shape && f->data;
    for (int d = 1; same && d < f->rank; d++) same = f->shape[d] == spec->shape.dim[d - 1];
    if (same && f->shape[0] < 0) same = false;
    if (!same) {
        char got[160], want[160];
        if (f->rank < 1 || f->rank > MGC_MAX_RANK || !f->shape) snprintf(got, sizeof got, "rank %d", f->rank);
        else type_str((ir_dtype)f->dtype, f->rank, f->shape, NULL, got, sizeof got);
        type_str(spec->dtype, spec->shape.rank + 1, NULL, &spec->shape, want, sizeof want);
        if (!f->data) return lib_fail(err, MGC_ERR_ARG, "input '%s': no data", spec->name);
        return lib_fail(err, MGC_ERR_ARG, "input '%s' is %s, the plan wants %s", spec->name, got, want);
    }
    if (*n >= 0 && f->shape[0] != *n)
        return lib_fail(err, MGC_ERR_ARG, "input '%s' has %lld examples, the inputs before it %lld", spec->name,
                        (long long)f->shape[0], (long long)*n);
    *n = f->shape[0];
    return MGC_OK;
}

typedef struct {
    int n;                     /* inputs the program reads */
    rt_input_spec specs[IR_MAX_INPUTS + 1];
    int which[IR_MAX_INPUTS + 1];
    const mgc_feed *feed[IR_MAX_INPUTS + 1];
    int64_t examples;
} bound_feeds;

/* Matches feeds to the inputs `program` reads (0: all of them). A feed
 * naming no input of the model is an error; one for an input the program
 * does not read (labels at predict) is ignored. */
static mgc_status bind_feeds(const mgc_session *s, unsigned program, const mgc_feed *feeds, int n_feeds,
                             bound_feeds *b, mgc_error *err) {
    const ir_module *m = s->plan->m;
    if (n_feeds < 0 || (n_feeds && !feeds)) return lib_fail(err, MGC_ERR_ARG, "feeds: %d feeds at %p", n_feeds, (const void *)feeds);
    for (int k = 0; k < n_feeds; k++) {
        int found = -1;
        for (int i = 0; i < m->n_inputs && found < 0 && feeds[k].name; i++)
            if (!strcmp(m->g.nodes[m->inputs[i]].name, feeds[k].name)) found = i;
        if (found >= 0) continue;
        char names[512] = "";
        for (int i = 0; i < m->n_inputs; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", m->g.nodes[m->inputs[i]].name);
        return lib_fail(err, MGC_ERR_ARG, "model '%s' has no input named '%s' (its inputs: %s)", m->model_name,
                        feeds[k].name ? feeds[k].name : "(null)", names);
    }
    b->n = rt_input_specs(m, program, b->specs, b->which);
    b->examples = -1;
    for (int k = 0; k < b->n; k++) {
        b->feed[k] = NULL;
        for (int j = 0; j < n_feeds && !b->feed[k]; j++)
            if (!strcmp(feeds[j].name, b->specs[k].name)) b->feed[k] = &feeds[j];
        if (!b->feed[k]) return lib_fail(err, MGC_ERR_ARG, "input '%s' is not fed", b->specs[k].name);
        mgc_status st = check_feed(b->feed[k], &b->specs[k], &b->examples, err);
        if (st) return st;
    }
    if (b->examples < 0) b->examples = 0;
    return MGC_OK;
}

/* A dataset over the feeds (copied once: the loader gathers batches from it). */
static mgc_status feeds_dataset(const bound_feeds *b, rt_dataset **out, mgc_error *err) {
    rt_tensor t[IR_MAX_INPUTS + 1];
    const char *names[IR_MAX_INPUTS + 1];
    char msg[1024];
    for (int k = 0; k < b->n; k++) {
        const mgc_feed *f = b->feed[k];
        t[k] = (rt_tensor){.dtype = (ir_dtype)f->dtype, .shape = {.rank = f->rank}, .data = (void *)f->data};
        for (int d = 0; d < f->rank; d++) t[k].shape.dim[d] = f->shape[d];
        names[k] = f->name;
    }
    *out = rt_dataset_from_tensors(t, names, b->specs, b->n, msg, sizeof msg);
    return *out ? MGC_OK : lib_fail(err, MGC_ERR_ARG, "%s", msg);
}

/* Labels in range of the logits they label (as mgc run checks its data). */
static mgc_status check_labels(const mgc_session *s, const bound_feeds *b, const rt_dataset *ds, mgc_error *err) {
    const ir_module *m = s->plan->m;
    char msg[1024];
    for (int i = 0; i < m->g.n; i++) {
        const ir_node *n = &m->g.nodes[i];
        if ((n->op != OP_SPARSE_XENT && n->op != OP_ARGMAX_MATCH) || n->device != 0) continue;
        const ir_node *lab = &m->g.nodes[n->in[1]], *logits = &m->g.nodes[n->in[0]];
        int input = lab->op == OP_SHARD ? lab->in[0] : n->in[1];
        for (int k = 0; k < b->n; k++)
            if (m->inputs[b->which[k]] == input &&
                rt_dataset_check_range(ds, k, logits->shape.dim[logits->shape.rank - 1], "label", msg, sizeof msg))
                return lib_fail(err, MGC_ERR_ARG, "%s", msg);
    }
    return MGC_OK;
}

static mgc_status open_feeds(mgc_session *s, unsigned program, const mgc_feed *feeds, int n_feeds, rt_dataset **ds,
                             mgc_error *err) {
    bound_feeds b;
    *ds = NULL;
    mgc_status st = bind_feeds(s, program, feeds, n_feeds, &b, err);
    if (!st) st = feeds_dataset(&b, ds, err);
    if (!st) st = check_labels(s, &b, *ds, err);
    if (st) rt_dataset_free(*ds), *ds = NULL;
    return st;
}

/* ---- running ---- */

mgc_status mgc_train_step(mgc_session *s, const mgc_feed *feeds, int n_feeds, mgc_scores *out, mgc_error *err) {
    const ir_module *m = s->plan->m;
    if (!m->has_train) return lib_fail(err, MGC_ERR_ARG, "model '%s' has no train block", m->model_name);
    bound_feeds b;
    mgc_status st = bind_feeds(s, 0, feeds, n_feeds, &b, err);
    if (st) return st;
    if (b.examples != m->global_batch)
        return lib_fail(err, MGC_ERR_ARG, "a train step takes one global batch: %lld examples, the feeds have %lld",
                        (long long)m->global_batch, (long long)b.examples);
    for (int k = 0; k < b.n; k++) rt_session_set_input(s->s, b.which[k], b.feed[k]->data);
    float r[17] = {0};
    if (rt_session_run_read(s->s, PROG_TRAIN, rt_report_node(m, 0), r))
        return lib_fail(err, MGC_ERR_RUNTIME, "%s", rt_session_error(s->s));
    if (s->check_numerics && !isfinite(r[0]))
        return lib_fail(err, MGC_ERR_RUNTIME, "the loss is %s at step %lld (check_numerics)", isnan(r[0]) ? "NaN" : "infinite",
                        (long long)rt_session_step(s->s));
    if (out) {
        *out = (mgc_scores){.loss = r[0], .examples = m->global_batch};
        for (int k = 0; k < m->n_metrics && k < 16; k++) out->metrics[k] = r[1 + k];
    }
    return lib_ok(err);
}

typedef struct {
    const mgc_fit_options *o;
    int n_metrics;
} fit_ctx;

/* rt_train's report, as the caller's mgc_progress. */
static int on_report(void *ctx, const rt_train_report *r) {
    const fit_ctx *c = ctx;
    double val[16] = {0};
    mgc_progress p = {.kind = r->kind == RT_REPORT_TEXT ? MGC_PROGRESS_TEXT
                              : r->kind == RT_REPORT_STEP ? MGC_PROGRESS_STEP : MGC_PROGRESS_EPOCH,
                      .step = r->step, .epoch = r->epoch, .epochs = r->epochs, .step_in_epoch = r->done_in_epoch,
                      .steps_per_epoch = r->steps_per_epoch, .loss = r->loss, .metrics = r->metrics, .line = r->text,
                      .val_metrics = val};
    if (r->test) {
        p.has_validation = 1, p.val_loss = r->test->loss, p.val_examples = r->test->examples;
        for (int k = 0; k < c->n_metrics && k < 16; k++) val[k] = r->test->metric[k];
    }
    return c->o->progress ? c->o->progress(&p, c->o->user) : 0;
}

/* The options' figures and a train block, checked before any data are read. */
static mgc_status check_fit(const ir_module *m, const mgc_fit_options *o, mgc_error *err) {
    if (!m->has_train) return lib_fail(err, MGC_ERR_ARG, "model '%s' has no train block", m->model_name);
    if (o->epochs < 0 || o->steps < 0 || (!o->steps && !o->epochs))
        return lib_fail(err, MGC_ERR_ARG, "fit: epochs %lld and steps %lld: one must be positive, neither negative",
                        (long long)o->epochs, (long long)o->steps);
    if (o->save_every < 0 || o->keep < 0)
        return lib_fail(err, MGC_ERR_ARG, "fit: save_every %lld and keep %d must not be negative", (long long)o->save_every,
                        o->keep);
    return MGC_OK;
}

mgc_status lib_fit(mgc_session *s, const rt_dataset *train, const rt_dataset *valid, const mgc_fit_options *o,
                   mgc_error *err) {
    const ir_module *m = s->plan->m;
    mgc_fit_options d;
    if (!o) mgc_fit_options_init(&d), o = &d;
    mgc_status bad = check_fit(m, o, err);
    if (bad) return bad;
    int64_t start = o->total ? 0 : rt_session_step(s->s), per_epoch = rt_dataset_count(train) / m->global_batch;
    if (o->epochs > (INT64_MAX - start) / (per_epoch ? per_epoch : 1))
        return lib_fail(err, MGC_ERR_ARG, "fit: %lld epochs is more steps than mgc counts (2^63)", (long long)o->epochs);
    fit_ctx c = {o, m->n_metrics};
    rt_train_options to = {.steps = start + (o->steps ? o->steps : o->epochs * (per_epoch ? per_epoch : 1)),
                           .seed = s->seed, .check_replicas = s->check_replicas, .check_numerics = s->check_numerics,
                           .report = on_report, .report_ctx = &c, .tty = o->tty != 0, .history = o->history,
                           .history_append = o->history_append != 0, .checkpoint_dir = o->checkpoint_dir,
                           .save_every = o->save_every, .save_every_epochs = o->save_every_epochs != 0,
                           .keep = o->keep ? o->keep : 3, .quiet = o->quiet != 0, .stop = o->stop,
                           .run_ahead = o->run_ahead != 0};
    /* mgc run's counting: the targets as given, rt_train's epochs when no steps */
    if (o->total) to.steps = o->steps, to.epochs = o->epochs;
    char msg[1024];
    int rc = rt_train(s->s, train, valid, &to, msg, sizeof msg);
    if (rc < 0) return lib_fail(err, MGC_ERR_RUNTIME, "%s", msg);
    if (rc == RT_STOPPED)
        return lib_fail(err, MGC_STOPPED, "stopped by %s after step %lld", o->stop && *o->stop ? "the stop flag" : "the progress callback",
                        (long long)rt_session_step(s->s));
    return lib_ok(err);
}

mgc_status mgc_fit(mgc_session *s, const mgc_feed *feeds, int n_feeds, const mgc_fit_options *o, mgc_error *err) {
    mgc_fit_options d;
    if (!o) mgc_fit_options_init(&d), o = &d;
    mgc_status st = check_fit(s->plan->m, o, err);
    if (st) return st;
    rt_dataset *train = NULL, *valid = NULL;
    st = open_feeds(s, 0, feeds, n_feeds, &train, err);
    if (!st && o->validation) st = open_feeds(s, 0, o->validation, o->n_validation, &valid, err);
    if (!st && o->validation_data) st = lib_fail(err, MGC_ERR_ARG, "mgc_fit: validation_data is mgc_fit_dataset's; give validation feeds");
    if (!st) st = lib_fit(s, train, valid, o, err);
    rt_dataset_free(train);
    rt_dataset_free(valid);
    return st;
}

mgc_status mgc_evaluate(mgc_session *s, const mgc_feed *feeds, int n_feeds, mgc_scores *out, mgc_error *err) {
    const ir_module *m = s->plan->m;
    rt_dataset *ds;
    mgc_status st = open_feeds(s, 0, feeds, n_feeds, &ds, err);
    if (st) return st;
    rt_scores v;
    char msg[1024];
    if (rt_evaluate(s->s, ds, &v, msg, sizeof msg)) st = lib_fail(err, MGC_ERR_RUNTIME, "%s", msg);
    rt_dataset_free(ds);
    if (st) return st;
    if (out) {
        *out = (mgc_scores){.loss = v.loss, .examples = v.examples};
        for (int k = 0; k < m->n_metrics && k < 16; k++) out->metrics[k] = v.metric[k];
    }
    return lib_ok(err);
}

/* Each output has one fetch by name, large enough for n examples. */
static mgc_status check_fetches(const ir_module *m, const mgc_fetch *fetches, int n_fetches, int64_t n, int *which,
                                mgc_error *err) {
    if (m->n_outputs < 1) return lib_fail(err, MGC_ERR_ARG, "model '%s' has no output to predict", m->model_name);
    for (int j = 0; j < m->n_outputs; j++) {
        const ir_node *o = &m->g.nodes[m->outputs[j].node];
        which[j] = -1;
        for (int k = 0; k < n_fetches && which[j] < 0; k++)
            if (fetches[k].name && !strcmp(fetches[k].name, m->outputs[j].name)) which[j] = k;
        if (which[j] < 0) return lib_fail(err, MGC_ERR_ARG, "output '%s' is not fetched", m->outputs[j].name);
        size_t need = (size_t)(ir_node_bytes(o) / o->shape.dim[0] * n);
        if (fetches[which[j]].bytes < need || !fetches[which[j]].data)
            return lib_fail(err, MGC_ERR_ARG, "output '%s': %lld examples need %zu bytes, the buffer has %zu",
                            m->outputs[j].name, (long long)n, need, fetches[which[j]].data ? fetches[which[j]].bytes : 0);
    }
    for (int k = 0; k < n_fetches; k++) {
        int found = 0;
        for (int j = 0; j < m->n_outputs; j++) found |= which[j] == k;
        if (!found) return lib_fail(err, MGC_ERR_ARG, "model '%s' has no output named '%s'", m->model_name,
                                    fetches[k].name ? fetches[k].name : "(null)");
    }
    return MGC_OK;
}

mgc_status mgc_predict(mgc_session *s, const mgc_feed *feeds, int n_feeds, const mgc_fetch *fetches, int n_fetches,
                       mgc_error *err) {
    const ir_module *m = s->plan->m;
    rt_dataset *ds;
    if (n_fetches < 0 || (n_fetches && !fetches)) return lib_fail(err, MGC_ERR_ARG, "predict: %d fetches at %p", n_fetches, (const void *)fetches);
    mgc_status st = open_feeds(s, PROG_PREDICT, feeds, n_feeds, &ds, err);
    if (st) return st;
    int which[m->n_outputs + 1];
    st = check_fetches(m, fetches, n_fetches, rt_dataset_count(ds), which, err);
    rt_tensor *out = calloc((size_t)m->n_outputs + 1, sizeof *out);
    char msg[1024];
    if (!st && rt_predict(s->s, ds, out, msg, sizeof msg)) st = lib_fail(err, MGC_ERR_RUNTIME, "%s", msg);
    for (int j = 0; j < m->n_outputs; j++) {
        if (!st) memcpy(fetches[which[j]].data, out[j].data, (size_t)rt_tensor_bytes(&out[j]));
        rt_tensor_free(&out[j]);
    }
    free(out);
    rt_dataset_free(ds);
    return st ? st : lib_ok(err);
}
