/* train.c - the training loop (Keras-style progress, per-epoch evaluation,
 * JSON Lines history), evaluation with masked partial batches, prediction,
 * and checkpoints of a session's variables. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../ir/outfile.h"
#include "checkpoint.h"
#include "resume.h"
#include "train.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int rt_input_specs(const ir_module *m, unsigned program, rt_input_spec *specs, int *which) {
    int count = 0;
    for (int k = 0; k < m->n_inputs; k++) {
        const ir_node *n = &m->g.nodes[m->inputs[k]];
        if (program && !(n->programs & program)) continue;
        rt_input_spec *s = &specs[count];
        *s = (rt_input_spec){.name = n->name, .dtype = n->dtype, .shape = {.rank = n->shape.rank - 1}};
        for (int d = 1; d < n->shape.rank; d++) s->shape.dim[d - 1] = n->shape.dim[d];
        if (which) which[count] = k;
        count++;
    }
    return count;
}

/* ---- checkpoints ---- */

int rt_save_variables(rt_session *s, const char *path, uint64_t seed, char *err, size_t cap) {
    const ir_module *m = rt_session_module(s);
    if (rt_session_average_states(s)) return snprintf(err, cap, "%s", rt_session_error(s)), -1;
    if (!rt_session_is_local(s, 0)) return 0;
    int n = 0;
    rt_ck_tensor *t = calloc((size_t)m->g.n, sizeof *t);
    int rc = 0;
    for (int i = 0; i < m->g.n && !rc; i++) {
        const ir_node *x = &m->g.nodes[i];
        if (!(ir_ops[x->op].flags & OPF_VARIABLE) || x->device != 0) continue;
        void *data = malloc((size_t)ir_node_bytes(x) + 1);
        t[n++] = (rt_ck_tensor){x->name, x->dtype, x->shape, data};
        if (rt_session_read(s, i, data)) {
            snprintf(err, cap, "%s", rt_session_error(s));
            rc = -1;
        }
    }
    char step[32], seed_s[32];
    snprintf(step, sizeof step, "%lld", (long long)rt_session_step(s));
    snprintf(seed_s, sizeof seed_s, "%llu", (unsigned long long)seed);
    const char *meta[] = {"format", "mgc", "model", m->model_name, "step", step, "seed", seed_s};
    if (!rc) rc = rt_checkpoint_save(path, t, n, meta, 4, err, cap);
    for (int k = 0; k < n; k++) free((void *)t[k].data);
    free(t);
    return rc;
}

static bool is_slot(const ir_node *x) { return x->op == OP_VAR; }

/* Checks that ck and the model hold the same variables with the same types. */
static int match_variables(const ir_module *m, const rt_checkpoint *ck, const char *path, bool *has_slots,
                           char *err, size_t cap) {
    *has_slots = false;
    for (int k = 0; k < rt_checkpoint_count(ck); k++) {
        const rt_ck_tensor *t = rt_checkpoint_at(ck, k);
        int found = -1;
        for (int i = 0; i < m->g.n && found < 0; i++)
            if (m->g.nodes[i].device == 0 && m->g.nodes[i].name && ir_ops[m->g.nodes[i].op].flags & OPF_VARIABLE &&
                !strcmp(m->g.nodes[i].name, t->name))
                found = i;
        if (found < 0) {
            snprintf(err, cap, "%s: tensor '%s' is not a variable of model '%s'", path, t->name, m->model_name);
            return -1;
        }
        const ir_node *x = &m->g.nodes[found];
        if (t->dtype != x->dtype || !ir_shape_eq(&t->shape, &x->shape)) {
            char a[96], b[96];
            snprintf(err, cap, "%s: tensor '%s' is %s, the model wants %s", path, t->name,
                     ir_type_str(t->dtype, &t->shape, a, sizeof a), ir_type_str(x->dtype, &x->shape, b, sizeof b));
            return -1;
        }
        *has_slots |= is_slot(x);
    }
    for (int i = 0; i < m->g.n; i++) {
        const ir_node *x = &m->g.nodes[i];
        if (!(ir_ops[x->op].flags & OPF_VARIABLE) || x->device != 0) continue;
        if (!rt_checkpoint_find(ck, x->name) && (!is_slot(x) || *has_slots)) {
            snprintf(err, cap, "%s: tensor '%s' is missing", path, x->name);
            return -1;
        }
    }
    return 0;
}

