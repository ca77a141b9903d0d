/* plan.c - libmgc plans: compile a model file or source text for a device
 * list (the passes of `mgc compile`, diagnostics captured), .mgx load and
 * save, and what a plan declares (inputs, outputs, metrics). */
#define _GNU_SOURCE /* dladdr, fopencookie */
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../ir/diag.h"
#include "../ir/outfile.h"
#include "../ir/plan.h"
#include "../passes/passes.h"
#include "api_impl.h"

mgc_status lib_fail(mgc_error *err, mgc_status st, const char *fmt, ...) {
    if (!err) return st;
    err->status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return st;
}

mgc_status lib_ok(mgc_error *err) {
    if (err) err->status = MGC_OK, err->message[0] = 0;
    return MGC_OK;
}

const char *mgc_dtype_name(mgc_dtype t) { return (unsigned)t < IR_DTYPE_COUNT ? ir_dtype_name((ir_dtype)t) : "?"; }
size_t mgc_dtype_size(mgc_dtype t) { return (unsigned)t < IR_DTYPE_COUNT ? ir_dtype_size((ir_dtype)t) : 0; }

_Static_assert((int)MGC_F32 == IR_F32 && (int)MGC_I32 == IR_I32 && (int)MGC_F64 == IR_F64 && (int)MGC_U8 == IR_U8,
               "mgc_dtype follows ir_dtype");
_Static_assert(MGC_MAX_RANK >= IR_MAX_RANK, "mgc_tensor_info holds every shape");

void mgc_compile_options_init(mgc_compile_options *o) { *o = (mgc_compile_options){0}; }

/* The stdlib beside an installed libmgc: LIBDIR/../share/mgc/stdlib (or
 * ../../share for a multiarch LIBDIR), so an installed tree can move. */
static bool beside_library(char *buf, size_t cap) {
    Dl_info info;
    if (!dladdr((void *)mgc_compile_file, &info) || !info.dli_fname) return false;
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", info.dli_fname);
    const char *dir = dirname(copy);
    for (int up = 1; up <= 2; up++) {
        snprintf(buf, cap, "%s/%s/share/mgc/stdlib", dir, up == 1 ? ".." : "../..");
        char probe[4200];
        snprintf(probe, sizeof probe, "%s/nn.mg", buf);
        if (access(probe, R_OK) == 0) return true;
    }
    return false;
}

/* The stdlib: o's, $MGC_STDLIB, beside the library, the configured install
 * prefix's, else the source tree's (a build tree). */
static const char *stdlib_dir(const mgc_compile_options *o, char *buf, size_t cap) {
    if (o && o->stdlib_dir) return o->stdlib_dir;
    return lib_stdlib_dir(buf, cap);
}

const char *lib_stdlib_dir(char *buf, size_t cap) {
    const char *env = getenv("MGC_STDLIB");
    if (env && *env) return env;
    if (beside_library(buf, cap)) return buf;
    if (access(MGC_INSTALL_STDLIB_DIR "/nn.mg", R_OK) == 0) return MGC_INSTALL_STDLIB_DIR;
    return MGC_SOURCE_STDLIB_DIR;
}

/* A device index as `mgc compile --devices` reads it: a whole decimal from
 * 0 to 2^31-1 (no wrap, no cap). */
static bool device_index(const char *s, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno == ERANGE || v < 0 || v > INT32_MAX || (*s != '+' && (*s < '0' || *s > '9')))
        return false;
    *out = v;
    return true;
}

/* "cpu:0,cpu:1" -> devices (malloc'd), as `mgc compile --devices` reads it
 * (its messages are the CLI's, which names the option --devices). */
static mgc_status parse_devices(const char *list, ir_device **out, int *n, mgc_error *err) {
    int cap = 1;
    for (const char *p = list; *p; p++) cap += *p == ',';
    ir_device *d = calloc((size_t)cap, sizeof *d);
    char *copy = strdup(list), *save = NULL;
    mgc_status st = MGC_OK;
    *n = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok && !st; tok = strtok_r(NULL, ",", &save)) {
        char kind[8];
        int used = 0;
        long long index = 0;
        if (sscanf(tok, "%3[a-z]:%n", kind, &used) != 1 || !used || (strcmp(kind, "cpu") && strcmp(kind, "gpu"))) {
            st = lib_fail(err, MGC_ERR_ARG, "devices: '%s' is not a device (expected cpu:N or gpu:N)", tok);
            break;
        }
        if (!device_index(tok + used, &index))
            st = lib_fail(err, MGC_ERR_ARG, "devices: '%s' is not an integer from 0 to %d", tok + used, INT32_MAX);
        for (int k = 0; k < *n && !st; k++)
            if (d[k].index == index && !strcmp(d[k].name, kind))
                st = lib_fail(err, MGC_ERR_ARG, "devices: %s is listed twice", tok);
        if (!st && *n && strcmp(d[0].name, kind))
            st = lib_fail(err, MGC_ERR_ARG, "devices: cannot mix cpu and gpu devices in one plan");
        if (!st) d[(*n)++] = (ir_device){!strcmp(kind, "cpu") ? "cpu" : "gpu", (int)index};
    }
    free(copy);
    if (!st && !*n) st = lib_fail(err, MGC_ERR_ARG, "devices: empty device list");
    if (st) free(d), d = NULL;
    *out = d;
    return st;
}

