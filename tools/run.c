/* run.c - mgc run, eval and predict: bind a plan to devices and data. They
 * still drive the runtime directly (the mpirun workers, their agreement and
 * the training options libmgc lacks: docs/api.md, "The CLI onto the API"). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <zlib.h>

#include "../ir/plan.h"
#include "../runtime/agree.h"
#include "../runtime/mpi.h"
#include "../runtime/resume.h"
#include "../runtime/trace.h"
#include "../runtime/train.h"
#include "cli.h"
#include "run_impl.h"

enum { O_EPOCHS = 256, O_STEPS, O_SEED, O_SAVE, O_LOAD, O_HISTORY, O_DATA, O_INPUT, O_THREADS, O_TIMEOUT,
       O_CHECK_REPLICAS, O_CHECK_NUMERICS, O_NO_CUDA_GRAPHS, O_JSON, O_STRICT, O_CKPT_DIR, O_SAVE_EVERY, O_KEEP, O_CONTEXT,
       O_TRACE, O_TRACE_STEPS, O_PROFILE };

/* mgc run's status when a signal stopped it after a checkpoint (EX_TEMPFAIL:
 * run the same command again to resume). */
enum { EXIT_INTERRUPTED = 75 };

static const char run_help[] =
    "usage: mgc run PLAN.mgx [options]\n"
    "  --epochs E                 train until E epochs are done in all (default: the train\n"
    "                             block's epochs, else 1)\n"
    "  --steps S                  train until the optimizer has taken S steps in all\n"
    "                             (both count from step 0: a resumed run trains what is left)\n"
    "  --seed N                   initial weights and shuffling (default 1)\n"
    "  --load CKPT                start from a checkpoint (resumes its step count)\n"
    "  --save CKPT                write the trained variables (safetensors)\n"
    "  --checkpoint-dir DIR       checkpoints DIR/step-N.safetensors; a run resumes from the newest\n"
    "  --save-every N[steps|epochs]  how often (default: every epoch; always at the end)\n"
    "  --keep K                   checkpoints kept in DIR, the newest (default 3)\n"
    "  --history FILE             one JSON object per epoch, the file rewritten whole at each epoch\n"
    "  --data DIR                 IDX files train-*/t10k-* (default " RT_DEFAULT_DATA_DIR ")\n"
    "  --data text:PATH           the bytes of a file (or of a directory's text files) as tokens 0..255:\n"
    "                             the model's two i32 inputs [batch, T] get T bytes and the T bytes\n"
    "                             after them; the last 10% is the validation part (text: alone is\n"
    "                             " RT_DEFAULT_TEXT_DIR ")\n"
    "  --context T                window of text data (default: the model's T; must equal it)\n"
    "  --input NAME=FILE          bind a model input to an IDX or NPY file (instead of --data)\n"
    "  --threads-per-device T     CPU threads of each device's kernels (default: the cores this process\n"
    "                             may use / its devices, at least 1)\n"
    "  --collective-timeout S     seconds a collective waits for every device (default 60)\n"
    "  --check-replicas K         compare every replica's variables bit for bit every K steps\n"
    "  --check-numerics           stop at the first op whose output holds NaN or Inf, naming it\n"
    "  --no-cuda-graphs           GPU plans: run each train step as issued, not as a CUDA graph\n"
    "  --strict-devices           fail if the plan's GPUs are not here (default: run on CPU devices)\n"
    "  --trace FILE.json          a Chrome/Perfetto trace of some steps: a track per device stream\n"
    "                             (compute, comm), every op and collective (under mpirun: FILE.rankN.json)\n"
    "  --trace-steps A:B          the steps of this run traced, 1 = its first (default 2:4)\n"
    "  --profile                  after training, the top ops by time over every step after the first\n"
    "SIGINT or SIGTERM: the step in progress finishes, a checkpoint is written (DIR, else --save) and\n"
    "mgc exits with status 75; a second signal ends it at once.\n";
static const char eval_help[] =
    "usage: mgc eval PLAN.mgx --load CKPT [--json] [--data DIR | --data text:PATH [--context T] |\n"
    "                                            --input NAME=FILE ...]\n"
    "  text data: evaluates on the validation part (the last 10% of the bytes)\n";
static const char predict_help[] =
    "usage: mgc predict PLAN.mgx --load CKPT --input NAME=FILE ... -o OUT.npy\n"
    "  writes each model output for every example, as .npy: a model with one output writes\n"
    "  OUT.npy itself; a model with several ('output NAME = ...') writes OUT.NAME.npy for each\n"
    "  (-o preds.npy -> preds.logits.npy, preds.boxes.npy; a name without .npy gets .NAME.npy)\n";

/* Limits of the numeric options (docs/errors.md, resource limits). */
#define MAX_EPOCHS INT64_C(1000000000)     /* x steps per epoch (< 2^31) stays below 2^63 */
#define MAX_STEPS (INT64_C(1) << 62)
#define MAX_TIMEOUT 86400.0                /* a day */