int rt_load_variables(rt_session *s, const char *path, uint64_t *seed, char *err, size_t cap) {
    const ir_module *m = rt_session_module(s);
    rt_checkpoint *ck = rt_checkpoint_load(path, err, cap);
    if (!ck) return -1;
    bool has_slots;
    int rc = match_variables(m, ck, path, &has_slots, err, cap);
    for (int i = 0; i < m->g.n && !rc && rt_session_is_local(s, 0); i++) {
        const ir_node *x = &m->g.nodes[i];
        if (!(ir_ops[x->op].flags & OPF_VARIABLE) || x->device != 0) continue;
        const rt_ck_tensor *t = rt_checkpoint_find(ck, x->name);
        void *zeros = t ? NULL : calloc(1, (size_t)ir_node_bytes(x) + 1);
        rc = rt_session_write(s, i, t ? t->data : zeros);
        free(zeros);
        if (rc) snprintf(err, cap, "%s", rt_session_error(s));
    }
    const char *step = rt_checkpoint_meta(ck, "step"), *seed_s = rt_checkpoint_meta(ck, "seed");
    char *end = NULL;
    long long at = step && has_slots ? strtoll(step, &end, 10) : 0;
    if (!rc && end && (end == step || *end || at < 0)) {
        snprintf(err, cap, "%s: metadata \"step\" is \"%s\", not a step count", path, step);
        rc = -1;
    }
    if (!rc) rt_session_set_step(s, at);
    if (!rc && seed && seed_s) *seed = strtoull(seed_s, NULL, 10);
    rt_checkpoint_free(ck);
    if (!rc && rt_session_broadcast_variables(s)) {
        snprintf(err, cap, "%s", rt_session_error(s));
        rc = -1;
    }
    return rc;
}

/* ---- evaluation and prediction ---- */

static rt_loader *ordered_loader(rt_session *s, const rt_dataset *ds, char *err, size_t cap) {
    const ir_module *m = rt_session_module(s);
    int64_t per = m->global_batch / m->n_devices;
    rt_loader_opts o = {.batch = m->global_batch, .keep_partial = true,
                        .row_begin = per * rt_session_first_replica(s), .rows = per * rt_session_local_replicas(s)};
    return rt_loader_new(ds, &o, err, cap);
}

/* Batch buffer k feeds model input which[k] (all inputs in order when NULL). */
static void set_inputs(rt_session *s, const rt_batch *b, const int *which) {
    for (int k = 0; k < b->n; k++) rt_session_set_input(s, which ? which[k] : k, b->data[k]);
}

/* Adds the first `valid` entries of replica r's copy of per-example vector `node`. */
static int sum_rows(rt_session *s, int node, int r, int64_t valid, float *buf, double *sum) {
    if (valid <= 0) return 0;
    if (rt_session_read(s, rt_session_peer(s, node, r), buf)) return -1;
    for (int64_t k = 0; k < valid; k++) *sum += buf[k];
    return 0;
}

int rt_evaluate(rt_session *s, const rt_dataset *ds, rt_scores *out, char *err, size_t cap) {
    const ir_module *m = rt_session_module(s);
    int64_t per = m->global_batch / m->n_devices;
    if (rt_session_average_states(s)) return snprintf(err, cap, "%s", rt_session_error(s)), -1;
    rt_loader *l = ordered_loader(s, ds, err, cap);
    if (!l) return -1;
    double sums[17] = {0};
    float *buf = malloc((size_t)per * sizeof *buf);
    int rc = 0, first = rt_session_first_replica(s);
    for (int64_t step = rt_loader_steps_per_epoch(l); step > 0 && !rc; step--) {
        const rt_batch *b = rt_loader_next(l);
        set_inputs(s, b, NULL);
        rc = rt_session_run(s, PROG_EVAL);
        for (int r = first; r < first + rt_session_local_replicas(s) && !rc; r++) {
            int64_t valid = b->valid - (r - first) * per;
            valid = valid < 0 ? 0 : valid > per ? per : valid;
            rc = sum_rows(s, m->loss, r, valid, buf, &sums[0]);
            for (int k = 0; k < m->n_metrics && !rc; k++) rc = sum_rows(s, m->metrics[k].node, r, valid, buf, &sums[1 + k]);
        }
        sums[16] += (double)b->valid;
    }
    if (!rc) rc = rt_session_sum_processes(s, sums, 17, "sum of evaluation results");
    if (rc) snprintf(err, cap, "%s", rt_session_error(s));
    out->examples = (int64_t)sums[16];
    out->loss = sums[0] / (sums[16] > 0 ? sums[16] : 1);
    for (int k = 0; k < m->n_metrics; k++) out->metric[k] = sums[1 + k] / (sums[16] > 0 ? sums[16] : 1);
    free(buf);
    rt_loader_free(l);
    return rc;
}

