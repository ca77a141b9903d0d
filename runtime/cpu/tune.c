/* tune.c - kernel choice by measurement (issue 14): the choice table of the
 * process, the MGC_KERNELS override and the per-machine cache file. */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include "tune.h"

#include <cblas.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { KEY_CAP = 512, PATH_CAP = 1024, TIMED_RUNS = 5, TUNE_MAX_CAND = 8 }; /* an op's candidates: 4 at most today */
enum { KEEP_FILES = 8 }; /* cache files kept in the directory, this build's and the most recently used others */

typedef struct choice {
    char key[KEY_CAP];
    char name[32];
    struct choice *next;
} choice;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static choice *table;         /* every key chosen in this process */
static int loaded;            /* MGC_KERNELS and the cache read since the last reset */
static char forced[32];       /* MGC_KERNELS's candidate name, "" = auto */
static char path[PATH_CAP];   /* the cache file, "" = none */
static int measured;
static int in_job;            /* a process of an mpirun job of several: never measures */
static _Atomic int64_t generation = 1; /* of the choices, moved on by each reset (a node's memo names it) */

/* ---- the machine: CPU model and flags, library builds ---- */

static void cpuinfo_line(const char *field, char *out, size_t cap) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[8192];
    out[0] = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, field, strlen(field))) {
            char *v = strchr(line, ':');
            snprintf(out, cap, "%s", v ? v + 1 : "");
            break;
        }
    if (f) fclose(f);
}

static uint64_t fnv1a(uint64_t h, const char *s) {
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* the GNU build ID (hex) of the loaded object that holds this code: the mgc
 * binary, a test or libmgc; "" without one */
typedef struct {
    uintptr_t code;
    char hex[2 * 64 + 1];
} build_query;

static int build_id_of(struct dl_phdr_info *info, size_t size, void *data) {
    build_query *q = data;
    (void)size;
    int mine = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + p->p_vaddr;
        mine |= p->p_type == PT_LOAD && q->code >= lo && q->code - lo < p->p_memsz;
    }
    for (int i = 0; mine && i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        const unsigned char *n = (const unsigned char *)(info->dlpi_addr + p->p_vaddr), *end = n + p->p_memsz;
        while (p->p_type == PT_NOTE && n + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *h = (const void *)n;
            const unsigned char *name = n + sizeof *h, *desc = name + ((h->n_namesz + 3) & ~3u);
            if (h->n_type == NT_GNU_BUILD_ID && h->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
                for (size_t k = 0; k < h->n_descsz && k < 64; k++) snprintf(q->hex + 2 * k, 3, "%02x", desc[k]);
                return 1;
            }
            n = desc + ((h->n_descsz + 3) & ~3u);
        }
    }
    return mine;
}

static void find_path(void) {
    char dir[PATH_CAP - 64], model[256], flags[8192];
    const char *env = getenv("MGC_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    path[0] = 0;
    if (env && *env) snprintf(dir, sizeof dir, "%s", env);
    else if (xdg && *xdg) snprintf(dir, sizeof dir, "%s/mgc", xdg);
    else if (home && *home) snprintf(dir, sizeof dir, "%s/.cache/mgc", home);
    else return;
    cpuinfo_line("model name", model, sizeof model);
    cpuinfo_line("flags", flags, sizeof flags);
    const dnnl_version_t *v = dnnl_version();
    char libs[256];
    snprintf(libs, sizeof libs, "%s|onednn %d.%d.%d %s", openblas_get_config(), v->major, v->minor, v->patch, v->hash);
    /* and mgc's own build: a choice measured against other kernels is not kept */
    build_query q = {(uintptr_t)&find_path, ""};
    dl_iterate_phdr(build_id_of, &q);
    uint64_t h = fnv1a(fnv1a(fnv1a(fnv1a(1469598103934665603ull, model), flags), libs), q.hex);
    snprintf(path, sizeof path, "%s/kernels-%016llx.json", dir, (unsigned long long)h);
}

/* the cache file's directory into d (PATH_CAP); its file name, or NULL without a '/' */
static const char *dir_of_path(char *d) {
    snprintf(d, PATH_CAP, "%s", path);
    char *slash = strrchr(d, '/');
    if (!slash) return NULL;
    *slash = 0;
    return slash + 1;
}

/* mkdir -p of the cache file's directory */
static int make_dirs(void) {
    char d[PATH_CAP];
    if (!dir_of_path(d)) return 0;
    for (char *p = d + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(d, 0755) && errno != EEXIST) return -1;
            *p = '/';
        }
    return mkdir(d, 0755) && errno != EEXIST ? -1 : 0;
}