/* --save-every N, Nsteps or Nepochs */
static bool parse_every(const char *s, run_options *o) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    o->save_every_epochs = !strcmp(end, "epochs") || !strcmp(end, "epoch");
    if (end == s || v < 1 || v > MAX_STEPS || errno == ERANGE ||
        (*end && !o->save_every_epochs && strcmp(end, "steps") && strcmp(end, "step"))) {
        fprintf(stderr, "mgc: --save-every: '%s' is not N, Nsteps or Nepochs with N >= 1\n", s);
        return false;
    }
    o->save_every = v;
    return true;
}

/* --trace-steps A:B, 1 <= A <= B, at most MAX_TRACE_STEPS steps */
#define MAX_TRACE_STEPS 1000
static bool parse_trace_steps(const char *s, run_options *o) {
    char *mid, *end;
    errno = 0;
    long long a = strtoll(s, &mid, 10), b = *mid == ':' ? strtoll(mid + 1, &end, 10) : 0;
    if (mid == s || *mid != ':' || end == mid + 1 || *end || errno == ERANGE || a < 1 || b < a ||
        b - a >= MAX_TRACE_STEPS) {
        fprintf(stderr, "mgc: --trace-steps: '%s' is not A:B with 1 <= A <= B and at most %d steps\n", s,
                MAX_TRACE_STEPS);
        return false;
    }
    o->trace_from = a, o->trace_to = b, o->trace_steps_given = true;
    return true;
}