/* Output k's rows of one step: replica r's at their global place. */
static int read_output_rows(rt_session *s, int node, int64_t step, rt_tensor *out, char *buf) {
    const ir_module *m = rt_session_module(s);
    int64_t per = m->global_batch / m->n_devices, row = ir_node_bytes(&m->g.nodes[node]) / per, n = out->shape.dim[0];
    int first = rt_session_first_replica(s);
    for (int r = first; r < first + rt_session_local_replicas(s); r++) {
        int64_t at = step * m->global_batch + r * per, take = n - at < per ? n - at : per; /* replica r's rows */
        if (take <= 0) break;
        if (rt_session_read(s, rt_session_peer(s, node, r), buf)) return -1;
        memcpy((char *)out->data + at * row, buf, (size_t)(take * row));
    }
    return 0;
}

int rt_predict(rt_session *s, const rt_dataset *ds, rt_tensor *out, char *err, size_t cap) {
    const ir_module *m = rt_session_module(s);
    if (m->n_outputs < 1) {
        snprintf(err, cap, "model '%s' has no output to predict", m->model_name);
        return -1;
    }
    if (rt_session_average_states(s)) return snprintf(err, cap, "%s", rt_session_error(s)), -1;
    int64_t per = m->global_batch / m->n_devices, n = rt_dataset_count(ds), most = 0;
    for (int k = 0; k < m->n_outputs; k++) {
        const ir_node *o = &m->g.nodes[m->outputs[k].node];
        int64_t row = ir_node_bytes(o) / per;
        out[k].dtype = o->dtype, out[k].shape = o->shape, out[k].shape.dim[0] = n;
        out[k].data = calloc((size_t)(n * row) + 1, 1); /* zero: under mpirun each worker fills its rows */
        most = row > most ? row : most;
    }
    rt_input_spec specs[m->n_inputs + 1];
    int which[m->n_inputs + 1];
    rt_input_specs(m, PROG_PREDICT, specs, which);
    rt_loader *l = ordered_loader(s, ds, err, cap);
    if (!l) return -1;
    char *buf = malloc((size_t)(per * most));
    int rc = 0;
    for (int64_t step = 0; step < rt_loader_steps_per_epoch(l) && !rc; step++) {
        const rt_batch *b = rt_loader_next(l);
        set_inputs(s, b, which);
        rc = rt_session_run(s, PROG_PREDICT);
        for (int k = 0; k < m->n_outputs && !rc; k++) rc = read_output_rows(s, m->outputs[k].node, step, &out[k], buf);
    }
    for (int k = 0; k < m->n_outputs && !rc; k++)
        rc = rt_session_merge_processes(s, out[k].data, rt_tensor_bytes(&out[k]), "predictions of the workers");
    if (rc) snprintf(err, cap, "%s", rt_session_error(s));
    free(buf);
    rt_loader_free(l);
    return rc;
}

/* ---- training ---- */

int rt_report_node(const ir_module *m, int replica) {
    for (int i = 0; i < m->g.n; i++)
        if (m->g.nodes[i].op == OP_ALL_REDUCE && m->g.nodes[i].iattr[0] == m->n_buckets &&
            m->g.nodes[i].device == replica)
            return i;
    return -1;
}

typedef struct {
    const ir_module *m;
    const rt_train_options *o;
    int64_t epoch, epochs, steps_per_epoch, done_in_epoch, target;
    double sums[17], started, last_print, train_seconds;
    bool tty, stop_asked;       /* stop_asked: the report callback returned nonzero */
    bool ahead;                 /* issue 14: train steps in flight (o->run_ahead, rt_session_can_run_ahead) */
    int64_t step;               /* the last step finished */
    FILE *history;              /* a memory stream over history_text, NULL: no history here */
    char *history_text;
    size_t history_len;
} progress;

/* Text rt_train prints: to stdout, or to the report callback. */
static void out_text(progress *p, rt_train_report *r) {
    if (p->o->report) {
        int stop = p->o->report(p->o->report_ctx, r);
        if (r->kind == RT_REPORT_STEP && stop) p->stop_asked = true;
        return;
    }
    if (!r->text) return;
    fputs(r->text, stdout);
    fflush(stdout);
}

