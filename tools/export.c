/* export.c - mgc export: a plan's inference graph with trained weights as an
 * ONNX model, through libmgc (mgc_export_onnx; docs/onnx.md). */
#include <getopt.h>
#include <stdio.h>

#include "../include/mgc.h"
#include "cli.h"

static const char export_help[] =
    "usage: mgc export PLAN.mgx --load CKPT -o MODEL.onnx\n"
    "  writes the predict graph of one replica (the outputs of mgc predict, the plan's batch per\n"
    "  replica) as an ONNX model, opset 17, with the checkpoint's variables as initializers\n";

static int fail(const char *what, const mgc_error *e) {
    fprintf(stderr, "mgc: %s%s%s\n", what ? what : "", what ? ": " : "", e->message);
    return 1;
}

int cmd_export(int argc, char **argv) {
    static const struct option longs[] = {{"load", required_argument, NULL, 'l'},
                                          {"output", required_argument, NULL, 'o'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    const char *load = NULL, *out = NULL;
    for (int c; (c = getopt_long(argc, argv, "o:h", longs, NULL)) != -1;) {
        if (c == 'l') load = optarg;
        else if (c == 'o') out = optarg;
        else if (c == 'h') return fputs(export_help, stdout), 0;
        else return fputs(export_help, stderr), 1;
    }
    const char *missing = optind != argc - 1 ? "one PLAN.mgx" : !load ? "--load CKPT" : !out ? "-o MODEL.onnx" : NULL;
    if (missing) {
        fprintf(stderr, "mgc: export needs %s\n", missing);
        fputs(export_help, stderr);
        return 1;
    }
    const char *path = argv[optind];
    mgc_error e;
    mgc_plan *p = NULL;
    mgc_session *s = NULL;
    int rc = 0;
    if (mgc_plan_load(path, &p, &e)) rc = fail(NULL, &e);
    else if (mgc_session_new(p, NULL, &s, &e)) rc = fail(path, &e);
    else if (mgc_checkpoint_load(s, load, &e)) rc = fail(NULL, &e);
    else if (mgc_export_onnx(s, out, &e)) rc = fail(e.status == MGC_ERR_ARG ? path : NULL, &e);
    else printf("exported model '%s' (batch %lld) to %s\n", mgc_plan_model_name(p),
                (long long)(mgc_plan_global_batch(p) / mgc_plan_devices(p)), out);
    mgc_session_free(s);
    mgc_plan_free(p);
    return rc;
}
