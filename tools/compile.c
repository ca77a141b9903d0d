/* compile.c - mgc compile, dump and inspect. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../ir/diag.h"
#include "../ir/order.h"
#include "../ir/outfile.h"
#include "../ir/plan.h"
#include "cli.h"

#ifdef MGC_HAVE_CUDA
int rt_cuda_device_count(char *why, size_t cap);
#endif

int cli_gpu_count(char *why, size_t cap) {
#ifdef MGC_HAVE_CUDA
    return rt_cuda_device_count(why, cap);
#else
    snprintf(why, cap, "this mgc was built without CUDA");
    return 0;
#endif
}

const char *cli_stdlib_dir(void) {
    const char *env = getenv("MGC_STDLIB");
    return env && *env ? env : MGC_STDLIB_DIR;
}

bool cli_parse_int(const char *flag, const char *s, int64_t lo, int64_t hi, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno == ERANGE || v < lo || v > hi || (*s != '-' && *s != '+' && (*s < '0' || *s > '9'))) {
        fprintf(stderr, "mgc: %s: '%s' is not an integer from %lld to %lld\n", flag, s, (long long)lo, (long long)hi);
        return false;
    }
    *out = v;
    return true;
}

/* "cpu:0,cpu:1" -> devices; false after an error. */
static bool parse_devices(const char *list, ir_device **out, int *n) {
    int cap = 1;
    for (const char *p = list; *p; p++) cap += *p == ',';
    ir_device *d = calloc((size_t)cap, sizeof *d);
    char *copy = strdup(list), *save = NULL;
    *n = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char kind[8];
        int used = 0;
        int64_t index;
        if (sscanf(tok, "%3[a-z]:%n", kind, &used) != 1 || !used || (strcmp(kind, "cpu") && strcmp(kind, "gpu"))) {
            fprintf(stderr, "mgc: --devices: '%s' is not a device (expected cpu:N or gpu:N)\n", tok);
            goto fail;
        }
        if (!cli_parse_int("--devices", tok + used, 0, INT32_MAX, &index)) goto fail;
        for (int k = 0; k < *n; k++)
            if (d[k].index == index && !strcmp(d[k].name, kind)) {
                fprintf(stderr, "mgc: --devices: %s is listed twice\n", tok);
                goto fail;
            }
        if (*n && strcmp(d[0].name, kind)) {
            fprintf(stderr, "mgc: --devices: cannot mix cpu and gpu devices in one plan\n");
            goto fail;
        }
        d[(*n)++] = (ir_device){!strcmp(kind, "cpu") ? "cpu" : "gpu", (int)index};
    }
    free(copy);
    if (!*n) {
        fprintf(stderr, "mgc: --devices: empty device list\n");
        free(d);
        return false;
    }
    *out = d;
    return true;
fail:
    free(copy), free(d);
    return false;
}

static ir_device *cpu_devices(int n) {
    ir_device *d = calloc((size_t)n, sizeof *d);
    for (int k = 0; k < n; k++) d[k] = (ir_device){"cpu", k};
    return d;
}

bool cli_resolve_devices(cli_compile_options *o) {
    ir_device *d = NULL;
    int n = 0;
    char why[256] = "";
    if (o->devices) {
        if (!parse_devices(o->devices, &d, &n)) return false;
    } else if (o->replicas > 0) {
        int gpus = cli_gpu_count(why, sizeof why);
        n = o->replicas;
        d = cpu_devices(n);
        if (gpus >= n)
            for (int k = 0; k < n; k++) d[k].name = "gpu";
    } else {
        int gpus = cli_gpu_count(why, sizeof why);
        n = gpus > 0 ? gpus : 1;
        d = cpu_devices(n);
        for (int k = 0; k < gpus; k++) d[k].name = "gpu";
        if (!gpus && !o->pass.quiet) fprintf(stderr, "mgc: no GPU (%s): using one CPU device, cpu:0\n", why);
    }
    if (!strcmp(d[0].name, "gpu")) {
        int gpus = cli_gpu_count(why, sizeof why);
        int missing = -1;
        for (int k = 0; k < n; k++)
            if (d[k].index >= gpus) missing = d[k].index;
        if (missing >= 0) {
            if (o->strict_devices) {
                fprintf(stderr, "mgc: gpu:%d is not available: %s\n", missing, why);
                free(d);
                return false;
            }
            fprintf(stderr, "mgc: gpu:%d is not available: %s; using %d CPU device%s instead\n", missing, why, n,
                    n > 1 ? "s" : "");
            free(d);
            d = cpu_devices(n);
        }
    }
    o->pass.devices = d;
    o->pass.n_devices = n;
    return true;
}