/* Fills the figures of a report: the epoch's means so far. */
static rt_train_report figures(const progress *p, rt_report_kind kind, double *means) {
    double n = (double)(p->done_in_epoch ? p->done_in_epoch : 1);
    for (int k = 0; k <= p->m->n_metrics; k++) means[k] = p->sums[k] / n;
    return (rt_train_report){.kind = kind, .step = p->step, .epoch = p->epoch, .epochs = p->epochs,
                             .done_in_epoch = p->done_in_epoch, .steps_per_epoch = p->steps_per_epoch,
                             .loss = means[0], .metrics = means + 1};
}

/* Appends printf-style text at buf[*at], never past cap. */
static void __attribute__((format(printf, 4, 5))) appendf(char *buf, size_t cap, size_t *at, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (*at < cap) *at += (size_t)vsnprintf(buf + *at, cap - *at, fmt, ap);
    va_end(ap);
}

/* The Keras-style progress line into buf; false when none is due. */
static bool format_progress(progress *p, bool final, char *buf, size_t cap) {
    double t = now(), elapsed = t - p->started;
    if (p->o->quiet || (!final && (!p->tty || t - p->last_print < 0.25))) return false;
    p->last_print = t;
    int64_t n = p->done_in_epoch, total = p->steps_per_epoch;
    int width = 30, fill = total ? (int)(width * n / total) : width;
    size_t at = 0;
#define PUT(...) appendf(buf, cap, &at, __VA_ARGS__)
    PUT("%s%lld/%lld [", p->tty ? "\r" : "", (long long)n, (long long)total);
    for (int k = 0; k < width; k++) PUT("%c", k < fill ? '=' : k == fill ? '>' : '.');
    PUT("] - ");
    if (final) PUT("%.1fs", elapsed);
    else PUT("ETA %.0fs", n ? elapsed / (double)n * (double)(total - n) : 0.0);
    PUT(" - loss: %.4f", p->sums[0] / (double)(n ? n : 1));
    for (int k = 0; k < p->m->n_metrics; k++) PUT(" - %s: %.4f", p->m->metrics[k].name, p->sums[1 + k] / (double)(n ? n : 1));
    PUT(" - %.0f img/s", (double)(n * p->m->global_batch) / (elapsed > 0 ? elapsed : 1));
    if (final || !p->tty) PUT("\n");
#undef PUT
    return true;
}

/* After a step: the progress line when due, and the step's report. */
static void print_progress(progress *p) {
    char line[1024];
    double means[17];
    rt_train_report r = figures(p, RT_REPORT_STEP, means);
    r.text = format_progress(p, false, line, sizeof line) ? line : NULL;
    out_text(p, &r);
}

static void print_text(progress *p, const char *text) {
    out_text(p, &(rt_train_report){.kind = RT_REPORT_TEXT, .text = text});
}

/* Evaluates on test, prints the epoch line and writes the history object. */
static int end_epoch(rt_session *s, progress *p, const rt_dataset *test, char *err, size_t cap) {
    const ir_module *m = p->m;
    double seconds = now() - p->started, n = (double)(p->done_in_epoch ? p->done_in_epoch : 1);
    double ips = (double)(p->done_in_epoch * m->global_batch) / (seconds > 0 ? seconds : 1);
    char text[2048] = "";
    if (format_progress(p, true, text, sizeof text)) print_text(p, text); /* before the evaluation, which takes time */
    rt_scores v = {0};
    if (test && rt_evaluate(s, test, &v, err, cap)) return -1;
    size_t at = 0;
    text[0] = 0;
    if (!p->o->quiet && test) {
        appendf(text, sizeof text, &at, "epoch %lld/%lld - test loss: %.4f", (long long)p->epoch + 1,
                (long long)p->epochs, v.loss);
        for (int k = 0; k < m->n_metrics; k++) appendf(text, sizeof text, &at, " - test %s: %.4f", m->metrics[k].name, v.metric[k]);
        appendf(text, sizeof text, &at, " (%lld examples)\n", (long long)v.examples);
    }
    double means[17];
    rt_train_report r = figures(p, RT_REPORT_EPOCH, means);
    r.text = *text ? text : NULL, r.test = test ? &v : NULL;
    out_text(p, &r);
    FILE *h = p->history;
    if (!h) return 0;
    fprintf(h, "{\"epoch\": %lld, \"step\": %lld, \"loss\": %.9g", (long long)p->epoch + 1,
            (long long)rt_session_step(s), p->sums[0] / n);
    for (int k = 0; k < m->n_metrics; k++) fprintf(h, ", \"%s\": %.9g", m->metrics[k].name, p->sums[1 + k] / n);
    if (test) {
        fprintf(h, ", \"val_loss\": %.9g", v.loss);
        for (int k = 0; k < m->n_metrics; k++) fprintf(h, ", \"val_%s\": %.9g", m->metrics[k].name, v.metric[k]);
    }
    if (m->has_train) /* the rate of the epoch's last update, as Keras records it */
        fprintf(h, ", \"learning_rate\": %.9g", ir_learning_rate(&m->opt, rt_session_step(s) - 1));
    fprintf(h, ", \"images_per_sec\": %.1f, \"seconds\": %.3f}\n", ips, seconds);
    fflush(h);
    const void *parts[1] = {p->history_text};
    size_t sizes[1] = {p->history_len};
    return ir_write_file_atomic(p->o->history, parts, sizes, 1, err, cap);
}

