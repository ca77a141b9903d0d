/* mgc.c - the command line: mgc COMMAND [options]. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"compile", cmd_compile, "compile and replicate a model into a plan (.mgx)"},
    {"dump", cmd_dump, "print a model's or a plan's graph (text, dot, svg)"},
    {"inspect", cmd_inspect, "show a plan's inputs, params, devices, buckets and memory"},
    {"run", cmd_run, "train a plan"},
    {"eval", cmd_eval, "test loss and metrics of trained weights"},
    {"predict", cmd_predict, "model outputs for given inputs, as .npy"},
    {"generate", cmd_generate, "sample text from a trained character model"},
    {"export", cmd_export, "a plan's inference graph with trained weights as an ONNX model"},
};

static void usage(FILE *out) {
    fprintf(out, "usage: mgc COMMAND [options]   (mgc COMMAND --help for a command's options)\n\ncommands:\n");
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++)
        fprintf(out, "  %-8s %s\n", commands[k].name, commands[k].summary);
    fprintf(out, "  %-8s %s\n", "help", "this text");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 1;
    }
    if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return 0;
    }
    char name[32];
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++)
        if (!strcmp(argv[1], commands[k].name)) {
            snprintf(name, sizeof name, "mgc %s", commands[k].name); /* getopt's messages: "mgc run: ..." */
            argv[1] = name;
            return commands[k].run(argc - 1, argv + 1);
        }
    fprintf(stderr, "mgc: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 1;
}
