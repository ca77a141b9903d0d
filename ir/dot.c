/* dot.c - Graphviz pictures of a module: plain (one box per op) or replicated
 * (one cluster per device, collectives coloured, comm-stream ops dashed). */
#include <stdio.h>

#include "ir.h"

#define COLOR_SHARD "lightskyblue"
#define COLOR_ALL_REDUCE "orange"
#define COLOR_BROADCAST "palegreen"
#define COLOR_VARIABLE "lightyellow"
#define COLOR_ALL_GATHER "plum" /* issue 13: sparse gradient exchange */

/* Writes s as the inside of a double-quoted DOT string. */
static void put_escaped(const char *s, FILE *out) {
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', out);
        if (*s == '\n') fputs("\\n", out);
        else fputc(*s, out);
    }
}

static const char *fill_of(const ir_node *n) {
    switch (n->op) {
    case OP_SHARD: return COLOR_SHARD;
    case OP_ALL_REDUCE: return COLOR_ALL_REDUCE;
    case OP_BROADCAST: return COLOR_BROADCAST;
    case OP_ALL_GATHER: return COLOR_ALL_GATHER;
    case OP_PARAM: case OP_VAR: case OP_STATE: return COLOR_VARIABLE;
    default: return NULL;
    }
}

static void put_node(const ir_module *m, int i, bool replicated, FILE *out) {
    const ir_node *n = &m->g.nodes[i];
    char type[160];
    ir_type_str(n->dtype, &n->shape, type, sizeof type);
    fprintf(out, "    n%d [label=\"%%%d %s", i, i, (unsigned)n->op < OP_COUNT ? ir_ops[n->op].name : "?");
    if (n->op == OP_ALL_REDUCE) fprintf(out, " (bucket %lld)", (long long)n->iattr[0]);
    for (int j = 0; n->op == OP_FUSED && n->fused && j < n->fused->n; j++) /* issue 14: its ops */
        fprintf(out, "%s%s", j ? " > " : "\\n", (unsigned)n->fused->ins[j].op < OP_COUNT ? ir_ops[n->fused->ins[j].op].name : "?");
    fprintf(out, "\\n%s", type);
    if (n->name) fputs("\\n", out), put_escaped(n->name, out);
    fputc('"', out);
    const char *fill = replicated ? fill_of(n) : NULL;
    bool comm = replicated && n->stream == STREAM_COMM;
    if (fill || comm) {
        fprintf(out, ", style=\"%s%s\"", fill ? "filled" : "", fill && comm ? ",dashed" : comm ? "dashed" : "");
        if (fill) fprintf(out, ", fillcolor=%s", fill);
    }
    fputs("];\n", out);
}

static void put_edges(const ir_module *m, FILE *out) {
    for (int i = 0; i < m->g.n; i++)
        for (int k = 0; k < m->g.nodes[i].n_in; k++) fprintf(out, "  n%d -> n%d;\n", m->g.nodes[i].in[k], i);
}

/* One cluster holding the nodes placed on device d (-1: the host). */
static void put_cluster(const ir_module *m, int d, FILE *out) {
    if (d < 0) {
        fputs("  subgraph cluster_host {\n    label=\"host\";\n", out);
    } else {
        fprintf(out, "  subgraph cluster_dev%d {\n    label=\"replica %d: ", d, d);
        put_escaped(m->devices[d].name, out);
        fprintf(out, ":%d\";\n", m->devices[d].index);
    }
    for (int i = 0; i < m->g.n; i++)
        if (m->g.nodes[i].device == d) put_node(m, i, true, out);
    fputs("  }\n", out);
}

/* Nodes on no valid device (an unreplicated module drawn replicated). */
static void put_unplaced(const ir_module *m, FILE *out) {
    for (int i = 0; i < m->g.n; i++)
        if (m->g.nodes[i].device < -1 || m->g.nodes[i].device >= m->n_devices) put_node(m, i, true, out);
}

static void put_legend(FILE *out) {
    fputs("  subgraph cluster_legend {\n    label=\"legend\";\n", out);
    fputs("    legend_shard [label=\"shard (batch split)\", style=filled, fillcolor=" COLOR_SHARD "];\n", out);
    fputs("    legend_ar [label=\"all_reduce (bucket)\", style=filled, fillcolor=" COLOR_ALL_REDUCE "];\n", out);
    fputs("    legend_bc [label=\"broadcast (init)\", style=filled, fillcolor=" COLOR_BROADCAST "];\n", out);
    fputs("    legend_ag [label=\"all_gather (sparse gradient)\", style=filled, fillcolor=" COLOR_ALL_GATHER "];\n", out);
    fputs("    legend_var [label=\"variable\", style=filled, fillcolor=" COLOR_VARIABLE "];\n", out);
    fputs("    legend_comm [label=\"comm stream\", style=dashed];\n", out);
    fputs("    legend_shard -> legend_ar -> legend_bc -> legend_ag -> legend_var -> legend_comm [style=invis];\n  }\n", out);
}

void ir_print_dot(const ir_module *m, FILE *out, bool replicated) {
    fputs("digraph mgc {\n  graph [label=\"", out);
    put_escaped(m->model_name ? m->model_name : "module", out);
    fputs("\", labelloc=t];\n  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n", out);
    if (!replicated) {
        for (int i = 0; i < m->g.n; i++) put_node(m, i, false, out);
    } else {
        put_cluster(m, -1, out);
        for (int d = 0; d < m->n_devices; d++) put_cluster(m, d, out);
        put_unplaced(m, out);
        put_legend(out);
    }
    put_edges(m, out);
    fputs("}\n", out);
}