/* The history's lines so far, in memory: the file's own when appending. */
static void open_history(progress *p) {
    const rt_train_options *o = p->o;
    if (!o->history || o->quiet) return;
    p->history = open_memstream(&p->history_text, &p->history_len);
    size_t len = 0;
    char err[256];
    unsigned char *old = o->history_append ? rt_read_file(o->history, &len, err, sizeof err) : NULL;
    if (old && p->history) fwrite(old, 1, len, p->history);
    free(old);
}

/* Whether to stop after this step: 1 when any worker's flag is set. -1 when
 * the flags cannot be summed (a worker died or froze): that is a failure to
 * report, not a stop, which would claim a signal nobody sent. */
static int stop_requested(rt_session *s, const rt_train_options *o, char *err, size_t cap) {
    if (!o->stop) return 0;
    double flag = *o->stop ? 1 : 0;
    if (rt_session_sum_processes(s, &flag, 1, "the stop flag")) return snprintf(err, cap, "%s", rt_session_error(s)), -1;
    return flag > 0;
}

/* A periodic checkpoint is due after `step`: every N steps, or at the end of
 * every N epochs (by default every epoch). */
static bool checkpoint_due(const rt_train_options *o, int64_t step, int64_t steps_per_epoch) {
    if (!o->checkpoint_dir) return false;
    int64_t every = o->save_every > 0 ? o->save_every : 1;
    if (!o->save_every_epochs && o->save_every > 0) return step % every == 0;
    return step % steps_per_epoch == 0 && (step / steps_per_epoch) % every == 0;
}

/* Whether step k + 1 may be issued before step k is waited for (issue 14,
 * "Steps in flight"): not when something must see the state after step k
 * first (the epoch's evaluation, a checkpoint, a replica check, a stop), nor
 * past the last step. */
static bool may_run_ahead(const progress *p, int64_t k) {
    const rt_train_options *o = p->o;
    return p->ahead && k < p->target && k % p->steps_per_epoch && !checkpoint_due(o, k, p->steps_per_epoch) &&
           !(o->check_replicas && k % o->check_replicas == 0) && !p->stop_asked && !(o->stop && *o->stop);
}

/* Runs the next train step to its end and adds its loss and metrics; with
 * steps in flight the one after is issued first, when it may be. */
static int train_step(rt_session *s, progress *p, rt_loader *l, int report, char *err, size_t cap) {
    const ir_module *m = p->m;
    float r[17];
    int rc = 0;
    if (!p->ahead) {
        set_inputs(s, rt_loader_next(l), NULL);
        rc = rt_session_run_read(s, PROG_TRAIN, report, r);
        p->step = rt_session_step(s);
    } else {
        if (!rt_session_train_unfinished(s)) set_inputs(s, rt_loader_next(l), NULL), rc = rt_session_train_issue(s, report);
        if (!rc && may_run_ahead(p, rt_session_step(s)))
            set_inputs(s, rt_loader_next(l), NULL), rc = rt_session_train_issue(s, report);
        int64_t k = rc ? -1 : rt_session_train_finish(s, r);
        rc = k < 0 ? -1 : 0, p->step = k;
    }
    if (rc) {
        snprintf(err, cap, "%s", rt_session_error(s));
        return -1;
    }
    if (p->o->check_numerics && !isfinite(r[0])) {
        snprintf(err, cap, "the loss is %s at step %lld (--check-numerics)", isnan(r[0]) ? "NaN" : "infinite",
                 (long long)p->step);
        return -1;
    }
    for (int k = 0; k <= m->n_metrics; k++) p->sums[k] += r[k];
    if (p->o->check_replicas && p->step % p->o->check_replicas == 0 && rt_session_check_replicas(s, err, cap))
        return -1;
    return 0;
}

