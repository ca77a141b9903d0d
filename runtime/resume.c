/* resume.c - the checkpoint directory (resume.h). */
#include "resume.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train.h"

/* n when name is "step-<n>.safetensors" (n a plain decimal), else -1. */
static int64_t step_of(const char *name) {
    const char *digits = name + 5, *end = digits;
    if (strncmp(name, "step-", 5)) return -1;
    int64_t n = 0;
    while (*end >= '0' && *end <= '9' && n < INT64_MAX / 10) n = n * 10 + (*end++ - '0');
    return end > digits && !strcmp(end, ".safetensors") ? n : -1;
}

/* What a writer killed mid-write leaves (ir/outfile.c). */
static bool is_stray_temp(const char *name) { return !strncmp(name, ".mgc-tmp-", 9); }

/* The steps of dir's checkpoints, newest first; *n their count. NULL and *n = 0
 * when dir does not exist; NULL and *n = -1 on an error. */
static int64_t *list_steps(const char *dir, int *n, char *err, size_t cap) {
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT) return NULL;
        snprintf(err, cap, "%s: cannot read the checkpoint directory: %s", dir, strerror(errno));
        *n = -1;
        return NULL;
    }
    int64_t *steps = NULL;
    for (struct dirent *e; (e = readdir(d));) {
        int64_t k = step_of(e->d_name);
        if (k < 0) continue;
        int64_t *grown = realloc(steps, (size_t)(*n + 1) * sizeof *steps);
        if (!grown) break;
        steps = grown;
        int at = (*n)++;
        while (at > 0 && steps[at - 1] < k) steps[at] = steps[at - 1], at--; /* newest first */
        steps[at] = k;
    }
    closedir(d);
    return steps;
}

int rt_ckpt_dir_newest(const char *dir, char *path, size_t cap, int64_t *step, char *err, size_t errcap) {
    int n;
    int64_t *steps = list_steps(dir, &n, err, errcap);
    if (n <= 0) return free(steps), n < 0 ? -1 : 0;
    *step = steps[0];
    snprintf(path, cap, "%s/step-%lld.safetensors", dir, (long long)steps[0]);
    free(steps);
    return 1;
}

/* Removes all but the newest `keep` checkpoints and stray temporaries. */
static void prune(const char *dir, int keep) {
    int n;
    char err[256], path[4096];
    int64_t *steps = list_steps(dir, &n, err, sizeof err);
    for (int k = keep; k < n; k++) {
        snprintf(path, sizeof path, "%s/step-%lld.safetensors", dir, (long long)steps[k]);
        unlink(path);
    }
    free(steps);
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (is_stray_temp(e->d_name)) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    if (d) closedir(d);
}

int rt_ckpt_dir_save(rt_session *s, const char *dir, uint64_t seed, int keep, char *err, size_t cap) {
    bool writer = rt_session_is_local(s, 0); /* every process saves (it averages state), replica 0's writes */
    if (writer && mkdir(dir, 0777) < 0 && errno != EEXIST) {
        snprintf(err, cap, "%s: cannot create the checkpoint directory: %s", dir, strerror(errno));
        return -1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/step-%lld.safetensors", dir, (long long)rt_session_step(s));
    if (rt_save_variables(s, path, seed, err, cap)) return -1;
    if (writer) prune(dir, keep);
    return 0;
}
