/* run.c - mgc run, eval and predict: bind a plan to this process's devices
 * (a libmgc job under mpirun) and to data, through include/mgc.h alone
 * (docs/api.md, "The CLI as a client of the API"). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    "  --data DIR                 IDX files train-*/t10k-* (default " MGC_DEFAULT_DATA_DIR ")\n"
    "  --data text:PATH           the bytes of a file (or of a directory's text files) as tokens 0..255:\n"
    "                             the model's two i32 inputs [batch, T] get T bytes and the T bytes\n"
    "                             after them; the last 10% is the validation part (text: alone is\n"
    "                             " MGC_DEFAULT_TEXT_DIR ")\n"
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
            if (o->n_bindings == MGC_MAX_INPUTS) {
                fprintf(stderr, "mgc: --input: at most %d bindings\n", MGC_MAX_INPUTS);
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
        case O_CONTEXT: if (!cli_parse_int("--context", optarg, 1, MGC_TEXT_MAX_CONTEXT, &o->context)) return -1; break;
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

/* The data options of --data, --context and --input. */
static mgc_data_options data_options(const run_options *o) {
    return (mgc_data_options){.dir = o->data, .context = o->context, .bindings = o->bindings, .n_bindings = o->n_bindings};
}

/* The inputs `use` reads, from --input bindings, text or the --data
 * directory. NULL after a local failure (said, told to the workers). */
static mgc_dataset *open_data(bound_plan *bp, const run_options *o, mgc_data_use use) {
    mgc_data_options d = data_options(o);
    mgc_dataset *ds = NULL;
    mgc_error e;
    if (!cli_failed(bp) && mgc_dataset_open(bp->plan, use, &d, &ds, &e)) cli_fail_local(bp, e.message);
    return ds;
}

/* A failure before the first step: said here, and told to the other workers
 * at the next agreement so that they stop too. */
void cli_fail_local(bound_plan *bp, const char *msg) {
    fprintf(stderr, "mgc: %s\n", msg);
    mgc_job_fail(bp->job, msg);
}

bool cli_failed(const bound_plan *bp) { return mgc_job_failed(bp->job); }

/* An agreement point: false when any worker failed or they disagree. Every
 * worker reaches the same verdict; rank 0 prints it, unless it printed its
 * own failure (a failed worker always prints its own). */
static bool agree(bound_plan *bp) {
    mgc_error e;
    if (!mgc_job_agree(bp->job, &e)) return true;
    if (!cli_failed(bp) && mgc_job_rank(bp->job) == 0) fprintf(stderr, "mgc: %s\n", e.message);
    return false;
}

/* libmgc's notes (a plan re-planned for CPU devices or the job's workers). */
static void print_note(mgc_text_kind kind, const char *text, void *user) {
    (void)kind, (void)user;
    fprintf(stderr, "mgc: %s", text);
}

/* Loads the plan and fits it to this worker: a plan for GPUs that are not
 * here runs on as many CPU devices, and under mpirun the workers first agree
 * on the plan, options and checkpoint, then run one plan with every worker's
 * replicas (re-planned from the embedded sources, keeping the plan's global
 * batch, so the job follows the one-process trajectory). A later local
 * failure is kept in the job for start_plan's agreement. Returns false when
 * nothing runs. */
bool cli_bind_plan(const char *path, const run_options *o, bound_plan *bp) {
    mgc_error e;
    *bp = (bound_plan){0};
    if (mgc_job_start(o->timeout, &bp->job, &e)) {
        fprintf(stderr, "mgc: %s\n", e.message);
        return false;
    }
    if (*o->resumed && mgc_job_rank(bp->job) == 0)
        fprintf(stderr, "mgc: resuming from %s (step %lld)\n", o->resumed, (long long)o->resumed_step);
    mgc_job_facts f = {.seed_given = o->seed_given, .seed = o->seed, .steps = o->steps, .epochs = o->epochs,
                       .checkpoint = o->load};
    if (mgc_plan_load(path, &bp->plan, &e) || mgc_plan_fit_here(bp->plan, o->strict_devices, print_note, NULL, &e)) {
        mgc_plan_free(bp->plan), bp->plan = NULL;
        cli_fail_local(bp, e.message);
    } else if (mgc_job_set_facts(bp->job, bp->plan, path, &f, &e))
        cli_fail_local(bp, e.message);
    if (!agree(bp)) {
        mgc_plan_free(bp->plan);
        mgc_job_end(bp->job, 1);
        return false;
    }
    if (mgc_job_plan(bp->job, bp->plan, print_note, NULL, &e)) { /* every worker fails alike here */
        fprintf(stderr, "mgc: %s\n", e.message);
        mgc_plan_free(bp->plan);
        mgc_job_end(bp->job, 0);
        return false;
    }
    if (mgc_plan_check_memory(bp->plan, bp->job, &e)) cli_fail_local(bp, e.message);
    return true;
}

/* Starts the session once the data are loaded (so data too small for the
 * plan are refused before its arenas are allocated), the workers agree on
 * their data and that none failed since bind_plan, then the variables are
 * set: initializers or --load. */
bool cli_start_plan(bound_plan *bp, const char *path, const run_options *o, const mgc_dataset *ds) {
    mgc_error e;
    mgc_session_options so;
    mgc_session_options_init(&so);
    so.seed = o->seed, so.threads_per_device = o->threads, so.collective_timeout = o->timeout;
    so.check_replicas = o->check_replicas, so.check_numerics = o->check_numerics;
    so.no_cuda_graphs = o->no_cuda_graphs, so.job = bp->job;
    if (!cli_failed(bp) && mgc_session_new(bp->plan, &so, &bp->s, &e)) {
        char msg[sizeof e.message + 256];
        snprintf(msg, sizeof msg, "%s: %s", path, e.message);
        cli_fail_local(bp, msg);
    }
    if (ds) mgc_job_set_data(bp->job, ds);
    if (!agree(bp)) return false;
    /* a resumed run shuffles as the run that wrote the checkpoint, unless told otherwise */
    mgc_status st = o->load ? mgc_checkpoint_load(bp->s, o->load, &e) : mgc_session_init(bp->s, &e);
    if (!st && o->load && o->seed_given) mgc_session_set_seed(bp->s, o->seed);
    if (st) fprintf(stderr, "mgc: %s\n", e.message);
    return st == MGC_OK;
}

/* After a failure a peer may be gone: finishing MPI could then wait for it
 * forever, so the job is ended instead (mgc_job_end). */
int cli_unbind_plan(bound_plan *bp, int rc) {
    mgc_session_free(bp->s);
    mgc_plan_free(bp->plan);
    return mgc_job_end(bp->job, rc);
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
    mgc_error e;
    if (!o->checkpoint_dir) return true;
    int found = mgc_checkpoint_newest(o->checkpoint_dir, o->resumed, sizeof o->resumed, &o->resumed_step, &e);
    if (found < 0) fprintf(stderr, "mgc: %s\n", e.message);
    if (found == 1) o->load = o->resumed;
    return found >= 0;
}

/* ---- --trace and --profile (docs/trace.md) ---- */

/* Traces this run's steps on the session; false when none is asked for or
 * it cannot be made (said on stderr, *failed set). */
static bool start_trace(const bound_plan *bp, const run_options *o, bool *failed) {
    if ((!o->trace && !o->profile) || *failed) return false;
    mgc_trace_options t = {.from = o->trace ? o->trace_from : 1, .to = o->trace ? o->trace_to : 0, .profile = o->profile};
    mgc_error e;
    if (mgc_session_trace(bp->s, &t, &e)) {
        fprintf(stderr, "mgc: --%s: %s\n", o->trace ? "trace" : "profile", e.message);
        *failed = true;
        return false;
    }
    return true;
}

/* Writes the trace (FILE.rankN.json under mpirun) and prints the profile. */
static int finish_trace(const bound_plan *bp, const run_options *o, bool traced) {
    if (!traced) return 0;
    int rank = mgc_job_rank(bp->job), ranks = mgc_job_size(bp->job);
    char path[PATH_MAX] = "", *profile = NULL;
    if (o->trace) {
        size_t n = strlen(o->trace);
        int base = (int)(n >= 5 && !strcmp(o->trace + n - 5, ".json") ? n - 5 : n);
        if (ranks > 1) snprintf(path, sizeof path, "%.*s.rank%d.json", base, o->trace, rank);
        else snprintf(path, sizeof path, "%s", o->trace);
    }
    int64_t kept = 0;
    mgc_error e;
    mgc_status st = mgc_session_trace_end(bp->s, o->trace ? path : NULL, o->profile && rank == 0 ? &profile : NULL, &kept, &e);
    if (profile) fputs(profile, stdout);
    mgc_free(profile);
    if (o->trace && !kept)
        fprintf(stderr, "mgc: --trace: no step of this run is in %lld:%lld; %s holds no events\n",
                (long long)o->trace_from, (long long)o->trace_to, path);
    if (st) fprintf(stderr, "mgc: %s\n", e.message);
    return st ? 1 : 0;
}

/* Prints what mgc run prints at each report (libmgc's progress lines). */
static int print_line(const mgc_progress *p, void *user) {
    (void)user;
    if (p->line) fputs(p->line, stdout), fflush(stdout);
    return 0;
}

int cmd_run(int argc, char **argv) {
    run_options o;
    int k = parse_run_options(argc, argv, &o, run_help);
    if (k < 0) return k == -2 ? 0 : 1;
    if (!outputs_writable(&o) || !find_resume(&o)) return 1;
    catch_stop_signals();
    bound_plan bp;
    if (!cli_bind_plan(argv[k], &o, &bp)) return 1;
    if (!o.epochs_given && bp.plan && mgc_plan_epochs(bp.plan)) o.epochs = mgc_plan_epochs(bp.plan); /* the train block's */
    char msg[640];
    mgc_dataset *train = NULL, *test = NULL;
    if (!cli_failed(&bp) && !mgc_plan_has_train(bp.plan)) {
        snprintf(msg, sizeof msg, "%s: model '%s' has no train block", argv[k], mgc_plan_model_name(bp.plan));
        cli_fail_local(&bp, msg);
    }
    train = open_data(&bp, &o, MGC_DATA_TRAIN);
    if (!o.n_bindings) test = open_data(&bp, &o, MGC_DATA_TEST);
    int rc = cli_start_plan(&bp, argv[k], &o, train) ? 0 : 1, rank = mgc_job_rank(bp.job);
    mgc_fit_options fo;
    mgc_fit_options_init(&fo);
    fo.epochs = o.epochs, fo.steps = o.steps, fo.total = 1, fo.validation_data = test;
    fo.progress = print_line, fo.tty = isatty(1), fo.quiet = rank != 0, fo.stop = &stop_signal;
    fo.run_ahead = 1; /* print_line only prints (docs/runtime.md, "Steps in flight") */
    fo.history = o.history, fo.history_append = *o.resumed != 0, fo.checkpoint_dir = o.checkpoint_dir;
    fo.save_every = o.save_every, fo.save_every_epochs = o.save_every_epochs, fo.keep = (int)o.keep;
    bool trace_failed = rc != 0;
    bool traced = start_trace(&bp, &o, &trace_failed);
    rc = trace_failed ? 1 : rc;
    mgc_error e;
    mgc_status st = rc ? MGC_OK : mgc_fit_dataset(bp.s, train, &fo, &e);
    bool stopped = st == MGC_STOPPED;
    if (st && !stopped) {
        fprintf(stderr, "mgc: %s\n", e.message);
        rc = 1;
    }
    if (finish_trace(&bp, &o, traced)) rc = 1;
    /* stopped by a signal: the checkpoint directory has the state; else --save gets it */
    if (!rc && o.save && (!stopped || !o.checkpoint_dir) && mgc_checkpoint_save(bp.s, o.save, &e)) {
        fprintf(stderr, "mgc: %s\n", e.message);
        rc = 1;
    }
    if (!rc && stopped && rank == 0)
        fprintf(stderr, "mgc: stopped after step %lld (%s); %s%s%s\n", (long long)mgc_session_step(bp.s),
                stop_signal == SIGINT ? "SIGINT" : "SIGTERM", o.checkpoint_dir ? "checkpoint in " : o.save ? "saved to " : "",
                o.checkpoint_dir ? o.checkpoint_dir : o.save ? o.save : "nothing saved (no --checkpoint-dir or --save)",
                o.checkpoint_dir || o.save ? ", run again to resume" : "");
    mgc_dataset_free(train);
    mgc_dataset_free(test);
    rc = cli_unbind_plan(&bp, rc);
    return !rc && stopped ? EXIT_INTERRUPTED : rc;
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
    mgc_dataset *test = open_data(&bp, &o, MGC_DATA_TEST);
    mgc_scores v;
    mgc_error e;
    int rc = cli_start_plan(&bp, argv[k], &o, test) ? 0 : 1;
    if (!rc && mgc_evaluate_dataset(bp.s, test, &v, &e)) {
        fprintf(stderr, "mgc: %s\n", e.message);
        rc = 1;
    }
    if (!rc && mgc_job_rank(bp.job) == 0) {
        const mgc_plan *p = bp.plan;
        int metrics = mgc_plan_metric_count(p);
        if (o.json) {
            printf("{\"examples\": %lld, \"loss\": %.9g", (long long)v.examples, v.loss);
            for (int j = 0; j < metrics; j++) printf(", \"%s\": %.9g", mgc_plan_metric_name(p, j), v.metrics[j]);
            printf("}\n");
        } else {
            printf("test loss: %.4f", v.loss);
            for (int j = 0; j < metrics; j++) printf(" - test %s: %.4f", mgc_plan_metric_name(p, j), v.metrics[j]);
            printf(" (%lld examples)\n", (long long)v.examples);
        }
    }
    mgc_dataset_free(test);
    return cli_unbind_plan(&bp, rc);
}

/* The file of output j: OUT itself for a model with one output, else
 * OUT.NAME.npy (a trailing .npy of OUT moves after the name). */
static bool output_path(const char *out, const mgc_plan *p, int j, char *buf, size_t cap, char *err, size_t err_cap) {
    size_t n = strlen(out);
    mgc_tensor_info info;
    mgc_plan_output(p, j, &info, NULL);
    if (mgc_plan_output_count(p) == 1) n = (size_t)snprintf(buf, cap, "%s", out);
    else {
        int base = (int)(n >= 4 && !strcmp(out + n - 4, ".npy") ? n - 4 : n);
        n = (size_t)snprintf(buf, cap, "%.*s.%s.npy", base, out, info.name);
    }
    if (n < cap) return true;
    snprintf(err, err_cap, "%.200s...: the file name of output '%s' is too long", buf, info.name);
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
    mgc_dataset *ds = NULL;
    int n_out = cli_failed(&bp) ? 0 : mgc_plan_output_count(bp.plan);
    char (*paths)[PATH_MAX] = calloc((size_t)n_out + 1, sizeof *paths);
    if (!cli_failed(&bp) && !n_out) {
        snprintf(err, sizeof err, "%s: model '%s' has no output to predict", argv[k], mgc_plan_model_name(bp.plan));
        cli_fail_local(&bp, err);
    }
    for (int j = 0; j < n_out && !cli_failed(&bp); j++)
        if (!output_path(o.out, bp.plan, j, paths[j], sizeof paths[j], err, sizeof err))
            cli_fail_local(&bp, err);
        else if (mgc_check_output(paths[j], &e))
            cli_fail_local(&bp, e.message);
    ds = open_data(&bp, &o, MGC_DATA_PREDICT);
    mgc_output *out = NULL;
    int rc = cli_start_plan(&bp, argv[k], &o, ds) ? 0 : 1;
    mgc_status st = rc ? MGC_OK : mgc_predict_dataset(bp.s, ds, &out, &e);
    for (int j = 0; j < n_out && !rc && !st && mgc_job_rank(bp.job) == 0; j++) st = mgc_output_save_npy(&out[j], paths[j], &e);
    if (st) {
        fprintf(stderr, "mgc: %s\n", e.message);
        rc = 1;
    }
    mgc_outputs_free(out, n_out);
    free(paths);
    mgc_dataset_free(ds);
    return cli_unbind_plan(&bp, rc);
}