/* ---- the table ---- */

static choice *find(const char *key) {
    for (choice *c = table; c; c = c->next)
        if (!strcmp(c->key, key)) return c;
    return NULL;
}

static void put(const char *key, const char *name) {
    choice *c = find(key);
    if (!c && !(c = calloc(1, sizeof *c))) return; /* out of memory: chosen again next time */
    if (!c->key[0]) snprintf(c->key, sizeof c->key, "%s", key), c->next = table, table = c;
    snprintf(c->name, sizeof c->name, "%s", name);
}

/* ---- the cache file: {"mgc_kernels": 1, "choices": {key: candidate name}} ---- */

/* merge: keep the table's choice of a key both hold (another process's file
 * read back before writing) */
static const char *parse_cache(const char *text, int merge) {
    cJSON *root = cJSON_Parse(text);
    const char *why = NULL;
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "mgc_kernels"),
                *choices = cJSON_GetObjectItemCaseSensitive(root, "choices"), *it;
    if (!root) why = "not JSON";
    else if (!cJSON_IsNumber(version) || version->valueint != 1) why = "no \"mgc_kernels\": 1";
    else if (!cJSON_IsObject(choices)) why = "no \"choices\" object";
    const cJSON *list = why ? NULL : choices;
    cJSON_ArrayForEach(it, list) {
        if (!cJSON_IsString(it) || strlen(it->string) >= KEY_CAP || strlen(it->valuestring) >= 32) {
            why = "a choice that is not a short string";
            break;
        }
    }
    list = why ? NULL : choices;
    cJSON_ArrayForEach(it, list) if (!merge || !find(it->string)) put(it->string, it->valuestring);
    cJSON_Delete(root);
    return why;
}

static void load_cache(int merge) {
    FILE *f = path[0] ? fopen(path, "rb") : NULL;
    if (!f) return;
    size_t cap = 1 << 16, n = 0;
    char *text = malloc(cap + 1);
    for (size_t got; text && (got = fread(text + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            char *t = realloc(text, 2 * cap + 1);
            if (!t) free(text);
            text = t, cap *= 2;
        }
    }
    fclose(f);
    if (!text) return;
    text[n] = 0;
    const char *why = strlen(text) != n ? "a NUL byte" : parse_cache(text, merge);
    if (why && !merge) {
        /* nothing of a corrupt file is kept */
        for (choice *c; (c = table);) table = c->next, free(c);
        fprintf(stderr, "mgc: warning: kernel cache %s is corrupt (%s); measuring again\n", path, why);
    }
    free(text);
}

/* ---- the cache directory: one file per build, the least recently used pruned ---- */

/* "kernels-" 16 hex digits ".json": a cache file's name */
static int is_cache_name(const char *n) {
    if (strncmp(n, "kernels-", 8) || strlen(n) != 8 + 16 + 5 || strcmp(n + 24, ".json")) return 0;
    for (int i = 8; i < 24; i++)
        if (!strchr("0123456789abcdef", n[i])) return 0;
    return 1;
}

typedef struct {
    struct timespec used; /* the file's mtime: its build's last run (mark_used) or write */
    char name[32];
} cache_file;

static int newer_first(const void *a, const void *b) {
    const struct timespec *x = &((const cache_file *)a)->used, *y = &((const cache_file *)b)->used;
    return x->tv_sec != y->tv_sec ? (x->tv_sec < y->tv_sec) - (x->tv_sec > y->tv_sec)
                                   : (x->tv_nsec < y->tv_nsec) - (x->tv_nsec > y->tv_nsec);
}

/* A build that reads its cache marks it used (its mtime), so that pruning
 * goes by last use, not by last measurement. */
static void mark_used(void) {
    if (path[0]) utimensat(AT_FDCWD, path, NULL, 0);
}

/* Removes the cache files of other builds (and their locks) beyond the
 * KEEP_FILES - 1 most recently used: every rebuild of mgc writes a file of
 * its own, and nothing else would ever remove the old ones. Called by a
 * build writing its file. A run of a pruned build measures again. */
static void prune_others(void) {
    char dir[PATH_CAP];
    const char *mine = dir_of_path(dir);
    if (!mine) return;
    DIR *d = opendir(dir);
    if (!d) return;
    cache_file *files = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        struct stat st;
        char file[2 * PATH_CAP];
        snprintf(file, sizeof file, "%s/%s", dir, e->d_name);
        if (!is_cache_name(e->d_name) || !strcmp(e->d_name, mine) || stat(file, &st)) continue;
        if (n == cap) {
            cache_file *f = realloc(files, (cap = cap ? 2 * cap : 16) * sizeof *files);
            if (!f) break;
            files = f;
        }
        files[n].used = st.st_mtim;
        snprintf(files[n++].name, sizeof files->name, "%s", e->d_name);
    }
    closedir(d);
    if (n) qsort(files, n, sizeof *files, newer_first); /* files is NULL when there is none */
    for (size_t i = KEEP_FILES - 1; i < n; i++) {
        char file[2 * PATH_CAP];
        snprintf(file, sizeof file, "%s/%s", dir, files[i].name);
        unlink(file);
        snprintf(file, sizeof file, "%s/%s.lock", dir, files[i].name);
        unlink(file);
    }
    free(files);
}

