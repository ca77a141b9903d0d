/* outfile.h - the files mgc writes (plans, checkpoints, NPY outputs): checked
 * before any work, written atomically, and never anything but a regular file:
 * a device, FIFO, socket or directory in the way is refused, a symlink is
 * followed to its target (the link stays a link). And the files it reads:
 * regular files only, so a FIFO without a writer cannot hang a run. */
#ifndef MGC_OUTFILE_H
#define MGC_OUTFILE_H

#include <stddef.h>
#include <sys/stat.h>

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

/* Opens path for reading (the descriptor, with *st filled) if it is a
 * regular file; else -1 with "PATH: cannot open: Is a directory" (or
 * another reason) or "PATH: not a regular file (a FIFO); mgc reads only
 * regular files" in err. `verb` is the word of the message ("open", "read"). */
int ir_open_regular(const char *path, const char *verb, struct stat *st, char *err, size_t cap);

#endif
