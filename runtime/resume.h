/* resume.h - a directory of periodic checkpoints, DIR/step-<n>.safetensors,
 * written atomically with the newest K kept, from which a run resumes (what
 * Keras' BackupAndRestore does). A checkpoint holds the params, optimizer
 * slots, step and seed; the data order and dropout masks are functions of
 * (seed, step), so a resumed run continues bit for bit. */
#ifndef MGC_RESUME_H
#define MGC_RESUME_H

#include <stddef.h>
#include <stdint.h>

#include "session.h"

/* The newest complete checkpoint of dir: returns 1 with its path (in path,
 * cap bytes) and step, 0 when dir holds none (or does not exist), -1 with a
 * message in err when dir cannot be read. Files of killed writers
 * (.mgc-tmp-XXXXXX) are not checkpoints. */
int rt_ckpt_dir_newest(const char *dir, char *path, size_t cap, int64_t *step, char *err, size_t errcap);

/* Writes DIR/step-<the session's step>.safetensors (creating dir if needed),
 * then removes all but the newest `keep` checkpoints and any stray temporary
 * file. Only the process holding replica 0 writes. */
int rt_ckpt_dir_save(rt_session *s, const char *dir, uint64_t seed, int keep, char *err, size_t cap);

#endif