/* Writes the table to a temporary file beside the cache and renames it over,
 * holding an flock on FILE.lock: the file is read back first and the keys
 * other processes chose since this one loaded it are kept (a corrupt one is
 * overwritten), so no process's measurement is lost. */
static void save_cache(void) {
    if (!path[0]) return;
    char lock_path[PATH_CAP + 8];
    snprintf(lock_path, sizeof lock_path, "%s.lock", path);
    int lock_fd = make_dirs() ? -1 : open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd >= 0) flock(lock_fd, LOCK_EX);
    load_cache(1);
    cJSON *root = cJSON_CreateObject(), *choices = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "mgc_kernels", 1);
    cJSON_AddItemToObject(root, "choices", choices);
    for (choice *c = table; c; c = c->next) cJSON_AddStringToObject(choices, c->key, c->name);
    char *text = cJSON_Print(root), tmp[PATH_CAP + 32];
    cJSON_Delete(root);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = text && !make_dirs() ? fopen(tmp, "wb") : NULL;
    int ok = f && fputs(text, f) >= 0 && fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (f) ok = !fclose(f) && ok;
    if (ok) ok = rename(tmp, path) == 0;
    else if (f) unlink(tmp);
    if (ok) prune_others();
    static int warned;
    if (!ok && !warned) fprintf(stderr, "mgc: warning: cannot write kernel cache %s: %s\n", path, strerror(errno));
    warned |= !ok;
    free(text);
    if (lock_fd >= 0) close(lock_fd); /* releases the flock */
}

/* every candidate name of every tuned op, for MGC_KERNELS */
static const char *const known[] = {"openblas", "onednn", "onednn-hwio", "direct", "winograd", "blocked", "thin"};

/* whether the launcher started several processes (as runtime/mpi.c reads it) */
static int launched_several(void) {
    const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    for (size_t k = 0; k < sizeof vars / sizeof *vars; k++) {
        const char *v = getenv(vars[k]);
        if (v && *v) return atoi(v) > 1;
    }
    return 0;
}

static void load(void) {
    const char *env = getenv("MGC_KERNELS");
    in_job = launched_several();
    forced[0] = 0;
    for (size_t i = 0; env && i < sizeof known / sizeof *known; i++)
        if (!strcmp(env, known[i])) snprintf(forced, sizeof forced, "%s", env);
    if (env && *env && strcmp(env, "auto") && !forced[0])
        fprintf(stderr,
                "mgc: warning: MGC_KERNELS='%s' is none of auto, openblas, onednn, onednn-hwio, direct, winograd, "
                "blocked, thin; measuring\n",
                env);
    find_path();
    load_cache(0);
    mark_used();
    loaded = 1;
}

