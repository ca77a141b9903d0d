/* variables.c - libmgc variables by name (read out of replica 0, written
 * to every replica) and safetensors checkpoints (runtime/train.c's). */
#include <stdio.h>
#include <string.h>

#include "../runtime/resume.h"
#include "../runtime/train.h"
#include "api_impl.h"

int mgc_variable_count(const mgc_session *s) { return s->n_vars; }

int lib_find_variable(const mgc_session *s, const char *name) {
    int lo = 0, hi = s->n_vars - 1;
    while (name && lo <= hi) { /* s->vars is sorted by name */
        int mid = (lo + hi) / 2, c = strcmp(s->plan->m->g.nodes[s->vars[mid]].name, name);
        if (!c) return s->vars[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

mgc_status mgc_variable_info(const mgc_session *s, int k, mgc_tensor_info *out, mgc_var_kind *kind, mgc_error *err) {
    if (k < 0 || k >= s->n_vars) return lib_fail(err, MGC_ERR_ARG, "variable %d: the session has %d", k, s->n_vars);
    const ir_node *n = &s->plan->m->g.nodes[s->vars[k]];
    *out = (mgc_tensor_info){.name = n->name, .dtype = (mgc_dtype)n->dtype, .rank = n->shape.rank};
    for (int d = 0; d < n->shape.rank; d++) out->shape[d] = n->shape.dim[d];
    if (kind) *kind = n->op == OP_PARAM ? MGC_VAR_PARAM : n->op == OP_STATE ? MGC_VAR_STATE : MGC_VAR_SLOT;
    return lib_ok(err);
}

/* The node of variable `name` whose size is `bytes`, or -1 after an error. */
static int sized_variable(const mgc_session *s, const char *name, const void *buf, size_t bytes, mgc_error *err) {
    int i = lib_find_variable(s, name);
    if (i < 0) {
        lib_fail(err, MGC_ERR_ARG, "model '%s' has no variable named '%s'", s->plan->m->model_name, name ? name : "(null)");
        return -1;
    }
    const ir_node *n = &s->plan->m->g.nodes[i];
    if ((size_t)ir_node_bytes(n) != bytes || !buf) {
        char t[128];
        lib_fail(err, MGC_ERR_ARG, "variable '%s' is %s (%lld bytes), the buffer has %zu bytes", name,
                 ir_type_str(n->dtype, &n->shape, t, sizeof t), (long long)ir_node_bytes(n), buf ? bytes : 0);
        return -1;
    }
    return i;
}

mgc_status mgc_variable_read(mgc_session *s, const char *name, void *dst, size_t bytes, mgc_error *err) {
    int i = sized_variable(s, name, dst, bytes, err);
    if (i < 0) return err ? err->status : MGC_ERR_ARG;
    /* state drifts apart across replicas: its value is the mean (session.h) */
    if (s->plan->m->g.nodes[i].op == OP_STATE && rt_session_average_states(s->s))
        return lib_fail(err, MGC_ERR_RUNTIME, "%s", rt_session_error(s->s));
    if (rt_session_read(s->s, i, dst)) return lib_fail(err, MGC_ERR_RUNTIME, "%s", rt_session_error(s->s));
    return lib_ok(err);
}

mgc_status mgc_variable_write(mgc_session *s, const char *name, const void *src, size_t bytes, mgc_error *err) {
    int i = sized_variable(s, name, src, bytes, err);
    if (i < 0) return err ? err->status : MGC_ERR_ARG;
    if (rt_session_write(s->s, i, src) || rt_session_broadcast_variables(s->s))
        return lib_fail(err, MGC_ERR_RUNTIME, "%s", rt_session_error(s->s));
    return lib_ok(err);
}

mgc_status mgc_checkpoint_save(mgc_session *s, const char *path, mgc_error *err) {
    char msg[1024];
    if (!path) return lib_fail(err, MGC_ERR_ARG, "mgc_checkpoint_save: path must not be NULL");
    if (rt_save_variables(s->s, path, s->seed, msg, sizeof msg)) return lib_fail(err, MGC_ERR_IO, "%s", msg);
    return lib_ok(err);
}

mgc_status mgc_checkpoint_load(mgc_session *s, const char *path, mgc_error *err) {
    char msg[1024];
    if (!path) return lib_fail(err, MGC_ERR_ARG, "mgc_checkpoint_load: path must not be NULL");
    if (rt_load_variables(s->s, path, &s->seed, msg, sizeof msg)) return lib_fail(err, MGC_ERR_IO, "%s", msg);
    return lib_ok(err);
}

int mgc_checkpoint_newest(const char *dir, char *path, size_t cap, int64_t *step, mgc_error *err) {
    char msg[1024];
    if (!dir || !path || !step) return lib_fail(err, MGC_ERR_ARG, "mgc_checkpoint_newest: dir, path and step must not be NULL"), -1;
    int found = rt_ckpt_dir_newest(dir, path, cap, step, msg, sizeof msg);
    if (found < 0) return lib_fail(err, MGC_ERR_IO, "%s", msg), -1;
    lib_ok(err);
    return found;
}
