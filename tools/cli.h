/* cli.h - the pieces of the mgc command line shared between its commands. */
#ifndef MGC_CLI_H
#define MGC_CLI_H

#include <stdbool.h>

#include "../ir/ir.h"
#include "../passes/passes.h"

/* Options of `mgc compile` that decide the plan. */
typedef struct {
    const char *devices;   /* --devices */
    int replicas;          /* --replicas */
    bool strict_devices;   /* --strict-devices */
    pass_options pass;
    const char *dump_after;
} cli_compile_options;

/* Resolves --devices / --replicas / the default into o->pass.devices.
 * Announces fallbacks on stderr. Returns false after printing an error. */
bool cli_resolve_devices(cli_compile_options *o);

/* Elaborates and runs every pass. NULL after printing errors. */
ir_module *cli_compile(const char *path, cli_compile_options *o, FILE *dump_out);

/* Compiles a loaded plan again from the sources it carries, for other
 * devices, keeping its global batch, cross-device ops and bucket size. */
ir_module *cli_replan(const ir_module *plan, const ir_device *devices, int n_devices);

/* Usable CUDA devices (0 with the reason in why). */
int cli_gpu_count(char *why, size_t cap);

/* A whole decimal integer from lo to hi for option `flag`: false after
 * printing "mgc: FLAG: 'S' is not an integer from LO to HI" (no wrap, no cap). */
bool cli_parse_int(const char *flag, const char *s, int64_t lo, int64_t hi, int64_t *out);

/* Loads a plan, printing "mgc: <error>" on failure. */
ir_module *cli_load_plan(const char *path);

const char *cli_stdlib_dir(void);

int cmd_compile(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_export(int argc, char **argv);

#endif