/* ---- keys and measurement ---- */

static void put_shape(char *s, size_t cap, size_t *n, const ir_shape *sh) {
    *n += (size_t)snprintf(s + *n, *n < cap ? cap - *n : 0, " [");
    for (int i = 0; i < sh->rank; i++)
        *n += (size_t)snprintf(s + *n, *n < cap ? cap - *n : 0, "%s%lld", i ? "," : "", (long long)sh->dim[i]);
    *n += (size_t)snprintf(s + *n, *n < cap ? cap - *n : 0, "]");
}

/* "<op> t<threads> [in0] [in1] -> [out] a<iattr...>". An epilogue node
 * (issue 14) has the key of its core conv2d or matmul: its bias, residual and
 * activation left out, so a fused plan runs the GEMM or convolution the
 * unfused plan runs, and the two train to the same bits. */
static void key_of(const rt_kernel_args *k, char *s, size_t cap) {
    ir_op op = k->node->op;
    int n_in = k->node->n_in, act = -1; /* the epilogue's activation attribute */
    if (op == OP_MATMUL_EPILOGUE) op = OP_MATMUL, n_in = 2, act = 2;
    if (op == OP_CONV2D_EPILOGUE || op == OP_CONV2D_BN_EPILOGUE) op = OP_CONV2D, n_in = 2, act = 9;
    size_t n = (size_t)snprintf(s, cap, "%s t%d", ir_ops[op].name, cpu_kernels_threads());
    for (int i = 0; i < n_in; i++) put_shape(s, cap, &n, IN_SHAPE(k, i));
    n += (size_t)snprintf(s + n, n < cap ? cap - n : 0, " ->");
    put_shape(s, cap, &n, &k->node->shape);
    n += (size_t)snprintf(s + n, n < cap ? cap - n : 0, " a");
    for (int i = 0; i < IR_MAX_IATTR; i++)
        n += (size_t)snprintf(s + n, n < cap ? cap - n : 0, "%s%lld", i ? "," : "",
                              i == act ? 0LL : (long long)k->node->iattr[i]);
    /* issue 14 (speed): a filter gradient the direct candidate applies to
     * has three candidates, so a choice cached among two (before it) is not used */
    if (cpu_conv_direct_applies(k)) n += (size_t)snprintf(s + n, n < cap ? cap - n : 0, " +direct");
    /* likewise a convolution the winograd candidate applies to (ResNet-20 speed) */
    if (cpu_conv_winograd_applies(k)) n += (size_t)snprintf(s + n, n < cap ? cap - n : 0, " +winograd");
    /* and a one-thread matmul, which the blocked candidate runs (char_gpt speed) */
    if (op == OP_MATMUL && cpu_kernels_threads() == 1) n += (size_t)snprintf(s + n, n < cap ? cap - n : 0, " +blocked");
    /* and a one-thread matmul of K <= 512, which the thin candidate runs (the seed CNN's dense layer) */
    if (op == OP_MATMUL && cpu_thin_applies(k)) snprintf(s + n, n < cap ? cap - n : 0, " +thin");
}

/* the clock measure() reads: the calling thread's CPU time when the kernels
 * run on it alone (one thread per device: time the core spends on other
 * processes is not counted), else wall time (a team's work is on its threads) */
