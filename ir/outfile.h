/* outfile.h - the files mgc writes (plans, checkpoints, NPY outputs): checked
 * before any work, written atomically, and never anything but a regular file:
 * a device, FIFO, socket or directory in the way is refused, a symlink is
 * followed to its target (the link stays a link). */
#ifndef MGC_OUTFILE_H
#define MGC_OUTFILE_H

#include <stddef.h>

/* Whether path can be written: absent with an existing directory, or a
 * regular file (through symlinks). Returns 0, or -1 with one line in err:
 * "PATH: not a regular file (a character device); mgc writes only regular
 * files" or "PATH: cannot write: REASON". */
int ir_check_output(const char *path, char *err, size_t cap);

/* Writes the concatenation of n buffers to path (its symlink's target when
 * it is one) atomically: a temporary ".mgc-tmp-XXXXXX" in the same directory
 * (short, so any valid file name works), fsync, rename, fsync of the
 * directory. Refuses what ir_check_output refuses. On failure the old file is
 * left as it was, the temporary is removed and err holds a message. */
int ir_write_file_atomic(const char *path, const void *const *parts, const size_t *sizes, int n, char *err,
                         size_t cap);

#endif
