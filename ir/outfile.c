/* outfile.c - checked, atomic writes of regular files (outfile.h). */
#define _GNU_SOURCE /* O_CLOEXEC, mkostemp */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *kind_of(mode_t m) {
    return S_ISDIR(m) ? "a directory" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
         : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" : "not a file";
}

/* The file a write of path lands on: path, or its symlink's final target
 * (malloc'd). NULL with a message when the link leads nowhere. */
static char *target_of(const char *path, char *err, size_t cap) {
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode)) return strdup(path);
    char *real = realpath(path, NULL);
    if (!real) fail(err, cap, "%s: cannot write: the symlink leads to no file (%s)", path, strerror(errno));
    return real;
}

/* The directory part of path (malloc'd): "." for a bare name. */
static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
}

static int check_target(const char *shown, const char *target, char *err, size_t cap) {
    struct stat st;
    if (stat(target, &st) == 0)
        return S_ISREG(st.st_mode) ? 0
                                   : fail(err, cap, "%s: not a regular file (%s); mgc writes only regular files", shown,
                                          kind_of(st.st_mode));
    if (errno != ENOENT) return fail(err, cap, "%s: cannot write: %s", shown, strerror(errno));
    const char *base = strrchr(target, '/');
    base = base ? base + 1 : target;
    if (strlen(base) > NAME_MAX) return fail(err, cap, "%s: cannot write: %s", shown, strerror(ENAMETOOLONG));
    char *dir = dir_of(target);
    int rc = 0;
    if (stat(dir, &st) != 0) rc = fail(err, cap, "%s: cannot write: %s", shown, strerror(errno));
    else if (!S_ISDIR(st.st_mode)) rc = fail(err, cap, "%s: cannot write: %s is not a directory", shown, dir);
    else if (access(dir, W_OK) != 0) rc = fail(err, cap, "%s: cannot write: %s", shown, strerror(errno));
    free(dir);
    return rc;
}

int ir_check_output(const char *path, char *err, size_t cap) {
    char *target = target_of(path, err, cap);
    if (!target) return -1;
    int rc = check_target(path, target, err, cap);
    free(target);
    return rc;
}

static int write_parts(int fd, const void *const *parts, const size_t *sizes, int n) {
    for (int i = 0; i < n; i++)
        for (size_t done = 0; done < sizes[i];) {
            ssize_t k = write(fd, (const char *)parts[i] + done, sizes[i] - done);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) return k < 0 ? errno : EIO;
            done += (size_t)k;
        }
    return 0;
}

int ir_write_file_atomic(const char *path, const void *const *parts, const size_t *sizes, int n, char *err,
                         size_t cap) {
    char *target = target_of(path, err, cap);
    if (!target) return -1;
    if (check_target(path, target, err, cap)) return free(target), -1;
    char *dir = dir_of(target), *tmp = malloc(strlen(dir) + 32);
    sprintf(tmp, "%s/.mgc-tmp-XXXXXX", dir);
    int fd = mkostemp(tmp, O_CLOEXEC), e = fd < 0 ? errno : 0;
    if (!e && fchmod(fd, 0644) < 0) e = errno;
    if (!e) e = write_parts(fd, parts, sizes, n);
    if (!e && fsync(fd) < 0) e = errno;
    if (fd >= 0 && close(fd) < 0 && !e) e = errno;
    if (!e && rename(tmp, target) < 0) e = errno;
    if (e && fd >= 0) unlink(tmp);
    int dfd = e ? -1 : open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* make the rename durable */
    if (dfd >= 0) fsync(dfd), close(dfd);
    free(tmp), free(dir), free(target);
    return e ? fail(err, cap, "%s: cannot write: %s", path, strerror(e)) : 0;
}

int ir_open_regular(const char *path, const char *verb, struct stat *st, char *err, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO without a writer must not block */
    if (fd < 0) return fail(err, cap, "%s: cannot %s: %s", path, verb, strerror(errno));
    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
        int e = errno;
        bool dir = S_ISDIR(st->st_mode), other = !dir && e == 0;
        close(fd);
        if (other) return fail(err, cap, "%s: not a regular file (%s); mgc reads only regular files", path, kind_of(st->st_mode));
        return fail(err, cap, "%s: cannot %s: %s", path, verb, strerror(dir ? EISDIR : e));
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