#ifdef MGC_HAVE_CUDA
int rt_cuda_device_count(char *why, size_t cap);
#endif

int mgc_gpu_count(char *why, size_t cap) {
#ifdef MGC_HAVE_CUDA
    return rt_cuda_device_count(why, cap);
#else
    snprintf(why, cap, "this mgc was built without CUDA");
    return 0;
#endif
}

/* GPU devices that are not here: an error (strict), else as many CPU
 * devices, said as a note. */
static mgc_status fit_gpus(const mgc_compile_options *o, ir_device *d, int n, mgc_error *err) {
    char why[256] = "", note[512];
    if (strcmp(d[0].name, "gpu")) return MGC_OK;
    int gpus = mgc_gpu_count(why, sizeof why), missing = -1;
    for (int k = 0; k < n; k++)
        if (d[k].index >= gpus) missing = d[k].index;
    if (missing < 0) return MGC_OK;
    if (o && o->strict_devices) return lib_fail(err, MGC_ERR_ARG, "gpu:%d is not available: %s", missing, why);
    if (o && o->text) {
        snprintf(note, sizeof note, "gpu:%d is not available: %s; using %d CPU device%s instead\n", missing, why, n,
                 n > 1 ? "s" : "");
        o->text(MGC_TEXT_NOTE, note, o->text_user);
    }
    for (int k = 0; k < n; k++) d[k] = (ir_device){"cpu", k};
    return MGC_OK;
}

const char *mgc_pass_name(int k) {
    if (k == 0) return "elaborate";
    return k > 0 && k <= pass_pipeline_count ? pass_pipeline[k - 1].name : NULL;
}

static bool pass_named(const char *name) {
    for (int k = 0; mgc_pass_name(k); k++)
        if (!strcmp(mgc_pass_name(k), name)) return true;
    return false;
}

static mgc_status pass_opts(const mgc_compile_options *o, pass_options *po, ir_device **devices, mgc_error *err) {
    pass_options_default(po);
    po->quiet = true;
    if (!o || !o->forward_only) { /* forward_only: one replica, on no device */
        int n;
        mgc_status st = parse_devices(o && o->devices ? o->devices : "cpu:0", devices, &n, err);
        if (st) return st;
        if ((st = fit_gpus(o, *devices, n, err))) return st;
        po->devices = *devices, po->n_devices = n;
    }
    if (o && o->no_fuse) po->no_fuse = true;
    if (o && o->sparse_grads) {
        int k = 0;
        while (k < SPARSE_COUNT && strcmp(ir_sparse_grads_names[k], o->sparse_grads)) k++;
        if (k == SPARSE_COUNT)
            return lib_fail(err, MGC_ERR_ARG, "sparse_grads: '%s' is not auto, always or never", o->sparse_grads);
        po->sparse_grads = (ir_sparse_grads)k;
    }
    if (o && o->dump_after && !pass_named(o->dump_after))
        return lib_fail(err, MGC_ERR_ARG, "dump_after: no pass named '%s'", o->dump_after);
    if (o && o->global_batch < 0) return lib_fail(err, MGC_ERR_ARG, "global_batch %lld is negative", (long long)o->global_batch);
    if (o && o->bucket_bytes < 0) return lib_fail(err, MGC_ERR_ARG, "bucket_bytes %lld is negative", (long long)o->bucket_bytes);
    if (o && o->global_batch) po->global_batch = o->global_batch;
    if (o && o->bucket_bytes) po->bucket_bytes = o->bucket_bytes;
    if (o && o->cross_device) {
        int k = 0;
        while (k < XDEV_COUNT && strcmp(ir_cross_device_names[k], o->cross_device)) k++;
        if (k == XDEV_COUNT)
            return lib_fail(err, MGC_ERR_ARG, "cross_device: '%s' is not ring, one-device or hierarchical", o->cross_device);
        po->cross_device = (ir_cross_device)k;
    }
    return MGC_OK;
}