int rt_train(rt_session *s, const rt_dataset *train, const rt_dataset *test, const rt_train_options *o,
             char *err, size_t cap) {
    const ir_module *m = rt_session_module(s);
    int64_t per = m->global_batch / m->n_devices;
    rt_loader_opts lo = {.batch = m->global_batch, .seed = o->seed, .shuffle = true,
                         .row_begin = per * rt_session_first_replica(s), .rows = per * rt_session_local_replicas(s)};
    rt_loader *l = rt_loader_new(train, &lo, err, cap);
    if (!l) return -1;
    progress p = {.m = m, .o = o, .steps_per_epoch = rt_loader_steps_per_epoch(l), .tty = o->report ? o->tty : isatty(1),
                  .ahead = o->run_ahead && rt_session_can_run_ahead(s), .step = rt_session_step(s)};
    open_history(&p);
    int64_t start = rt_session_step(s);
    int report = rt_report_node(m, rt_session_first_replica(s)), rc = 0;
    if (p.steps_per_epoch == 0) {
        snprintf(err, cap, "the training set has fewer examples than one global batch (%lld)", (long long)m->global_batch);
        rc = -1;
    } else if (!o->steps && o->epochs > INT64_MAX / p.steps_per_epoch) {
        snprintf(err, cap, "--epochs %lld of %lld steps each is more steps than mgc counts (2^63)",
                 (long long)o->epochs, (long long)p.steps_per_epoch);
        rc = -1;
    }
    if (!rc) {
        p.target = o->steps ? o->steps : o->epochs * p.steps_per_epoch;
        p.epochs = p.target / p.steps_per_epoch + (p.target % p.steps_per_epoch != 0);
        char text[160];
        snprintf(text, sizeof text, "nothing to train: the checkpoint is already at step %lld of %lld\n",
                 (long long)start, (long long)p.target);
        if (start >= p.target && !o->quiet) print_text(&p, text);
        rc = rt_loader_seek(l, start / p.steps_per_epoch, start % p.steps_per_epoch, err, cap);
    }
    while (!rc && rt_session_step(s) < p.target) {
        p.epoch = rt_session_step(s) / p.steps_per_epoch;
        p.done_in_epoch = 0, p.started = now(), p.last_print = 0;
        memset(p.sums, 0, sizeof p.sums);
        char text[96];
        snprintf(text, sizeof text, "Epoch %lld/%lld\n", (long long)p.epoch + 1, (long long)p.epochs);
        if (!o->quiet) print_text(&p, text);
        bool stopping = false;
        int64_t saved_at = -1;
        do {
            rc = train_step(s, &p, l, report, err, cap);
            p.done_in_epoch++;
            print_progress(&p);
            if (!rc && checkpoint_due(o, p.step, p.steps_per_epoch)) { /* no step in flight then */
                rc = rt_ckpt_dir_save(s, o->checkpoint_dir, o->seed, o->keep, err, cap);
                saved_at = p.step;
            }
            int stop = rc ? 0 : stop_requested(s, o, err, cap);
            if (stop < 0) rc = -1;
            stopping = !rc && (stop || p.stop_asked);
            if (stopping && rt_session_train_unfinished(s)) { /* the step issued before the stop came ends too */
                rc = train_step(s, &p, l, report, err, cap);
                p.done_in_epoch++;
                print_progress(&p);
            }
        } while (!rc && !stopping && p.step < p.target && p.step % p.steps_per_epoch); /* p.step: finished */
        int64_t step = rt_session_step(s);
        if (!rc && !stopping) rc = end_epoch(s, &p, test, err, cap);
        if (!rc && o->checkpoint_dir && saved_at != step && (stopping || step == p.target)) /* the state at the end */
            rc = rt_ckpt_dir_save(s, o->checkpoint_dir, o->seed, o->keep, err, cap);
        if (!rc && stopping) rc = RT_STOPPED;
    }
    while (rt_session_train_unfinished(s) && rt_session_train_finish(s, NULL) >= 0) {} /* after a failure */
    rt_loader_free(l);
    if (p.history) fclose(p.history);
    free(p.history_text);
    return rc;
}