ir_module *cli_compile(const char *path, cli_compile_options *o, FILE *dump_out) {
    ir_diag *d = ir_diag_new(stderr);
    double start = pass_clock();
    ir_module *m = pass_elaborate(path, cli_stdlib_dir(), d, &o->pass);
    if (m) pass_report_time(&o->pass, "elaborate", start, m);
    if (m && !pass_run_all(m, d, &o->pass, o->dump_after, dump_out)) ir_module_free(m), m = NULL;
    if (!m && !ir_diag_errors(d)) fprintf(stderr, "mgc: %s: compilation failed\n", path);
    if (ir_diag_errors(d)) {
        ir_module_free(m), m = NULL;
    }
    ir_diag_free(d);
    return m;
}

ir_module *cli_replan(const ir_module *plan, const ir_device *devices, int n_devices) {
    cli_compile_options o = {0};
    pass_options_default(&o.pass);
    o.pass.devices = devices, o.pass.n_devices = n_devices;
    o.pass.global_batch = plan->global_batch;
    o.pass.cross_device = plan->cross_device;
    o.pass.bucket_bytes = plan->bucket_bytes;
    o.pass.sparse_grads = plan->sparse_grads;
    o.pass.no_fuse = plan->no_fuse;
    o.pass.sources = plan->sources, o.pass.n_sources = plan->n_sources;
    return cli_compile(plan->source_file, &o, NULL);
}