static double measure_now(void) {
    struct timespec t;
    clock_gettime(cpu_kernels_threads() == 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Times every candidate on k's buffers; returns the fastest's index, the
 * output left as the last run wrote it (*last: that candidate), or -1.
 * Interleaved (issue 14, ResNet-20 speed): each candidate runs once to warm
 * up, then TIMED_RUNS rounds run each in turn and its least time counts, so
 * a change of the machine's load weighs on all of them alike (one after the
 * other, a load spike during one candidate's runs decided the choice:
 * docs/cpu-kernels.md, "Measuring"). */
static int measure(const rt_kernel_args *k, const cpu_tune_op *op, int *last, char *err, size_t cap) {
    double least[TUNE_MAX_CAND];
    int best = -1;
    if (op->n > TUNE_MAX_CAND)
        return snprintf(err, cap, "kernel tuner: %d candidates, more than its %d", op->n, (int)TUNE_MAX_CAND), -1;
    for (int r = 0; r <= TIMED_RUNS; r++) /* round 0 warms up (and builds primitives) */
        for (int c = 0; c < op->n; c++) {
            if (op->applies && !op->applies(k, c)) continue;
            double t0 = measure_now();
            if (op->run(k, c, err, cap)) return -1;
            double t = measure_now() - t0;
            *last = c;
            if (r == 1 || (r > 1 && t < least[c])) least[c] = t;
            if (r == TIMED_RUNS && (best < 0 || least[c] < least[best])) best = c;
        }
    measured++;
    return best;
}

/* the first candidate that can run k (issue 14, speed): the default when the op's first cannot */
static int first_applicable(const rt_kernel_args *k, const cpu_tune_op *op) {
    for (int c = 0; c < op->n; c++)
        if (!op->applies || op->applies(k, c)) return c;
    return 0;
}

static int index_of(const cpu_tune_op *op, const char *name) {
    for (int c = 0; c < op->n; c++)
        if (!strcmp(op->names[c], name)) return c;
    return -1;
}

/* A node's memo: the choice for its key tagged (generation, threads,
 * candidate + 1), so that each later run skips the key, the lock and the
 * table (a key is about 30 snprintf calls: 0.5% of the seed CNN's one-core
 * step, issue 14); and the candidate's name, for traces (cpu_tune_named) */
static int64_t memo_tag(void) { return atomic_load(&generation) << 20 | cpu_kernels_threads(); }

int cpu_tune_run(const rt_kernel_args *k, const cpu_tune_op *op, char *err, size_t cap) {
    int64_t tag = memo_tag();
    if (k->memo && k->memo->tag >> 8 == tag) return op->run(k, (int)(k->memo->tag & 0xff) - 1, err, cap);
    char key[KEY_CAP];
    key_of(k, key, sizeof key);
    pthread_mutex_lock(&lock);
    if (!loaded) load();
    choice *ch = find(key);
    int c = ch ? index_of(op, ch->name) : -1; /* a name from another version: measured again */
    if (c >= 0 && op->applies && !op->applies(k, c)) c = -1; /* a choice that cannot run it (an edited file) */
    if (forced[0]) c = index_of(op, forced) < 0 ? 0 : index_of(op, forced); /* a name it lacks: its default */
    if (forced[0] && op->applies && !op->applies(k, c)) c = first_applicable(k, op); /* one that cannot run it */
    if (c < 0 && in_job) c = first_applicable(k, op); /* ranks agree: the cache's choice or the default, no measuring */
    if (c >= 0) {
        pthread_mutex_unlock(&lock);
        if (k->memo) *k->memo = (rt_kernel_memo){tag << 8 | (c + 1), op->names[c]};
        return op->run(k, c, err, cap);
    }
    /* measured under the lock: other devices wait for the one choice of the process */
    int last = -1, best = measure(k, op, &last, err, cap), rc = best < 0 ? -1 : 0;
    if (best >= 0) {
        put(key, op->names[best]);
        save_cache();
        if (k->memo) *k->memo = (rt_kernel_memo){tag << 8 | (best + 1), op->names[best]}; /* named from this run on */
        if (best != last) rc = op->run(k, best, err, cap);
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

void cpu_tune_reset(void) {
    pthread_mutex_lock(&lock);
    for (choice *c; (c = table);) table = c->next, free(c);
    loaded = 0, measured = 0;
    atomic_fetch_add(&generation, 1);
    pthread_mutex_unlock(&lock);
}

const char *cpu_tune_cache_path(void) {
    pthread_mutex_lock(&lock);
    if (!loaded) load();
    pthread_mutex_unlock(&lock);
    return path;
}

const char *cpu_tune_choice(const rt_kernel_args *k) {
    char key[KEY_CAP];
    key_of(k, key, sizeof key);
    pthread_mutex_lock(&lock);
    choice *c = find(key);
    pthread_mutex_unlock(&lock);
    return c ? c->name : NULL;
}

int cpu_tune_measured(void) { return measured; }

const char *cpu_tune_named(const rt_kernel_args *k) { return k->memo ? k->memo->kernel : NULL; }
