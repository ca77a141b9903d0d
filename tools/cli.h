/* cli.h - the pieces of the mgc command line shared between its commands. */
#ifndef MGC_CLI_H
#define MGC_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "../include/mgc.h"

/* A whole decimal integer from lo to hi for option `flag`: false after
 * printing "mgc: FLAG: 'S' is not an integer from LO to HI" (no wrap, no cap). */
bool cli_parse_int(const char *flag, const char *s, int64_t lo, int64_t hi, int64_t *out);

/* Prints a libmgc error as "mgc: <message>" (a devices error names --devices). */
void cli_print_error(const mgc_error *err);

/* The stdlib the CLI compiles with: $MGC_STDLIB, else the source tree's. */
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
