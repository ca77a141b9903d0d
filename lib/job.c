/* job.c - libmgc jobs: the processes of an mpirun job (MPI start with its
 * watchdog, the workers' agreements of runtime/agree.c, the plan re-planned
 * for the job's replicas, the abort after a failure), and a loaded plan
 * fitted to this machine (absent GPUs, memory). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>

#include <zlib.h>

#include "../ir/diag.h"
#include "../passes/passes.h"
#include "../runtime/mpi.h"
#include "api_impl.h"

mgc_status mgc_job_start(double timeout, mgc_job **out, mgc_error *err) {
    if (!out) return lib_fail(err, MGC_ERR_ARG, "mgc_job_start: out must not be NULL");
    *out = NULL;
    if (!(timeout >= 0 && timeout <= 86400))
        return lib_fail(err, MGC_ERR_ARG, "mgc_job_start: timeout %g is not from 0 to 86400 seconds", timeout);
    char msg[640] = "";
    double t = timeout > 0 ? timeout : 60;
    rt_interprocess *ip = rt_mpi_init(t, msg, sizeof msg);
    if (!ip && *msg) return lib_fail(err, MGC_ERR_RUNTIME, "%s", msg);
    mgc_job *j = calloc(1, sizeof *j);
    if (!j) {
        rt_mpi_finalize(ip);
        return lib_fail(err, MGC_ERR_RUNTIME, "out of memory");
    }
    *j = (mgc_job){.ip = ip, .timeout = t};
    rt_facts_init(&j->facts);
    *out = j;
    return lib_ok(err);
}

int mgc_job_rank(const mgc_job *j) { return j && j->ip ? j->ip->rank : 0; }
int mgc_job_size(const mgc_job *j) { return j && j->ip ? j->ip->size : 1; }
int mgc_job_failed(const mgc_job *j) { return j->facts.failed != 0; }

void mgc_job_fail(mgc_job *j, const char *message) {
    if (!j->facts.failed) rt_facts_fail(&j->facts, message ? message : "failed");
}

static uint32_t crc_of(uLong crc, const void *p, size_t n) {
    for (size_t at = 0; at < n; at += 1u << 30) { /* zlib takes uInt lengths */
        size_t piece = n - at < (1u << 30) ? n - at : (1u << 30);
        crc = crc32(crc, (const Bytef *)p + at, (uInt)piece);
    }
    return (uint32_t)crc;
}

mgc_status mgc_job_set_facts(mgc_job *j, const mgc_plan *p, const char *path, const mgc_job_facts *f, mgc_error *err) {
    if (!j || !p || !f) return lib_fail(err, MGC_ERR_ARG, "mgc_job_set_facts: job, plan and facts must not be NULL");
    rt_worker_facts *w = &j->facts;
    snprintf(w->text, sizeof w->text, "%s", path ? path : mgc_plan_path(p));
    uLong crc = crc32(0, NULL, 0);
    for (int k = 0; k < p->m->n_sources; k++) crc = crc_of(crc, p->m->sources[k].text, strlen(p->m->sources[k].text));
    w->plan = (uint32_t)crc | 1, w->global_batch = p->m->global_batch;
    w->seed_given = f->seed_given != 0, w->seed = f->seed, w->steps = f->steps, w->epochs = f->epochs;
    if (!f->checkpoint) return lib_ok(err);
    char msg[512];
    size_t len;
    unsigned char *bytes = rt_read_file(f->checkpoint, &len, msg, sizeof msg);
    if (!bytes) return lib_fail(err, MGC_ERR_IO, "%s", msg);
    snprintf(w->load, sizeof w->load, "%s", f->checkpoint);
    w->load_crc = crc_of(crc32(0, NULL, 0), bytes, len);
    free(bytes);
    return lib_ok(err);
}

void mgc_job_set_data(mgc_job *j, const mgc_dataset *d) {
    uLong crc = crc32(0, NULL, 0);
    for (int i = 0; i < rt_dataset_inputs(d->ds); i++) {
        const rt_tensor *t = rt_dataset_tensor(d->ds, i);
        crc = crc_of(crc, t->data, (size_t)rt_tensor_bytes(t));
    }
    j->facts.examples = rt_dataset_count(d->ds), j->facts.data_crc = (uint32_t)crc;
}

mgc_status mgc_job_agree(mgc_job *j, mgc_error *err) {
    char msg[640];
    if (!rt_workers_agree(j->ip, &j->facts, j->timeout, msg, sizeof msg)) return lib_ok(err);
    j->stopped = true;
    return lib_fail(err, MGC_ERR_RUNTIME, "%s", msg);
}

int mgc_job_end(mgc_job *j, int status) {
    if (!j) return status;
    if (status && j->ip && !j->stopped) rt_mpi_abort(j->ip, status);
    rt_mpi_finalize(j->ip);
    free(j);
    return status;
}

/* The plan compiled again from the sources it carries, for other devices,
 * keeping its global batch, cross-device ops, bucket size, sparse gradients
 * and fusion; the diagnostics go to the error message. */
