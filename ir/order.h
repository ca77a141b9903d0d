/* order.h - happens-before between the nodes of one program of a compiled
 * schedule, from stream order and events (docs/runtime.md, "Happens-before").
 *
 * A program's lists run concurrently, one per (device, stream); a list runs
 * its items in order, a RECORD marks the point its stream has reached and a
 * WAIT holds its stream until that point. Node a happens before node b when a
 * runs before b on the same list, or a chain of records and waits leads from
 * a's list after a to b's list before b. Events link the streams of one
 * device (a wait for another device's event is refused); devices meet only
 * inside collectives, and every arena belongs to one device. The order is
 * kept as vector clocks: for every kernel node, the last position of each
 * stream of its device that happens before it (or is it). Both the memory
 * plan and the plan verifier ask it. */
#ifndef MGC_ORDER_H
#define MGC_ORDER_H

#include "ir.h"

typedef struct ir_order ir_order;

/* The happens-before order of program p (0 .. IR_PROGRAM_COUNT-1) of m, whose
 * schedule lists must be well formed (ir_verify's structural checks). Returns
 * NULL with a one-line message in err when the lists cannot all run to their
 * end (a wait for an event that is never recorded, or waits in a cycle), when
 * a wait comes before its record in node order (the executor issues the
 * lists merged in node order), a wait is for another device's event, or a
 * node runs twice. */
ir_order *ir_order_new(const ir_module *m, int program, char *err, size_t cap);
void ir_order_free(ir_order *o);

/* The list node i runs on in this program (device * STREAM_COUNT + stream),
 * or -1 when it has no kernel in it. */
int ir_order_list(const ir_order *o, int i);
/* Node i's position among its list's kernels (-1 when it has none). */
int ir_order_pos(const ir_order *o, int i);
/* The last position of `stream` of node i's device that happens before node
 * i or is node i (-1: none). */
int ir_order_seen(const ir_order *o, int i, int stream);
/* a happens before b: both run in this program on one device, a != b, and
 * a's position on its list is one that b has seen. */
bool ir_order_before(const ir_order *o, int a, int b);

/* The race check (ir/races.c): in every program, every two accesses of
 * overlapping arena bytes by kernels on different streams, one of them a
 * write, are ordered by happens-before; no write lands on bytes between the
 * write of the value a read expects there and that read (the host's reads of
 * results after a program included); a kernel overwrites an input only in
 * place. Reports each problem (naming both nodes, their streams, positions
 * and byte ranges) and returns their number; *pairs (may be NULL) gets the
 * number of cross-stream pairs of overlapping accesses found ordered. */
int ir_check_races(const ir_module *m, ir_report_fn report, void *ctx, int64_t *pairs);
/* The same check visiting every overlapping pair of accesses - quadratic
 * where bytes are reused often; the tests hold ir_check_races to its answers. */
int ir_check_races_pairwise(const ir_module *m, ir_report_fn report, void *ctx, int64_t *pairs);

/* Whether the host reads node i's bytes after program p ends (the train
 * report, eval's loss and metrics, predict's output, on every replica): the
 * memory plan keeps those bytes to the end and the verifier checks it. */
bool ir_host_reads(const ir_module *m, int program, int i);

/* A reshape or view on a device: no kernel, it names its input's bytes
 * (memplan places it there, the verifier checks it). */
bool ir_is_view(const ir_node *n);
/* Whether node n's kernel writes its input k in place (optimizer updates
 * write the param and their slots, a broadcast its variable). */
bool ir_writes_input(const ir_node *n, int k);
/* The input of an optimizer update that holds the squared gradient norm it
 * clips by (its last, when its clipnorm attribute is > 0), else -1. */
int ir_update_norm_input(const ir_node *n);
/* Whether node n's kernel reads its input k when it runs in `program` (a bit
 * index, as ir_program_names): every input, except in_training's other
 * branch (input 1 in training, input 0 outside it), which that program need
 * not compute, and conv2d_bn_epilogue's convolution (its output c, input 2, in
 * training; its x and w, inputs 0 and 1, outside it). */
bool ir_reads_input(const ir_node *n, int k, int program);

#endif