/* Returns the operand index, -1 on error, -2 after --help. */
static int parse_run_options(int argc, char **argv, run_options *o, const char *help) {
    static const struct option longs[] = {
        {"epochs", required_argument, 0, O_EPOCHS}, {"steps", required_argument, 0, O_STEPS},
        {"seed", required_argument, 0, O_SEED}, {"save", required_argument, 0, O_SAVE},
        {"load", required_argument, 0, O_LOAD}, {"history", required_argument, 0, O_HISTORY},
        {"data", required_argument, 0, O_DATA}, {"input", required_argument, 0, O_INPUT},
        {"threads-per-device", required_argument, 0, O_THREADS},
        {"collective-timeout", required_argument, 0, O_TIMEOUT},
        {"check-replicas", required_argument, 0, O_CHECK_REPLICAS},
        {"check-numerics", no_argument, 0, O_CHECK_NUMERICS},
        {"no-cuda-graphs", no_argument, 0, O_NO_CUDA_GRAPHS}, {"json", no_argument, 0, O_JSON},
        {"strict-devices", no_argument, 0, O_STRICT}, {"checkpoint-dir", required_argument, 0, O_CKPT_DIR},
        {"save-every", required_argument, 0, O_SAVE_EVERY}, {"keep", required_argument, 0, O_KEEP},
        {"context", required_argument, 0, O_CONTEXT},
        {"trace", required_argument, 0, O_TRACE}, {"trace-steps", required_argument, 0, O_TRACE_STEPS},
        {"profile", no_argument, 0, O_PROFILE},
        {"output", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    *o = (run_options){.epochs = 1, .seed = 1, .threads = 0, .timeout = 60, .keep = 3, .trace_from = 2, .trace_to = 4};
    optind = 1;
    int64_t v;
    for (int c; (c = getopt_long(argc, argv, "o:h", longs, NULL)) != -1;) {
        switch (c) {
        case 'h': fputs(help, stdout); return -2;
        case 'o': o->out = optarg; break;
        case O_EPOCHS:
            if (!cli_parse_int("--epochs", optarg, 1, MAX_EPOCHS, &o->epochs)) return -1;
            o->epochs_given = true;
            break;
        case O_STEPS: if (!cli_parse_int("--steps", optarg, 1, MAX_STEPS, &o->steps)) return -1; break;
        case O_SEED:
            if (!cli_parse_int("--seed", optarg, 0, INT64_MAX, &v)) return -1;
            o->seed = (uint64_t)v, o->seed_given = true;
            break;
        case O_THREADS:
            if (!cli_parse_int("--threads-per-device", optarg, 1, 4 * sysconf(_SC_NPROCESSORS_ONLN), &v)) return -1;
            o->threads = (int)v;
            break;
        case O_CHECK_REPLICAS:
            if (!cli_parse_int("--check-replicas", optarg, 1, INT32_MAX, &v)) return -1;
            o->check_replicas = (int)v;
            break;
        case O_TIMEOUT: {
            char *end;
            o->timeout = strtod(optarg, &end);
            if (end == optarg || *end || !(o->timeout > 0 && o->timeout <= MAX_TIMEOUT)) {
                fprintf(stderr, "mgc: --collective-timeout: '%s' is not a number of seconds above 0 and at most %.0f\n",
                        optarg, MAX_TIMEOUT);
                return -1;
            }
            break;
        }
        case O_SAVE: o->save = optarg; break;
        case O_LOAD: o->load = optarg; break;
        case O_HISTORY: o->history = optarg; break;
        case O_DATA: o->data = optarg; break;
        case O_INPUT:
            if (!strchr(optarg, '=')) {
                fprintf(stderr, "mgc: --input: expected NAME=FILE, got '%s'\n", optarg);
                return -1;
            }
            if (o->n_bindings == IR_MAX_INPUTS) {
                fprintf(stderr, "mgc: --input: at most %d bindings\n", IR_MAX_INPUTS);
                return -1;
            }
            o->bindings[o->n_bindings++] = optarg;
            break;
        case O_CHECK_NUMERICS: o->check_numerics = true; break;
        case O_NO_CUDA_GRAPHS: o->no_cuda_graphs = true; break;
        case O_JSON: o->json = true; break;
        case O_STRICT: o->strict_devices = true; break;
        case O_CKPT_DIR: o->checkpoint_dir = optarg; break;
        case O_KEEP: if (!cli_parse_int("--keep", optarg, 1, 1000000, &o->keep)) return -1; break;
        case O_SAVE_EVERY: if (!parse_every(optarg, o)) return -1; break;
        case O_CONTEXT: if (!cli_parse_int("--context", optarg, 1, RT_TEXT_MAX_CONTEXT, &o->context)) return -1; break;
        case O_TRACE: o->trace = optarg; break;
        case O_TRACE_STEPS: if (!parse_trace_steps(optarg, o)) return -1; break;
        case O_PROFILE: o->profile = true; break;
        default: fputs(help, stderr); return -1;
        }
    }
    if (optind != argc - 1) {
        fputs(help, stderr);
        return -1;
    }
    if (o->trace_steps_given && !o->trace) {
        fprintf(stderr, "mgc: --trace-steps needs --trace FILE.json\n");
        return -1;
    }
    bool text = o->data && !strncmp(o->data, "text:", 5);
    if (o->context && !text) {
        fprintf(stderr, "mgc: --context %lld needs --data text:PATH\n", (long long)o->context);
        return -1;
    }
    if (text && o->n_bindings) {
        fprintf(stderr, "mgc: --data %s and --input both bind the model's inputs; give one\n", o->data);
        return -1;
    }
    return optind;
}

/* The classes of the logits that model input `input` labels (sparse_xent
 * or argmax_match, directly or through a shard), 0 if it labels none. */
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

/* --data text:PATH: the labels are the input that the loss reads as labels,
 * else the second; T is --context, else the tokens input's. */
static rt_dataset *open_text(const ir_module *m, const run_options *o, const char *split, const rt_input_spec *specs,
                             const int *which, int n, char *err, size_t cap) {
    int labels = n == 2 ? 1 : -1;
    if (n == 2 && label_classes(m, m->inputs[which[0]]) > 0 && !label_classes(m, m->inputs[which[1]])) labels = 0;
    const rt_input_spec *tokens = &specs[labels == 0 ? 1 : 0];
    int64_t T = o->context ? o->context : n >= 1 && tokens->shape.rank == 1 ? tokens->shape.dim[0] : 1;
    return rt_dataset_from_text(o->data + 5, split, T, specs, n, labels, err, cap);
}

/* The inputs `program` reads, from --input bindings, text or the --data
 * directory; labels are checked against the classes of the model, and
 * there must be `need` examples at least. NULL with a message in err. */
static rt_dataset *open_data(const ir_module *m, const run_options *o, const char *split, unsigned program,
                             int64_t need, char *err, size_t cap) {
    rt_input_spec specs[m->n_inputs + 1];
    int which[m->n_inputs + 1];
    int n = rt_input_specs(m, program, specs, which);
    bool text = o->data && !strncmp(o->data, "text:", 5);
    rt_dataset *ds = o->n_bindings ? rt_dataset_from_bindings((const char *const *)o->bindings, o->n_bindings, specs,
                                                              n, err, cap)
                     : text ? open_text(m, o, split, specs, which, n, err, cap)
                            : rt_dataset_from_dir(o->data, split, specs, n, err, cap);
    for (int k = 0; ds && k < n; k++) {
        int64_t classes = label_classes(m, m->inputs[which[k]]);
        if (classes > 0 && rt_dataset_check_range(ds, k, classes, "label", err, cap)) rt_dataset_free(ds), ds = NULL;
    }
    if (ds && n > 0 && rt_dataset_count(ds) < need) {
        if (need > 1)
            snprintf(err, cap, "%s: %lld examples%s, fewer than one global batch of %lld", rt_dataset_source(ds, 0),
                     (long long)rt_dataset_count(ds), text ? " of text in its training part" : "", (long long)need);
        else snprintf(err, cap, "%s: holds no examples", rt_dataset_source(ds, 0));
        rt_dataset_free(ds), ds = NULL;
    }
    return ds;
}

/* A failure before the first step: said here, and told to the other workers
 * at the next agreement so that they stop too. */
void cli_fail_local(bound_plan *bp, const char *msg) {
    fprintf(stderr, "mgc: %s\n", msg);
    if (!bp->facts.failed) rt_facts_fail(&bp->facts, msg);
}

/* An agreement point: false when any worker failed or they disagree. Every
 * worker reaches the same verdict; rank 0 prints it, unless it printed its
 * own failure (a failed worker always prints its own). */
static bool agree(bound_plan *bp, double timeout) {
    char err[640];
    if (!rt_workers_agree(bp->ip, &bp->facts, timeout, err, sizeof err)) return true;
    if (!bp->facts.failed && (!bp->ip || bp->ip->rank == 0)) fprintf(stderr, "mgc: %s\n", err);
    bp->stopped = true;
    return false;
}

static uint32_t crc_of(uLong crc, const void *p, size_t n) {
    for (size_t at = 0; at < n; at += 1u << 30) { /* zlib takes uInt lengths */
        size_t piece = n - at < (1u << 30) ? n - at : (1u << 30);
        crc = crc32(crc, (const Bytef *)p + at, (uInt)piece);
    }
    return (uint32_t)crc;
}

/* The plan (its sources' digest and global batch), options and checkpoint. */
static void plan_facts(bound_plan *bp, const char *path, const run_options *o) {
    rt_worker_facts *f = &bp->facts;
    snprintf(f->text, sizeof f->text, "%s", path);
    uLong crc = crc32(0, NULL, 0);
    for (int k = 0; k < bp->m->n_sources; k++) crc = crc_of(crc, bp->m->sources[k].text, strlen(bp->m->sources[k].text));
    f->plan = (uint32_t)crc | 1, f->global_batch = bp->m->global_batch;
    f->seed_given = o->seed_given, f->seed = o->seed, f->steps = o->steps, f->epochs = o->epochs;
    if (!o->load) return;
    char err[512];
    size_t len;
    unsigned char *bytes = rt_read_file(o->load, &len, err, sizeof err);
    if (!bytes) return cli_fail_local(bp, err);
    snprintf(f->load, sizeof f->load, "%s", o->load);
    f->load_crc = crc_of(crc32(0, NULL, 0), bytes, len);
    free(bytes);
}

static void data_facts(bound_plan *bp, const rt_dataset *ds) {
    uLong crc = crc32(0, NULL, 0);
    for (int i = 0; i < rt_dataset_inputs(ds); i++) {
        const rt_tensor *t = rt_dataset_tensor(ds, i);
        crc = crc_of(crc, t->data, (size_t)rt_tensor_bytes(t));
    }
    bp->facts.examples = rt_dataset_count(ds), bp->facts.data_crc = (uint32_t)crc;
}

/* Under mpirun, each worker runs its plan's devices; together they run one
 * plan with every worker's replicas (re-planned from the embedded sources),
 * keeping the plan's global batch, so the job follows the one-process
 * trajectory. Worker p runs the replicas after those of workers 0..p-1. */
static ir_module *fit_workers(ir_module *plan, const char *path, bound_plan *bp) {
    rt_interprocess *ip = bp->ip;
    int size = ip->size;
    double counts[size]; /* the workers agreed on the global batch already (start of bind_plan) */
    char err[512];
    memset(counts, 0, sizeof counts);
    counts[ip->rank] = plan->n_devices;
    if (ip->all_reduce_sum(ip->ctx, counts, size, IR_F64, 60, "device counts of the workers", err, sizeof err)) {
        fprintf(stderr, "mgc: %s\n", err);
        ir_module_free(plan);
        return NULL;
    }
    int total = 0;
    for (int p = 0; p < size; p++) {
        if (p == ip->rank) bp->first = total;
        total += (int)counts[p];
    }
    bp->local = plan->n_devices;
    if (plan->global_batch % total) {
        fprintf(stderr, "mgc: %s: global batch %lld is not divisible by the job's %d replicas (%d workers)\n", path,
                (long long)plan->global_batch, total, size);
        ir_module_free(plan);
        return NULL;
    }
    if (ip->rank == 0)
        fprintf(stderr, "mgc: %d workers, %d replicas: re-planned %s for %lld examples per replica\n", size, total,
                path, (long long)plan->global_batch / total);
    /* every replica under its own device (kind, index), so each worker's backend follows its own devices */
    double where[2 * total];
    memset(where, 0, sizeof where);
    for (int d = 0; d < bp->local; d++)
        where[2 * (bp->first + d)] = !strcmp(plan->devices[d].name, "gpu"), where[2 * (bp->first + d) + 1] = plan->devices[d].index;
    if (ip->all_reduce_sum(ip->ctx, where, 2 * total, IR_F64, 60, "devices of the workers", err, sizeof err)) {
        fprintf(stderr, "mgc: %s\n", err);
        ir_module_free(plan);
        return NULL;
    }
    ir_device devices[total];
    for (int r = 0; r < total; r++) devices[r] = (ir_device){where[2 * r] ? "gpu" : "cpu", (int)where[2 * r + 1]};
    ir_module *m = cli_replan(plan, devices, total);
    ir_module_free(plan);
    return m;
}

/* A plan for GPUs that are not here runs on as many CPU devices, re-planned
 * from the sources it carries (or fails, with --strict-devices). */
static ir_module *fit_devices(ir_module *plan, const char *path, bool strict, char *err, size_t cap) {
    char why[256];
    if (strcmp(plan->devices[0].name, "gpu")) return plan;
    int gpus = mgc_gpu_count(why, sizeof why), missing = -1;
    for (int d = 0; d < plan->n_devices; d++)
        if (plan->devices[d].index >= gpus) missing = plan->devices[d].index;
    if (missing < 0) return plan;
    if (strict) {
        snprintf(err, cap, "%s: gpu:%d is not available: %s", path, missing, why);
        ir_module_free(plan);
        return NULL;
    }
    fprintf(stderr, "mgc: %s: gpu:%d is not available: %s; re-planned for %d CPU device%s\n", path, missing, why,
            plan->n_devices, plan->n_devices > 1 ? "s" : "");
    ir_device cpus[plan->n_devices];
    for (int d = 0; d < plan->n_devices; d++) cpus[d] = (ir_device){"cpu", d};
    ir_module *m = cli_replan(plan, cpus, plan->n_devices);
    ir_module_free(plan);
    return m;
}

/* A plan on CPU devices must fit in this machine's memory (RAM and swap):
 * the arenas of the devices this process runs, plus its host inputs. */
static bool fits_memory(const bound_plan *bp, const char *path, char *err, size_t cap) {
    const ir_module *m = bp->m;
    struct sysinfo si;
    int first = bp->ip ? bp->first : 0, local = bp->ip ? bp->local : m->n_devices;
    if (strcmp(m->devices[first].name, "cpu") || sysinfo(&si) != 0) return true;
    double have = ((double)si.totalram + (double)si.totalswap) * si.mem_unit, need = 0;
    for (int d = first; d < first + local; d++) need += (double)m->arena_bytes[d];
    for (int k = 0; k < m->n_inputs; k++) need += (double)ir_node_bytes(&m->g.nodes[m->inputs[k]]);
    if (need <= have) return true;
    snprintf(err, cap, "%s: the plan needs %.1f GiB of memory, this machine has %.1f GiB", path, need / (1 << 30),
             have / (1 << 30));
    return false;
}

/* Loads the plan and fits it to this worker. Under mpirun the workers first
 * agree on the plan, options and checkpoint; a later local failure is kept
 * in bp->facts for start_plan's agreement. Returns false when nothing runs. */
bool cli_bind_plan(const char *path, const run_options *o, bound_plan *bp) {
    char err[640] = "";
    *bp = (bound_plan){.seed = o->seed};
    rt_facts_init(&bp->facts);
    bp->ip = rt_mpi_init(o->timeout > 0 ? o->timeout : 60, err, sizeof err);
    if (!bp->ip && *err) {
        fprintf(stderr, "mgc: %s\n", err);
        return false;
    }
    if (*o->resumed && (!bp->ip || bp->ip->rank == 0))
        fprintf(stderr, "mgc: resuming from %s (step %lld)\n", o->resumed, (long long)o->resumed_step);
    bp->m = mgx_read(path, err, sizeof err);
    if (bp->m && mgx_check_runnable(bp->m, path, err, sizeof err)) ir_module_free(bp->m), bp->m = NULL;
    if (bp->m) bp->m = fit_devices(bp->m, path, o->strict_devices, err, sizeof err);
    if (!bp->m) cli_fail_local(bp, err);
    else plan_facts(bp, path, o);
    if (!agree(bp, o->timeout > 0 ? o->timeout : 60)) {
        ir_module_free(bp->m);
        rt_mpi_finalize(bp->ip);
        return false;
    }
    if (bp->ip) bp->m = fit_workers(bp->m, path, bp);
    if (!bp->m) {
        rt_mpi_finalize(bp->ip);
        return false;
    }
    if (!fits_memory(bp, path, err, sizeof err)) cli_fail_local(bp, err);
    return true;
}

/* Starts the session once the data are loaded (so data too small for the
 * plan are refused before its arenas are allocated), the workers agree on
 * their data and that none failed since bind_plan, then the variables are
 * set: initializers or --load. */
bool cli_start_plan(bound_plan *bp, const char *path, const run_options *o, const rt_dataset *ds) {
    char err[640];
    const char *absent = getenv("MGC_FAULT_ABSENT_REPLICA"); /* tests: a replica that never arrives */
    rt_session_options so = {.threads_per_device = o->threads, .collective_timeout = o->timeout, .ip = bp->ip,
                             .first_replica = bp->first, .local_replicas = bp->local,
                             .check_numerics = o->check_numerics, .no_graphs = o->no_cuda_graphs,
                             .absent_replica = absent ? atoi(absent) + 1 : 0};
    if (!bp->facts.failed && !(bp->s = rt_session_new(bp->m, &so, err, sizeof err))) {
        char msg[700];
        snprintf(msg, sizeof msg, "%s: %s", path, err);
        cli_fail_local(bp, msg);
    }
    if (ds) data_facts(bp, ds);
    if (!agree(bp, o->timeout > 0 ? o->timeout : 60)) return false;
    /* a resumed run shuffles as the run that wrote the checkpoint, unless told otherwise */
    int rc = o->load ? rt_load_variables(bp->s, o->load, o->seed_given ? NULL : &bp->seed, err, sizeof err)
                     : rt_session_init_variables(bp->s, o->seed);
    if (rc && !o->load) snprintf(err, sizeof err, "%s", rt_session_error(bp->s));
    if (rc) fprintf(stderr, "mgc: %s\n", err);
    return rc == 0;
}

/* After a failure a peer may be gone: finalizing MPI could then wait for it
 * forever, so the job is ended instead. */
int cli_unbind_plan(bound_plan *bp, int rc) {
    rt_session_free(bp->s);
    ir_module_free(bp->m);
    if (rc && bp->ip && !bp->stopped) rt_mpi_abort(bp->ip, rc);
    rt_mpi_finalize(bp->ip);
    return rc;
}

static volatile sig_atomic_t stop_signal; /* the signal that asked the run to stop, 0 none */

/* The first SIGINT or SIGTERM is noted and both go back to their default
 * action, so a second signal of either kind ends the process at once. Two
 * signals can reach two threads together, before the defaults are back: the
 * atomic exchange lets exactly one be the first, and the other re-sends its
 * signal to the process, now with the default action (kill and sigaction are
 * async-signal-safe). */
static void on_stop_signal(int sig) {
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigaction(SIGINT, &dfl, NULL);
    sigaction(SIGTERM, &dfl, NULL);
    if (__atomic_exchange_n(&stop_signal, sig, __ATOMIC_SEQ_CST) != 0) kill(getpid(), sig);
}

/* SIGINT and SIGTERM ask training to stop after the current step. */
static void catch_stop_signals(void) {
    struct sigaction sa = {.sa_handler = on_stop_signal};
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT), sigaddset(&sa.sa_mask, SIGTERM); /* one handler at a time */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* Every file the command will write, checked before any work: a bad path
 * found after training would throw the trained weights away. */
static bool outputs_writable(const run_options *o) {
    mgc_error err;
    const char *files[] = {o->save, o->history, o->out, o->trace};
    for (size_t k = 0; k < sizeof files / sizeof *files; k++)
        if (files[k] && mgc_check_output(files[k], &err)) return cli_print_error(&err), false;
    struct stat st; /* the checkpoint directory is made now, so a bad one is found now */
    if (o->checkpoint_dir && mkdir(o->checkpoint_dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "mgc: %s: cannot create the checkpoint directory: %s\n", o->checkpoint_dir, strerror(errno));
        return false;
    }
    if (o->checkpoint_dir && (stat(o->checkpoint_dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
        fprintf(stderr, "mgc: %s: not a directory; --checkpoint-dir names one\n", o->checkpoint_dir);
        return false;
    }
    return true;
}

/* --checkpoint-dir with checkpoints in it: the run resumes from the newest
 * (as --load would). Returns false when the directory cannot be read. */
static bool find_resume(run_options *o) {
    char err[512];
    if (!o->checkpoint_dir) return true;
    int found = rt_ckpt_dir_newest(o->checkpoint_dir, o->resumed, sizeof o->resumed, &o->resumed_step, err, sizeof err);
    if (found < 0) fprintf(stderr, "mgc: %s\n", err);
    if (found == 1) o->load = o->resumed;
    return found >= 0;
}

/* ---- --trace and --profile (runtime/trace.h) ---- */

/* The trace of this run's steps, set on the session; NULL when none is asked
 * for or it cannot be made (said on stderr, *failed set). */
static rt_trace *start_trace(const bound_plan *bp, const run_options *o, bool *failed) {
    if ((!o->trace && !o->profile) || *failed) return NULL;
    int64_t at = rt_session_step(bp->s); /* steps count from the run's start (a resumed run) */
    rt_trace *t = rt_trace_new(bp->m, rt_session_first_replica(bp->s), rt_session_local_replicas(bp->s),
                               o->trace ? at + o->trace_from : 1, o->trace ? at + o->trace_to : 0,
                               o->profile ? at + 2 : 0);
    if (!t || rt_session_set_trace(bp->s, t)) {
        fprintf(stderr, "mgc: --%s: %s\n", o->trace ? "trace" : "profile", t ? rt_session_error(bp->s) : "out of memory");
        rt_trace_free(t);
        *failed = true;
        return NULL;
    }
    return t;
}

/* Writes the trace (FILE.rankN.json under mpirun) and prints the profile. */
static int finish_trace(const bound_plan *bp, const run_options *o, rt_trace *t) {
    if (!t) return 0;
    rt_session_set_trace(bp->s, NULL);
    int rank = bp->ip ? bp->ip->rank : 0, ranks = bp->ip ? bp->ip->size : 1, rc = 0;
    if (o->profile && rank == 0) rt_trace_profile(t, 15, stdout);
    if (o->trace) {
        char path[PATH_MAX], err[640];
        size_t n = strlen(o->trace);
        int base = (int)(n >= 5 && !strcmp(o->trace + n - 5, ".json") ? n - 5 : n);
        if (ranks > 1) snprintf(path, sizeof path, "%.*s.rank%d.json", base, o->trace, rank);
        else snprintf(path, sizeof path, "%s", o->trace);
        if (!rt_trace_kept_steps(t))
            fprintf(stderr, "mgc: --trace: no step of this run is in %lld:%lld; %s holds no events\n",
                    (long long)o->trace_from, (long long)o->trace_to, path);
        rc = rt_trace_write(t, path, rank, ranks, err, sizeof err);
        if (rc) fprintf(stderr, "mgc: %s\n", err);
    }
    rt_trace_free(t);
    return rc ? 1 : 0;
}

int cmd_run(int argc, char **argv) {
    run_options o;
    int k = parse_run_options(argc, argv, &o, run_help);
    if (k < 0) return k == -2 ? 0 : 1;
    if (!outputs_writable(&o) || !find_resume(&o)) return 1;
    catch_stop_signals();
    bound_plan bp;
    if (!cli_bind_plan(argv[k], &o, &bp)) return 1;
    if (!o.epochs_given && bp.m && bp.m->epochs) o.epochs = bp.m->epochs; /* the train block's */
    char err[640];
    rt_dataset *train = NULL, *test = NULL;
    if (!bp.facts.failed && !bp.m->has_train) {
        snprintf(err, sizeof err, "%s: model '%s' has no train block", argv[k], bp.m->model_name);
        cli_fail_local(&bp, err);
    }
    if (!bp.facts.failed && !(train = open_data(bp.m, &o, "train", 0, bp.m->global_batch, err, sizeof err)))
        cli_fail_local(&bp, err);
    if (!bp.facts.failed && !o.n_bindings && !(test = open_data(bp.m, &o, "test", 0, 1, err, sizeof err)))
        cli_fail_local(&bp, err);
    int rc = cli_start_plan(&bp, argv[k], &o, train) ? 0 : 1;
    rt_train_options to = {.epochs = o.epochs, .steps = o.steps, .seed = bp.seed, .check_replicas = o.check_replicas,
                           .check_numerics = o.check_numerics, .quiet = bp.ip && bp.ip->rank != 0,
                           .history = o.history, .history_append = *o.resumed != 0, .checkpoint_dir = o.checkpoint_dir, .save_every = o.save_every,
                           .save_every_epochs = o.save_every_epochs, .keep = (int)o.keep, .stop = &stop_signal};
    bool trace_failed = rc != 0;
    rt_trace *trace = start_trace(&bp, &o, &trace_failed);
    rc = trace_failed ? 1 : rc;
    int trained = rc ? 0 : rt_train(bp.s, train, test, &to, err, sizeof err);
    if (trained < 0) {
        fprintf(stderr, "mgc: %s\n", err);
        rc = 1;
    }
    if (finish_trace(&bp, &o, trace)) rc = 1;
    /* stopped by a signal: the checkpoint directory has the state; else --save gets it */
    if (!rc && o.save && (!trained || !o.checkpoint_dir) && rt_save_variables(bp.s, o.save, bp.seed, err, sizeof err)) {
        fprintf(stderr, "mgc: %s\n", err);
        rc = 1;
    }
    if (!rc && trained == RT_STOPPED && (!bp.ip || bp.ip->rank == 0))
        fprintf(stderr, "mgc: stopped after step %lld (%s); %s%s%s\n", (long long)rt_session_step(bp.s),
                stop_signal == SIGINT ? "SIGINT" : "SIGTERM", o.checkpoint_dir ? "checkpoint in " : o.save ? "saved to " : "",
                o.checkpoint_dir ? o.checkpoint_dir : o.save ? o.save : "nothing saved (no --checkpoint-dir or --save)",
                o.checkpoint_dir || o.save ? ", run again to resume" : "");
    rt_dataset_free(train);
    rt_dataset_free(test);
    rc = cli_unbind_plan(&bp, rc);
    return !rc && trained == RT_STOPPED ? EXIT_INTERRUPTED : rc;
}

int cmd_eval(int argc, char **argv) {
    run_options o;
    int k = parse_run_options(argc, argv, &o, eval_help);
    if (k < 0) return k == -2 ? 0 : 1;
    if (!o.load) {
        fprintf(stderr, "mgc: eval needs --load CKPT\n");
        return 1;
    }
    bound_plan bp;
    if (!cli_bind_plan(argv[k], &o, &bp)) return 1;
    char err[640];
    rt_dataset *test = NULL;
    if (!bp.facts.failed && !(test = open_data(bp.m, &o, "test", 0, 1, err, sizeof err))) cli_fail_local(&bp, err);
    rt_scores v;
    int rc = cli_start_plan(&bp, argv[k], &o, test) ? 0 : 1;
    if (!rc && rt_evaluate(bp.s, test, &v, err, sizeof err)) {
        fprintf(stderr, "mgc: %s\n", err);
        rc = 1;
    }
    if (!rc && rt_session_rank(bp.s) == 0) {
        const ir_module *m = bp.m;
        if (o.json) {
            printf("{\"examples\": %lld, \"loss\": %.9g", (long long)v.examples, v.loss);
            for (int j = 0; j < m->n_metrics; j++) printf(", \"%s\": %.9g", m->metrics[j].name, v.metric[j]);
            printf("}\n");
        } else {
            printf("test loss: %.4f", v.loss);
            for (int j = 0; j < m->n_metrics; j++) printf(" - test %s: %.4f", m->metrics[j].name, v.metric[j]);
            printf(" (%lld examples)\n", (long long)v.examples);
        }
    }
    rt_dataset_free(test);
    return cli_unbind_plan(&bp, rc);
}

/* The file of output j: OUT itself for a model with one output, else
 * OUT.NAME.npy (a trailing .npy of OUT moves after the name). */
static bool output_path(const char *out, const ir_module *m, int j, char *buf, size_t cap, char *err, size_t err_cap) {
    size_t n = strlen(out);
    if (m->n_outputs == 1) n = (size_t)snprintf(buf, cap, "%s", out);
    else {
        int base = (int)(n >= 4 && !strcmp(out + n - 4, ".npy") ? n - 4 : n);
        n = (size_t)snprintf(buf, cap, "%.*s.%s.npy", base, out, m->outputs[j].name);
    }
    if (n < cap) return true;
    snprintf(err, err_cap, "%.200s...: the file name of output '%s' is too long", buf, m->outputs[j].name);
    return false;
}

int cmd_predict(int argc, char **argv) {
    run_options o;
    int k = parse_run_options(argc, argv, &o, predict_help);
    if (k < 0) return k == -2 ? 0 : 1;
    const char *missing = !o.load ? "--load CKPT" : !o.n_bindings ? "--input NAME=FILE" : !o.out ? "-o OUT.npy" : NULL;
    if (missing) {
        fprintf(stderr, "mgc: predict needs %s\n", missing);
        fputs(predict_help, stderr);
        return 1;
    }
    if (!outputs_writable(&o)) return 1;
    bound_plan bp;
    if (!cli_bind_plan(argv[k], &o, &bp)) return 1;
    char err[640];
    mgc_error e;
    rt_dataset *ds = NULL;
    int n_out = bp.facts.failed ? 0 : bp.m->n_outputs;
    char (*paths)[PATH_MAX] = calloc((size_t)n_out + 1, sizeof *paths);
    if (!bp.facts.failed && !n_out) {
        snprintf(err, sizeof err, "%s: model '%s' has no output to predict", argv[k], bp.m->model_name);
        cli_fail_local(&bp, err);
    }
    for (int j = 0; j < n_out && !bp.facts.failed; j++)
        if (!output_path(o.out, bp.m, j, paths[j], sizeof paths[j], err, sizeof err))
            cli_fail_local(&bp, err);
        else if (mgc_check_output(paths[j], &e))
            cli_fail_local(&bp, e.message);
    if (!bp.facts.failed && !(ds = open_data(bp.m, &o, "test", PROG_PREDICT, 1, err, sizeof err))) cli_fail_local(&bp, err);
    rt_tensor *out = calloc((size_t)n_out + 1, sizeof *out);
    int rc = cli_start_plan(&bp, argv[k], &o, ds) ? 0 : 1;
    bool failed = !rc && rt_predict(bp.s, ds, out, err, sizeof err) != 0;
    for (int j = 0; j < n_out && !rc && !failed && rt_session_rank(bp.s) == 0; j++)
        failed = rt_save_npy(paths[j], &out[j], err, sizeof err) != 0;
    if (failed) {
        fprintf(stderr, "mgc: %s\n", err);
        rc = 1;
    }
    for (int j = 0; j < n_out; j++) rt_tensor_free(&out[j]);
    free(out);
    free(paths);
    rt_dataset_free(ds);
    return cli_unbind_plan(&bp, rc);
}