static mgc_status replan(mgc_plan *p, const ir_device *devices, int n_devices, mgc_error *err) {
    const ir_module *plan = p->m;
    pass_options o;
    pass_options_default(&o);
    o.devices = devices, o.n_devices = n_devices;
    o.global_batch = plan->global_batch;
    o.cross_device = plan->cross_device;
    o.bucket_bytes = plan->bucket_bytes;
    o.sparse_grads = plan->sparse_grads;
    o.no_fuse = plan->no_fuse;
    o.sources = plan->sources, o.n_sources = plan->n_sources;
    char *text = NULL, dir[4096];
    size_t len = 0;
    FILE *df = open_memstream(&text, &len);
    if (!df) return lib_fail(err, MGC_ERR_RUNTIME, "out of memory");
    ir_diag *d = ir_diag_new(df);
    ir_module *m = pass_elaborate(plan->source_file, lib_stdlib_dir(dir, sizeof dir), d, &o);
    if (m && !pass_run_all(m, d, &o, NULL, NULL)) ir_module_free(m), m = NULL;
    int errors = ir_diag_errors(d);
    if (errors) ir_module_free(m), m = NULL;
    ir_diag_free(d);
    fclose(df);
    while (len && text[len - 1] == '\n') text[--len] = 0;
    mgc_status st = MGC_OK;
    if (!m && errors) st = lib_fail(err, MGC_ERR_COMPILE, "%s", text);
    else if (!m) st = lib_fail(err, MGC_ERR_COMPILE, "%s: compilation failed", plan->source_file);
    free(text);
    if (st) return st;
    ir_module_free(p->m);
    p->m = m;
    return MGC_OK;
}

static void note(mgc_text_fn text, void *user, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note(mgc_text_fn text, void *user, const char *fmt, ...) {
    if (!text) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    text(MGC_TEXT_NOTE, line, user);
}

mgc_status mgc_job_plan(mgc_job *j, mgc_plan *p, mgc_text_fn text, void *user, mgc_error *err) {
    if (!j || !p) return lib_fail(err, MGC_ERR_ARG, "mgc_job_plan: job and plan must not be NULL");
    rt_interprocess *ip = j->ip;
    if (!ip) return lib_ok(err);
    int size = ip->size;
    const char *path = mgc_plan_path(p);
    double counts[size]; /* the workers agreed on the global batch already */
    char msg[512];
    memset(counts, 0, sizeof counts);
    counts[ip->rank] = p->m->n_devices;
    if (ip->all_reduce_sum(ip->ctx, counts, size, IR_F64, 60, "device counts of the workers", msg, sizeof msg))
        return lib_fail(err, MGC_ERR_RUNTIME, "%s", msg);
    int total = 0;
    for (int r = 0; r < size; r++) {
        if (r == ip->rank) j->first = total;
        total += (int)counts[r];
    }
    j->local = p->m->n_devices;
    if (p->m->global_batch % total)
        return lib_fail(err, MGC_ERR_ARG, "%s: global batch %lld is not divisible by the job's %d replicas (%d workers)",
                        path, (long long)p->m->global_batch, total, size);
    if (ip->rank == 0)
        note(text, user, "%d workers, %d replicas: re-planned %s for %lld examples per replica\n", size, total, path,
             (long long)p->m->global_batch / total);
    /* every replica under its own device (kind, index), so each worker's backend follows its own devices */
    double where[2 * total];
    memset(where, 0, sizeof where);
    for (int d = 0; d < j->local; d++)
        where[2 * (j->first + d)] = !strcmp(p->m->devices[d].name, "gpu"),
                              where[2 * (j->first + d) + 1] = p->m->devices[d].index;
    if (ip->all_reduce_sum(ip->ctx, where, 2 * total, IR_F64, 60, "devices of the workers", msg, sizeof msg))
        return lib_fail(err, MGC_ERR_RUNTIME, "%s", msg);
    ir_device devices[total];
    for (int r = 0; r < total; r++) devices[r] = (ir_device){where[2 * r] ? "gpu" : "cpu", (int)where[2 * r + 1]};
    mgc_status st = replan(p, devices, total, err);
    return st ? st : lib_ok(err);
}

mgc_status mgc_plan_fit_here(mgc_plan *p, int strict, mgc_text_fn text, void *user, mgc_error *err) {
    char why[256];
    if (!p) return lib_fail(err, MGC_ERR_ARG, "mgc_plan_fit_here: plan must not be NULL");
    const ir_module *m = p->m;
    if (strcmp(m->devices[0].name, "gpu")) return lib_ok(err);
    int gpus = mgc_gpu_count(why, sizeof why), missing = -1;
    for (int d = 0; d < m->n_devices; d++)
        if (m->devices[d].index >= gpus) missing = m->devices[d].index;
    if (missing < 0) return lib_ok(err);
    if (strict) return lib_fail(err, MGC_ERR_ARG, "%s: gpu:%d is not available: %s", mgc_plan_path(p), missing, why);
    note(text, user, "%s: gpu:%d is not available: %s; re-planned for %d CPU device%s\n", mgc_plan_path(p), missing, why,
         m->n_devices, m->n_devices > 1 ? "s" : "");
    ir_device cpus[m->n_devices];
    for (int d = 0; d < m->n_devices; d++) cpus[d] = (ir_device){"cpu", d};
    mgc_status st = replan(p, cpus, m->n_devices, err);
    return st ? st : lib_ok(err);
}

mgc_status mgc_plan_check_memory(const mgc_plan *p, const mgc_job *j, mgc_error *err) {
    const ir_module *m = p->m;
    struct sysinfo si;
    int first = j && j->ip ? j->first : 0, local = j && j->ip ? j->local : m->n_devices;
    if (strcmp(m->devices[first].name, "cpu") || sysinfo(&si) != 0) return lib_ok(err);
    double have = ((double)si.totalram + (double)si.totalswap) * si.mem_unit, need = 0;
    for (int d = first; d < first + local; d++) need += (double)m->arena_bytes[d];
    for (int k = 0; k < m->n_inputs; k++) need += (double)ir_node_bytes(&m->g.nodes[m->inputs[k]]);
    if (need <= have) return lib_ok(err);
    return lib_fail(err, MGC_ERR_RUNTIME, "%s: the plan needs %.1f GiB of memory, this machine has %.1f GiB",
                    mgc_plan_path(p), need / (1 << 30), have / (1 << 30));
}