ir_module *cli_load_plan(const char *path) {
    char err[512];
    ir_module *m = mgx_read(path, err, sizeof err);
    if (!m) fprintf(stderr, "mgc: %s\n", err);
    return m;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

enum { OPT_DEVICES = 256, OPT_REPLICAS, OPT_GLOBAL_BATCH, OPT_XDEV, OPT_BUCKET, OPT_STRICT, OPT_DUMP_AFTER, OPT_TIME, OPT_SPARSE, OPT_NO_FUSE };

static const char compile_help[] =
    "usage: mgc compile MODEL.mg [-o PLAN.mgx] [options]\n"
    "  -o PLAN.mgx               output (default: MODEL.mgx beside the input)\n"
    "  --devices LIST            e.g. cpu:0,cpu:1 or gpu:0,gpu:1 (default: every GPU, else cpu:0)\n"
    "  --replicas N              N devices of the default kind\n"
    "  --global-batch B          override the model's batch (split across replicas)\n"
    "  --cross-device-ops ALG    ring (default), one-device or hierarchical\n"
    "  --bucket-bytes N          a gradient bucket closes once it holds N bytes\n"
    "                            (default 4194304; the first bucket at 1 MiB)\n"
    "  --sparse-grads MODE       auto (default), always or never: exchange an embedding table's\n"
    "                            gradient as (ids, rows) instead of all-reducing the table\n"
    "  --strict-devices          fail instead of falling back to CPU devices\n"
    "  --no-fuse                 keep every op its own kernel (no fusion pass changes the graph)\n"
    "  --dump-after PASS         print the IR after PASS (elaborate, shapes, autodiff, optimizer,\n"
    "                            epilogue, dce, fuse, replicate, schedule, memplan)\n"
    "  --time-passes             print each pass's wall time and node count (stderr)\n";

/* Parses the options every compiling command shares; returns the index of
 * the first operand or -1 after an error (-2: help printed). */
static int parse_compile_options(int argc, char **argv, cli_compile_options *o, const char **out,
                                 const char *help, const char **format, bool *replicated) {
    static const struct option longs[] = {
        {"devices", required_argument, 0, OPT_DEVICES}, {"replicas", required_argument, 0, OPT_REPLICAS},
        {"global-batch", required_argument, 0, OPT_GLOBAL_BATCH},
        {"cross-device-ops", required_argument, 0, OPT_XDEV}, {"bucket-bytes", required_argument, 0, OPT_BUCKET},
        {"strict-devices", no_argument, 0, OPT_STRICT}, {"dump-after", required_argument, 0, OPT_DUMP_AFTER},
        {"time-passes", no_argument, 0, OPT_TIME}, {"sparse-grads", required_argument, 0, OPT_SPARSE},
        {"no-fuse", no_argument, 0, OPT_NO_FUSE},
        {"format", required_argument, 0, 'f'}, {"replicated", no_argument, 0, 'r'},
        {"output", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    pass_options_default(&o->pass);
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "o:f:rh", longs, NULL)) != -1;) {
        int64_t v;
        switch (c) {
        case 'o': if (out) { *out = optarg; break; } goto bad;
        case 'f': if (format) { *format = optarg; break; } goto bad;
        case 'r': if (replicated) { *replicated = true; break; } goto bad;
        case 'h': fputs(help, stdout); return -2;
        case OPT_DEVICES: o->devices = optarg; break;
        case OPT_STRICT: o->strict_devices = true; break;
        case OPT_DUMP_AFTER: o->dump_after = optarg; break;
        case OPT_TIME: o->pass.time_out = stderr; break;
        case OPT_NO_FUSE: o->pass.no_fuse = true; break;
        case OPT_REPLICAS:
            if (!cli_parse_int("--replicas", optarg, 1, 1024, &v)) return -1;
            o->replicas = (int)v;
            break;
        case OPT_GLOBAL_BATCH:
            if (!cli_parse_int("--global-batch", optarg, 1, INT64_C(1) << 62, &o->pass.global_batch)) return -1;
            break;
        case OPT_BUCKET:
            if (!cli_parse_int("--bucket-bytes", optarg, 1, INT64_C(1) << 62, &o->pass.bucket_bytes)) return -1;
            break;
        case OPT_XDEV: {
            int k = 0;
            while (k < XDEV_COUNT && strcmp(optarg, ir_cross_device_names[k])) k++;
            if (k == XDEV_COUNT) {
                fprintf(stderr, "mgc: --cross-device-ops: '%s' is not one of ring, one-device, hierarchical\n", optarg);
                return -1;
            }
            o->pass.cross_device = (ir_cross_device)k;
            break;
        }
        case OPT_SPARSE: {
            int k = 0;
            while (k < SPARSE_COUNT && strcmp(optarg, ir_sparse_grads_names[k])) k++;
            if (k == SPARSE_COUNT) {
                fprintf(stderr, "mgc: --sparse-grads: '%s' is not one of auto, always, never\n", optarg);
                return -1;
            }
            o->pass.sparse_grads = (ir_sparse_grads)k;
            break;
        }
        default:
        bad:
            fputs(help, stderr);
            return -1;
        }
    }
    if (o->dump_after) {
        bool known = !strcmp(o->dump_after, "elaborate");
        for (int k = 0; k < pass_pipeline_count; k++) known |= !strcmp(o->dump_after, pass_pipeline[k].name);
        if (!known) {
            fprintf(stderr, "mgc: --dump-after: no pass named '%s'\n", o->dump_after);
            return -1;
        }
    }
    if (optind != argc - 1) {
        fputs(help, stderr);
        return -1;
    }
    return optind;
}

int cmd_compile(int argc, char **argv) {
    cli_compile_options o;
    const char *out = NULL;
    int k = parse_compile_options(argc, argv, &o, &out, compile_help, NULL, NULL);
    if (k < 0) return k == -2 ? 0 : 1;
    const char *src = argv[k];
    char buf[4096], err[512];
    if (!out) {
        size_t n = strlen(src);
        if (ends_with(src, ".mg")) n -= 3;
        snprintf(buf, sizeof buf, "%.*s.mgx", (int)n, src);
        out = buf;
    }
    if (ir_check_output(out, err, sizeof err)) { /* before any work */
        fprintf(stderr, "mgc: %s\n", err);
        return 1;
    }
    if (!cli_resolve_devices(&o)) return 1;
    double start = pass_clock();
    ir_module *m = cli_compile(src, &o, stdout);
    free((void *)o.pass.devices);
    if (!m) return 1;
    double write_start = pass_clock();
    int rc = mgx_write(m, out, err, sizeof err);
    pass_report_time(&o.pass, "write", write_start, m);
    pass_report_time(&o.pass, "total", start, m);
    if (rc) fprintf(stderr, "mgc: %s\n", err);
    ir_module_free(m);
    return rc ? 1 : 0;
}

