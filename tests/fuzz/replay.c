/* replay.c - a main() for a libFuzzer target without libFuzzer: feeds every
 * file of the given directories (and every file given directly) to
 * LLVMFuzzerTestOneInput, so corpora and past crashes replay as normal tests.
 *   fuzz_replay_X PATH...   (a missing directory holds no inputs yet) */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Reads a whole file; NULL (with a message) when it cannot. */
static uint8_t *read_all(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) buf = realloc(buf, cap *= 2);
    }
    int failed = ferror(f) || !buf;
    fclose(f);
    if (failed) {
        fprintf(stderr, "replay: %s: read error\n", path);
        free(buf);
        return NULL;
    }
    *size = n;
    return buf;
}

/* One input: an exact-size copy so that ASan sees reads past its end. */
static int replay_file(const char *path) {
    size_t n = 0;
    uint8_t *buf = read_all(path, &n);
    if (!buf) return -1;
    uint8_t *exact = malloc(n ? n : 1);
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of dir (dot files skipped), in name order; returns the
 * number replayed or -1. */
static int replay_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : (fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno)), -1);
    char **names = NULL;
    int n = 0, status = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        names = realloc(names, (size_t)(n + 1) * sizeof *names);
        names[n] = malloc(strlen(dir) + strlen(e->d_name) + 2);
        sprintf(names[n++], "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (n > 1) qsort(names, (size_t)n, sizeof *names, by_name);
    int count = 0;
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
            if (replay_file(names[i]) < 0) status = -1;
            else count++;
        }
        free(names[i]);
    }
    free(names);
    return status < 0 ? -1 : count;
}

int main(int argc, char **argv) {
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    int total = 0, failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        int n = stat(argv[i], &st) == 0 && S_ISREG(st.st_mode) ? (replay_file(argv[i]) < 0 ? -1 : 1) : replay_dir(argv[i]);
        if (n < 0) failed = 1;
        else total += n;
    }
    printf("replayed %d inputs\n", total);
    return failed;
}
