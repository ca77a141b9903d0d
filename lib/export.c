/* export.c - libmgc's ONNX export: a session's plan with the session's
 * variables (export/onnx.c does the graph). */
#include <stdio.h>

#include "../export/onnx.h"
#include "api_impl.h"

/* replica 0's value of a variable (state averaged first, as predict does) */
static bool read_variable(void *ctx, int node, void *dst, char *err, size_t cap) {
    mgc_session *s = ctx;
    if (rt_session_read(s->s, node, dst)) {
        snprintf(err, cap, "%s", rt_session_error(s->s));
        return false;
    }
    return true;
}

mgc_status mgc_export_onnx(mgc_session *s, const char *path, mgc_error *err) {
    char msg[1024];
    if (!s || !path) return lib_fail(err, MGC_ERR_ARG, "mgc_export_onnx: session and path must not be NULL");
    if (rt_session_average_states(s->s)) return lib_fail(err, MGC_ERR_RUNTIME, "%s", rt_session_error(s->s));
    switch (onnx_export(s->plan->m, path, read_variable, s, msg, sizeof msg)) {
    case ONNX_OK: return lib_ok(err);
    case ONNX_UNSUPPORTED: return lib_fail(err, MGC_ERR_ARG, "%s", msg);
    case ONNX_IO: return lib_fail(err, MGC_ERR_IO, "%s", msg);
    case ONNX_READ: break;
    }
    return lib_fail(err, MGC_ERR_RUNTIME, "%s", msg);
}