static const char dump_help[] =
    "usage: mgc dump MODEL.mg|PLAN.mgx [--format text|dot|svg] [--replicated] [compile options]\n"
    "  A model is shown as elaborated (one replica, forward) unless --replicated,\n"
    "  which compiles it fully; a plan is shown as compiled.\n";

/* Pipes Graphviz output through `dot -Tsvg` to stdout. A dot that is
 * missing or stops reading makes the writes fail (SIGPIPE is ignored
 * meanwhile), and its exit status says why. */
static int print_svg(const ir_module *m, bool replicated) {
    fflush(stdout);
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);
    FILE *p = popen("dot -Tsvg", "w");
    if (!p) {
        perror("mgc: cannot run dot (Graphviz)");
        signal(SIGPIPE, old);
        return 1;
    }
    ir_print_dot(m, p, replicated);
    int status = pclose(p);
    signal(SIGPIPE, old);
    if (status == -1 || !WIFEXITED(status))
        fprintf(stderr, "mgc: dot (Graphviz) did not finish (status %d)\n", status);
    else if (WEXITSTATUS(status) == 127)
        fprintf(stderr, "mgc: cannot run dot: is Graphviz installed? (--format dot prints the graph without it)\n");
    else if (WEXITSTATUS(status))
        fprintf(stderr, "mgc: dot (Graphviz) failed with exit status %d\n", WEXITSTATUS(status));
    return status ? 1 : 0;
}

int cmd_dump(int argc, char **argv) {
    cli_compile_options o;
    const char *format = "text";
    bool replicated = false;
    int k = parse_compile_options(argc, argv, &o, NULL, dump_help, &format, &replicated);
    if (k < 0) return k == -2 ? 0 : 1;
    if (strcmp(format, "text") && strcmp(format, "dot") && strcmp(format, "svg")) {
        fprintf(stderr, "mgc: --format: '%s' is not one of text, dot, svg\n", format);
        return 1;
    }
    ir_module *m;
    if (ends_with(argv[k], ".mgx")) {
        m = cli_load_plan(argv[k]);
    } else if (replicated) {
        if (!cli_resolve_devices(&o)) return 1;
        m = cli_compile(argv[k], &o, stdout);
        free((void *)o.pass.devices);
    } else {
        ir_diag *d = ir_diag_new(stderr);
        m = pass_elaborate(argv[k], cli_stdlib_dir(), d, &o.pass);
        if (m && (!pass_shapes(m, d, &o.pass) || ir_diag_errors(d))) ir_module_free(m), m = NULL;
        ir_diag_free(d);
    }
    if (!m) return 1;
    int rc = 0;
    if (!strcmp(format, "text")) ir_print(m, stdout);
    else if (!strcmp(format, "dot")) ir_print_dot(m, stdout, replicated);
    else rc = print_svg(m, replicated);
    ir_module_free(m);
    return rc;
}

static void print_bytes(int64_t b) {
    if (b >= INT64_C(1) << 40) printf("%.2f TiB", (double)b / (double)(INT64_C(1) << 40));
    else if (b >= 1 << 30) printf("%.2f GiB", (double)b / (1 << 30));
    else if (b >= 1 << 20) printf("%.2f MiB", (double)b / (1 << 20));
    else if (b >= 1 << 10) printf("%.1f KiB", (double)b / (1 << 10));
    else printf("%lld B", (long long)b);
}

/* 693962 -> "693,962" */
static const char *thousands(int64_t v, char *buf) {
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%lld", (long long)v), k = 0;
    for (int i = 0; i < n; i++) {
        if (i && (n - i) % 3 == 0) buf[k++] = ',';
        buf[k++] = tmp[i];
    }
    buf[k] = 0;
    return buf;
}

