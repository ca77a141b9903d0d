/* compile.c - mgc compile, dump and inspect, through libmgc (include/mgc.h):
 * the CLI resolves its default devices, prints what the library reports
 * (diagnostics, notes and pass timings on stderr, IR dumps on stdout) and
 * writes the plan. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

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

void cli_print_error(const mgc_error *err) {
    /* libmgc names its option ("devices: ..."), the CLI its flag */
    fprintf(stderr, "mgc: %s%s\n", !strncmp(err->message, "devices: ", 9) ? "--" : "", err->message);
}

/* Options of `mgc compile` that decide the plan. */
typedef struct {
    const char *devices;   /* --devices */
    int replicas;          /* --replicas */
    bool diag_seen;        /* the library reported diagnostics */
    char list[64 * 1024];  /* the devices resolved from --replicas or the default */
    mgc_compile_options api;
} compile_options;

/* What libmgc reports while compiling, printed as the CLI always did. */
static void on_text(mgc_text_kind kind, const char *text, void *user) {
    compile_options *o = user;
    if (kind == MGC_TEXT_DUMP) fputs(text, stdout);
    else fprintf(stderr, "%s%s", kind == MGC_TEXT_NOTE ? "mgc: " : "", text);
    if (kind == MGC_TEXT_DIAG) o->diag_seen = true;
}

/* The devices: --devices as given (libmgc parses and checks them, falling
 * back from absent GPUs with a note), else --replicas N devices of the
 * default kind (GPUs when there are N), else every GPU, else cpu:0. */
static void resolve_devices(compile_options *o) {
    char why[256] = "";
    if (o->devices) {
        o->api.devices = o->devices;
        return;
    }
    int gpus = mgc_gpu_count(why, sizeof why), n = o->replicas > 0 ? o->replicas : gpus > 0 ? gpus : 1;
    const char *kind = (o->replicas > 0 && gpus >= n) || (!o->replicas && gpus > 0) ? "gpu" : "cpu";
    if (!o->replicas && !gpus) fprintf(stderr, "mgc: no GPU (%s): using one CPU device, cpu:0\n", why);
    size_t at = 0;
    for (int k = 0; k < n; k++) at += (size_t)snprintf(o->list + at, sizeof o->list - at, "%s%s:%d", k ? "," : "", kind, k);
    o->api.devices = o->list;
}

/* Compiles path; NULL after printing why. */
static mgc_plan *compile(const char *path, compile_options *o) {
    mgc_plan *p = NULL;
    mgc_error err;
    if (!mgc_compile_file(path, &o->api, &p, &err)) return p;
    /* diagnostics were printed as they came; a failure without any says so */
    if (err.status != MGC_ERR_COMPILE || !o->diag_seen) cli_print_error(&err);
    return NULL;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A --time-passes line for a step of the CLI's own (as libmgc's). */
static void report_time(const compile_options *o, const char *name, double since, const mgc_plan *p) {
    if (o->api.time_passes)
        fprintf(stderr, "  %-10s %9.2f ms %9d nodes\n", name, 1e3 * (now() - since), p ? (int)mgc_plan_node_count(p) : 0);
}