/* A stream whose text goes to the caller's text callback as it is written
 * (unbuffered, so the kinds keep their order), and for diagnostics is also
 * kept for the error message. */
typedef struct {
    const mgc_compile_options *o;
    mgc_text_kind kind;
    FILE *keep;            /* NULL: not kept */
} text_sink;

static ssize_t sink_write(void *cookie, const char *buf, size_t n) {
    text_sink *s = cookie;
    if (s->keep) fwrite(buf, 1, n, s->keep);
    if (s->o && s->o->text && n) {
        char *t = strndup(buf, n);
        if (!t) return -1;
        s->o->text(s->kind, t, s->o->text_user);
        free(t);
    }
    return (ssize_t)n;
}

static FILE *sink_open(text_sink *s) {
    FILE *f = fopencookie(s, "w", (cookie_io_functions_t){.write = sink_write});
    if (f) setvbuf(f, NULL, _IONBF, 0);
    return f;
}

/* Elaborates path (or source, standing for path) and runs every pass (or,
 * forward_only, the shapes pass only); the diagnostics go to the text
 * callback and to a memory stream that becomes the message. */
static mgc_status compile(const char *path, const char *source, const mgc_compile_options *o, mgc_plan **out,
                          mgc_error *err) {
    *out = NULL;
    pass_options po;
    ir_device *devices = NULL;
    mgc_status st = pass_opts(o, &po, &devices, err);
    if (st) return free(devices), st;
    ir_source src = {path, source};
    if (source) po.sources = &src, po.n_sources = 1;
    char *text = NULL;
    size_t len = 0;
    text_sink diag = {o, MGC_TEXT_DIAG, open_memstream(&text, &len)}, dump = {o, MGC_TEXT_DUMP, NULL},
              timing = {o, MGC_TEXT_TIMING, NULL};
    FILE *df = diag.keep ? sink_open(&diag) : NULL, *uf = sink_open(&dump), *tf = sink_open(&timing);
    if (!df || !uf || !tf) {
        if (df) fclose(df);
        if (uf) fclose(uf);
        if (tf) fclose(tf);
        if (diag.keep) fclose(diag.keep);
        free(text), free(devices);
        return lib_fail(err, MGC_ERR_RUNTIME, "out of memory");
    }
    if (o && o->time_passes) po.time_out = tf;
    ir_diag *d = ir_diag_new(df);
    char dir[4096];
    bool forward = o && o->forward_only;
    double start = pass_clock();
    ir_module *m = pass_elaborate(path, stdlib_dir(o, dir, sizeof dir), d, &po);
    if (m && !forward) pass_report_time(&po, "elaborate", start, m);
    if (m && forward && !pass_shapes(m, d, &po)) ir_module_free(m), m = NULL;
    if (m && !forward && !pass_run_all(m, d, &po, o ? o->dump_after : NULL, uf)) ir_module_free(m), m = NULL;
    int errors = ir_diag_errors(d);
    if (errors) ir_module_free(m), m = NULL;
    ir_diag_free(d);
    fclose(df), fclose(uf), fclose(tf);
    fclose(diag.keep);
    free(devices);
    while (len && text[len - 1] == '\n') text[--len] = 0;
    if (!m && errors) st = lib_fail(err, MGC_ERR_COMPILE, "%s", text);
    else if (!m) st = lib_fail(err, MGC_ERR_COMPILE, "%s: compilation failed", path);
    free(text);
    if (st) return st;
    *out = calloc(1, sizeof **out);
    (*out)->m = m;
    (*out)->forward_only = forward;
    return lib_ok(err);
}

mgc_status mgc_compile_file(const char *path, const mgc_compile_options *o, mgc_plan **out, mgc_error *err) {
    if (!path || !out) return lib_fail(err, MGC_ERR_ARG, "mgc_compile_file: path and out must not be NULL");
    return compile(path, NULL, o, out, err);
}

mgc_status mgc_compile_source(const char *source, const char *name, const mgc_compile_options *o, mgc_plan **out,
                              mgc_error *err) {
    if (!source || !out) return lib_fail(err, MGC_ERR_ARG, "mgc_compile_source: source and out must not be NULL");
    return compile(name && *name ? name : "<source>", source, o, out, err);
}