static void inspect(const char *path, const ir_module *m) {
    char t[96], num[32];
    printf("plan          %s (format version %d)\n", path, MGX_VERSION);
    printf("model         %s (%s)\n", m->model_name, m->source_file ? m->source_file : "?");
    printf("inputs       ");
    for (int k = 0; k < m->n_inputs; k++) {
        const ir_node *n = &m->g.nodes[m->inputs[k]];
        printf(" %s: %s", n->name, ir_type_str(n->dtype, &n->shape, t, sizeof t));
    }
    printf("   (global batch %lld = %lld per replica x %d)\n", (long long)m->global_batch,
           (long long)m->batch_per_replica, m->n_devices);
    if (m->n_outputs) printf("outputs      ");
    for (int k = 0; k < m->n_outputs; k++) { /* as predict writes them: every example */
        ir_shape s = m->g.nodes[m->outputs[k].node].shape;
        s.dim[0] = m->global_batch;
        printf(" %s: %s%s", m->outputs[k].name, ir_type_str(m->g.nodes[m->outputs[k].node].dtype, &s, t, sizeof t),
               k < m->n_outputs - 1 ? "" : m->n_outputs > 1 ? "   (predict -o OUT.npy writes OUT.NAME.npy each)\n" : "\n");
    }
    printf("devices      ");
    for (int d = 0; d < m->n_devices; d++) printf(" %s:%d", m->devices[d].name, m->devices[d].index);
    printf("   (cross-device ops: %s)\n", ir_cross_device_names[m->cross_device]);
    if (m->has_train) {
        const ir_optimizer *o = &m->opt;
        const ir_lr_schedule *sc = &o->schedule;
        printf("optimizer     %s  learning_rate=", ir_optimizer_names[o->kind]);
        if (sc->kind == LR_CONSTANT) printf("%g", o->lr);
        else if (sc->kind == LR_COSINE_DECAY)
            printf("cosine_decay(%g, decay_steps=%lld, alpha=%g, warmup_target=%g, warmup_steps=%lld)", o->lr,
                   (long long)sc->decay_steps, sc->alpha, sc->warmup_target, (long long)sc->warmup_steps);
        else if (sc->kind == LR_EXPONENTIAL_DECAY)
            printf("exponential_decay(%g, decay_steps=%lld, decay_rate=%g, staircase=%s)", o->lr,
                   (long long)sc->decay_steps, sc->decay_rate, sc->staircase ? "true" : "false");
        else {
            printf("piecewise_constant(boundaries=[");
            for (int k = 0; k < sc->n_boundaries; k++) printf("%s%lld", k ? ", " : "", (long long)sc->boundaries[k]);
            printf("], values=[");
            for (int k = 0; k <= sc->n_boundaries; k++) printf("%s%g", k ? ", " : "", sc->values[k]);
            printf("])");
        }
        bool adam_like = o->kind == OPT_ADAM || o->kind == OPT_ADAMW || o->kind == OPT_NADAM || o->kind == OPT_LAMB;
        if (adam_like) printf(" beta1=%g beta2=%g epsilon=%g", o->beta1, o->beta2, o->epsilon);
        if (o->kind == OPT_SGD) printf(" momentum=%g nesterov=%s", o->momentum, o->nesterov ? "true" : "false");
        if (o->kind == OPT_RMSPROP) printf(" rho=%g momentum=%g epsilon=%g", o->rho, o->momentum, o->epsilon);
        if (o->kind == OPT_ADAGRAD) printf(" initial_accumulator_value=%g epsilon=%g", o->initial_accumulator_value, o->epsilon);
        if (o->kind == OPT_ADAMW || o->weight_decay > 0) printf(" weight_decay=%g", o->weight_decay);
        if (o->clipnorm > 0) printf(" clipnorm=%g", o->clipnorm);
        if (o->global_clipnorm > 0) printf(" global_clipnorm=%g", o->global_clipnorm);
        printf("\n");
        if (m->epochs) printf("epochs        %lld (the train block's; --epochs overrides)\n", (long long)m->epochs);
    }
    int width = 24; /* the name column: the longest param or state name */
    for (int i = 0; i < m->g.n; i++)
        if ((m->g.nodes[i].op == OP_PARAM || m->g.nodes[i].op == OP_STATE) && m->g.nodes[i].name &&
            (int)strlen(m->g.nodes[i].name) > width)
            width = (int)strlen(m->g.nodes[i].name);
    printf("params\n");
    int64_t total = 0;
    for (int p = 0; p < m->n_params; p++) {
        const ir_node *n = &m->g.nodes[m->params[p]];
        int64_t count = ir_shape_numel(&n->shape);
        total += count;
        printf("  %-*s %-20s %12s\n", width, n->name, ir_type_str(n->dtype, &n->shape, t, sizeof t), thousands(count, num));
    }
    printf("trainable parameters: %s\n", thousands(total, num));
    int64_t fixed = 0; /* state: moving statistics, set by the forward pass (Keras' non-trainable count) */
    for (int i = 0; i < m->g.n; i++) {
        const ir_node *n = &m->g.nodes[i];
        if (n->op != OP_STATE || n->device > 0) continue;
        int64_t count = ir_shape_numel(&n->shape);
        if (!fixed) printf("state (non-trainable)\n");
        fixed += count;
        printf("  %-*s %-20s %12s\n", width, n->name, ir_type_str(n->dtype, &n->shape, t, sizeof t), thousands(count, num));
    }
    printf("non-trainable parameters: %s\n", thousands(fixed, num));
    if (m->n_buckets) {
        printf("gradient buckets (each closes at ");
        print_bytes(m->bucket_bytes);
        printf("%s; in the order the backward pass fills them)\n", m->bucket_bytes > (1 << 20) ? ", the first at 1 MiB" : "");
    }
    for (int b = 0; b < m->n_buckets; b++) {
        printf("  bucket %d: ", b);
        print_bytes(m->buckets[b].bytes);
        printf(",");
        for (int j = 0; j < m->buckets[b].n_grads; j++) printf(" %s", m->g.nodes[m->buckets[b].grads[j]].name);
        printf("\n");
    }
    ir_sparse_info si;
    for (int k = 0; ir_sparse_exchange(m, k, &si); k++) {
        if (!k) printf("sparse gradients (--sparse-grads %s; bytes each replica sends per step)\n",
                       ir_sparse_grads_names[m->sparse_grads]);
        printf("  %s: ids and rows ", si.param);
        print_bytes(si.sparse_bytes);
        printf(" instead of the table's ");
        print_bytes(si.dense_bytes);
        printf("\n");
    }
    printf("memory per device (the planned arena with reuse; without: variables and every tensor that owns bytes, "
           "each in bytes of its own)\n");
    for (int d = 0; d < m->n_devices; d++) {
        printf("  %s:%d  planned with reuse ", m->devices[d].name, m->devices[d].index);
        print_bytes(m->arena_bytes ? m->arena_bytes[d] : 0);
        printf("   without reuse ");
        print_bytes(m->unplanned_bytes ? m->unplanned_bytes[d] : 0);
        printf("\n");
    }
    if (m->n_devices)
        printf("work per replica (matmul and convolution flops, forward and backward): train step %.3f GFLOP, "
               "predict %.3f GFLOP\n",
               1e-9 * (double)ir_step_flops(m, 0, 0), 1e-9 * (double)ir_step_flops(m, 2, 0));
    int64_t pairs = 0; /* cli_load_plan verified the plan, the race check included; this counts its work */
    ir_check_races(m, NULL, NULL, &pairs);
    printf("checked       race-free: %s pairs of nodes on different streams touch the same bytes, each pair\n"
           "              ordered by events; no value is overwritten before its last read (docs/runtime.md)\n",
           thousands(pairs, num));
}

int cmd_inspect(int argc, char **argv) {
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: mgc inspect PLAN.mgx\n");
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: mgc inspect PLAN.mgx\n");
        return 1;
    }
    ir_module *m = cli_load_plan(argv[1]);
    if (!m) return 1;
    inspect(argv[1], m);
    ir_module_free(m);
    return 0;
}