/* Reads a plan, printing "mgc: <error>" on failure. */
static mgc_plan *read_plan(const char *path) {
    mgc_plan *p = NULL;
    mgc_error err;
    if (mgc_plan_read(path, &p, &err)) cli_print_error(&err);
    return p;
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
    "                            cse, epilogue, dce, fuse, replicate, schedule, memplan)\n"
    "  --time-passes             print each pass's wall time and node count (stderr)\n";

/* Parses the options every compiling command shares; returns the index of
 * the first operand or -1 after an error (-2: help printed). */
static int parse_compile_options(int argc, char **argv, compile_options *o, const char **out,
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
    mgc_compile_options_init(&o->api);
    o->api.stdlib_dir = cli_stdlib_dir();
    o->api.text = on_text, o->api.text_user = o;
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "o:f:rh", longs, NULL)) != -1;) {
        int64_t v;
        switch (c) {
        case 'o': if (out) { *out = optarg; break; } goto bad;
        case 'f': if (format) { *format = optarg; break; } goto bad;
        case 'r': if (replicated) { *replicated = true; break; } goto bad;
        case 'h': fputs(help, stdout); return -2;
        case OPT_DEVICES: o->devices = optarg; break;
        case OPT_STRICT: o->api.strict_devices = 1; break;
        case OPT_DUMP_AFTER: o->api.dump_after = optarg; break;
        case OPT_TIME: o->api.time_passes = 1; break;
        case OPT_NO_FUSE: o->api.no_fuse = 1; break;
        case OPT_REPLICAS:
            if (!cli_parse_int("--replicas", optarg, 1, 1024, &v)) return -1;
            o->replicas = (int)v;
            break;
        case OPT_GLOBAL_BATCH:
            if (!cli_parse_int("--global-batch", optarg, 1, INT64_C(1) << 62, &o->api.global_batch)) return -1;
            break;
        case OPT_BUCKET:
            if (!cli_parse_int("--bucket-bytes", optarg, 1, INT64_C(1) << 62, &o->api.bucket_bytes)) return -1;
            break;
        case OPT_XDEV:
            if (strcmp(optarg, "ring") && strcmp(optarg, "one-device") && strcmp(optarg, "hierarchical")) {
                fprintf(stderr, "mgc: --cross-device-ops: '%s' is not one of ring, one-device, hierarchical\n", optarg);
                return -1;
            }
            o->api.cross_device = optarg;
            break;
        case OPT_SPARSE:
            if (strcmp(optarg, "auto") && strcmp(optarg, "always") && strcmp(optarg, "never")) {
                fprintf(stderr, "mgc: --sparse-grads: '%s' is not one of auto, always, never\n", optarg);
                return -1;
            }
            o->api.sparse_grads = optarg;
            break;
        default:
        bad:
            fputs(help, stderr);
            return -1;
        }
    }
    if (o->api.dump_after) {
        bool known = false;
        for (int k = 0; mgc_pass_name(k); k++) known |= !strcmp(o->api.dump_after, mgc_pass_name(k));
        if (!known) {
            fprintf(stderr, "mgc: --dump-after: no pass named '%s'\n", o->api.dump_after);
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
    compile_options o;
    const char *out = NULL;
    int k = parse_compile_options(argc, argv, &o, &out, compile_help, NULL, NULL);
    if (k < 0) return k == -2 ? 0 : 1;
    const char *src = argv[k];
    char buf[4096];
    mgc_error err;
    if (!out) {
        size_t n = strlen(src);
        if (ends_with(src, ".mg")) n -= 3;
        snprintf(buf, sizeof buf, "%.*s.mgx", (int)n, src);
        out = buf;
    }
    if (mgc_check_output(out, &err)) { /* before any work */
        cli_print_error(&err);
        return 1;
    }
    resolve_devices(&o);
    double start = now();
    mgc_plan *p = compile(src, &o);
    if (!p) return 1;
    double write_start = now();
    int rc = mgc_plan_save(p, out, &err);
    report_time(&o, "write", write_start, p);
    report_time(&o, "total", start, p);
    if (rc) cli_print_error(&err);
    mgc_plan_free(p);
    return rc ? 1 : 0;
}

static const char dump_help[] =
    "usage: mgc dump MODEL.mg|PLAN.mgx [--format text|dot|svg] [--replicated] [compile options]\n"
    "  A model is shown as elaborated (one replica, forward) unless --replicated,\n"
    "  which compiles it fully; a plan is shown as compiled.\n";

/* Pipes Graphviz output through `dot -Tsvg` to stdout. A dot that is
 * missing or stops reading makes the writes fail (SIGPIPE is ignored
 * meanwhile), and its exit status says why. */
static int print_svg(const char *dot) {
    fflush(stdout);
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);
    FILE *p = popen("dot -Tsvg", "w");
    if (!p) {
        perror("mgc: cannot run dot (Graphviz)");
        signal(SIGPIPE, old);
        return 1;
    }
    fputs(dot, p);
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
    compile_options o;
    const char *format = "text";
    bool replicated = false;
    int k = parse_compile_options(argc, argv, &o, NULL, dump_help, &format, &replicated);
    if (k < 0) return k == -2 ? 0 : 1;
    if (strcmp(format, "text") && strcmp(format, "dot") && strcmp(format, "svg")) {
        fprintf(stderr, "mgc: --format: '%s' is not one of text, dot, svg\n", format);
        return 1;
    }
    mgc_plan *p;
    if (ends_with(argv[k], ".mgx")) {
        p = read_plan(argv[k]);
    } else if (replicated) {
        resolve_devices(&o);
        p = compile(argv[k], &o);
    } else { /* as elaborated: one replica, forward, no device (a failure says only its diagnostics) */
        mgc_error err;
        o.api.forward_only = 1, o.api.dump_after = NULL, o.api.time_passes = 0;
        p = NULL;
        if (mgc_compile_file(argv[k], &o.api, &p, &err) && err.status != MGC_ERR_COMPILE) cli_print_error(&err);
    }
    if (!p) return 1;
    char *text = NULL;
    mgc_error err;
    mgc_describe_kind kind = !strcmp(format, "text") ? MGC_DESCRIBE_IR
                             : replicated             ? MGC_DESCRIBE_DOT_REPLICATED
                                                      : MGC_DESCRIBE_DOT;
    int rc = mgc_plan_describe(p, kind, &text, &err) ? 1 : 0;
    if (rc) cli_print_error(&err);
    else if (!strcmp(format, "svg")) rc = print_svg(text);
    else fputs(text, stdout);
    mgc_free(text);
    mgc_plan_free(p);
    return rc;
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
    mgc_plan *p = read_plan(argv[1]);
    if (!p) return 1;
    char *text = NULL;
    mgc_error err;
    int rc = mgc_plan_describe(p, MGC_DESCRIBE_INSPECT, &text, &err) ? 1 : 0;
    if (rc) cli_print_error(&err);
    else fputs(text, stdout);
    mgc_free(text);
    mgc_plan_free(p);
    return rc;
}