/* Reads (and, runnable, checks that it can run here) a .mgx file. */
static mgc_status load(const char *path, bool runnable, mgc_plan **out, mgc_error *err) {
    char msg[1024];
    if (!path || !out) return lib_fail(err, MGC_ERR_ARG, "mgc_plan_%s: path and out must not be NULL", runnable ? "load" : "read");
    *out = NULL;
    ir_module *m = mgx_read(path, msg, sizeof msg);
    if (m && runnable && mgx_check_runnable(m, path, msg, sizeof msg)) ir_module_free(m), m = NULL;
    if (!m) return lib_fail(err, MGC_ERR_IO, "%s", msg);
    *out = calloc(1, sizeof **out);
    (*out)->m = m;
    (*out)->path = strdup(path);
    return lib_ok(err);
}

mgc_status mgc_plan_load(const char *path, mgc_plan **out, mgc_error *err) { return load(path, true, out, err); }
mgc_status mgc_plan_read(const char *path, mgc_plan **out, mgc_error *err) { return load(path, false, out, err); }

mgc_status mgc_check_output(const char *path, mgc_error *err) {
    char msg[1024];
    if (!path) return lib_fail(err, MGC_ERR_ARG, "mgc_check_output: path must not be NULL");
    if (ir_check_output(path, msg, sizeof msg)) return lib_fail(err, MGC_ERR_IO, "%s", msg);
    return lib_ok(err);
}

void mgc_free(void *p) { free(p); }

mgc_status mgc_plan_save(const mgc_plan *p, const char *path, mgc_error *err) {
    char msg[1024];
    if (!p || !path) return lib_fail(err, MGC_ERR_ARG, "mgc_plan_save: plan and path must not be NULL");
    if (p->forward_only)
        return lib_fail(err, MGC_ERR_ARG, "mgc_plan_save: a forward_only plan is for describing, not a plan to save");
    if (mgx_write(p->m, path, msg, sizeof msg)) return lib_fail(err, MGC_ERR_IO, "%s", msg);
    return lib_ok(err);
}

void mgc_plan_free(mgc_plan *p) {
    if (!p) return;
    ir_module_free(p->m);
    free(p->path);
    free(p);
}

const char *mgc_plan_model_name(const mgc_plan *p) { return p->m->model_name; }
const char *mgc_plan_path(const mgc_plan *p) { return p->path ? p->path : ""; }
int mgc_plan_devices(const mgc_plan *p) { return p->m->n_devices; }
int64_t mgc_plan_global_batch(const mgc_plan *p) { return p->m->global_batch; }
int mgc_plan_has_train(const mgc_plan *p) { return p->m->has_train; }
int64_t mgc_plan_epochs(const mgc_plan *p) { return p->m->epochs; }
int mgc_plan_input_count(const mgc_plan *p) { return p->m->n_inputs; }
int mgc_plan_output_count(const mgc_plan *p) { return p->m->n_outputs; }
int mgc_plan_metric_count(const mgc_plan *p) { return p->m->n_metrics; }
int64_t mgc_plan_node_count(const mgc_plan *p) { return p->m->g.n; }

const char *mgc_plan_metric_name(const mgc_plan *p, int k) {
    return k >= 0 && k < p->m->n_metrics ? p->m->metrics[k].name : NULL;
}

/* name, dtype and the shape without its batch axis */
static void example_info(const ir_node *n, const char *name, mgc_tensor_info *out) {
    *out = (mgc_tensor_info){.name = name, .dtype = (mgc_dtype)n->dtype, .rank = n->shape.rank - 1};
    for (int d = 1; d < n->shape.rank; d++) out->shape[d - 1] = n->shape.dim[d];
}

mgc_status mgc_plan_input(const mgc_plan *p, int k, mgc_tensor_info *out, mgc_error *err) {
    if (k < 0 || k >= p->m->n_inputs)
        return lib_fail(err, MGC_ERR_ARG, "input %d: the plan has %d inputs", k, p->m->n_inputs);
    const ir_node *n = &p->m->g.nodes[p->m->inputs[k]];
    example_info(n, n->name, out);
    return lib_ok(err);
}

mgc_status mgc_plan_output(const mgc_plan *p, int k, mgc_tensor_info *out, mgc_error *err) {
    if (k < 0 || k >= p->m->n_outputs)
        return lib_fail(err, MGC_ERR_ARG, "output %d: the plan has %d outputs", k, p->m->n_outputs);
    example_info(&p->m->g.nodes[p->m->outputs[k].node], p->m->outputs[k].name, out);
    return lib_ok(err);
}
