/* elab_scope.c - param scopes: Keras-style names ("dense_1", "block/dense"),
 * names given at a call (name: "tower") and params shared between calls of
 * the same name (reuse: true), as a Siamese tower needs. */
#include <stdlib.h>
#include <string.h>

#include "elab.h"

bool elab_scope_shared(const scope *s) {
    for (; s; s = s->parent)
        if (s->reuse) return true;
    return false;
}

bool elab_scope_failed(const scope *s) {
    for (; s; s = s->parent)
        if (s->failed) return true;
    return false;
}

static const made_scope *find_made(const elab *c, const char *path) {
    for (int i = 0; i < c->n_made; i++)
        if (!strcmp(c->made[i].path, path)) return &c->made[i];
    return NULL;
}

static void add_made(elab *c, const char *path, ir_loc loc) {
    if (find_made(c, path)) return;
    c->made = elab_xrealloc(c->made, (size_t)(c->n_made + 1) * sizeof *c->made);
    c->made[c->n_made++] = (made_scope){path, loc};
}

/* The next free number of `base` among the scopes of call `parent_id`. */
static int next_number(elab *c, int parent_id, const char *base) {
    const char *key = elab_fmt(c, "%d:%s", parent_id, base);
    int i = 0;
    while (i < c->n_counters && strcmp(c->counters[i].key, key)) i++;
    if (i == c->n_counters) {
        c->counters = elab_xrealloc(c->counters, (size_t)(c->n_counters + 1) * sizeof *c->counters);
        c->counters[c->n_counters++] = (counter){key, 0};
    }
    return c->counters[i].count++;
}

/* The hierarchical name of scope s. Calls of the same function in the same
 * call are numbered Keras-style (dense, dense_1, ...), skipping names already
 * taken (by a name: given earlier); inside a shared scope the numbering
 * starts again, so the second use finds the first use's names. */
const char *elab_scope_path(elab *c, scope *s) {
    if (s->path) return s->path;
    const char *parent = elab_scope_path(c, s->parent);
    const char *key = *parent ? elab_fmt(c, "%s/%s", parent, s->base) : s->base;
    bool shared = elab_scope_shared(s);
    if (s->given) {
        const made_scope *prev = find_made(c, key);
        if (prev && !shared) {
            s->failed = true;
            elab_err_raw(c, s->loc, "param scope '%s' already exists (at %s:%d:%d); pass reuse: true to share its params", key,
                         prev->loc.file ? prev->loc.file : "?", prev->loc.line, prev->loc.col);
        } else if (!prev && s->reuse) {
            s->failed = true;
            elab_err_raw(c, s->loc, "reuse: true, but there is no param scope '%s' to share yet; its first call names it without reuse", key);
        }
        add_made(c, key, s->loc);
        return s->path = key;
    }
    const char *path;
    do {
        int k = next_number(c, s->parent->id, s->base);
        path = k ? elab_fmt(c, "%s_%d", key, k) : key;
    } while (!shared && find_made(c, path));
    add_made(c, path, s->loc);
    return s->path = path;
}

/* A scope name: letters, digits and _, as an identifier. */
static bool valid_name(const char *s) {
    if (!*s || (*s >= '0' && *s <= '9')) return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_')) return false;
    return true;
}

bool elab_scope_options(elab *c, call *k, scope *sc) {
    const arg *name = NULL, *reuse = NULL;
    int n = 0;
    for (int i = 0; i < k->n; i++) {
        const char *kw = k->a[i].name;
        if (kw && !strcmp(kw, "name")) name = &k->a[i];
        else if (kw && !strcmp(kw, "reuse")) reuse = &k->a[i];
        else k->a[n++] = k->a[i];
    }
    k->n = n;
    bool ok = true;
    if (name && (name->v.k != V_STR || !valid_name(name->v.s)))
        elab_err_raw(c, name->loc, "name: must be a string of letters, digits and _ (a param scope), got %s",
                     name->v.k == V_STR ? elab_fmt(c, "\"%s\"", name->v.s) : elab_describe(c, name->v)), ok = false;
    if (reuse && reuse->v.k != V_INT)
        elab_err_raw(c, reuse->loc, "reuse: must be true or false, got %s", elab_describe(c, reuse->v)), ok = false;
    if (ok && reuse && reuse->v.i && !name)
        elab_err_raw(c, reuse->loc, "reuse: true needs name: the param scope to share"), ok = false;
    if (!ok) return false;
    if (name) sc->base = name->v.s, sc->given = true;
    sc->reuse = reuse && reuse->v.i;
    return true;
}

value elab_shared_variable(elab *c, const ast_stmt *st, const char *full, const ir_shape *s) {
    const char *what = st->kind == ST_STATE ? "state" : "param";
    ir_op op = st->kind == ST_STATE ? OP_STATE : OP_PARAM;
    char here[128], there[128];
    for (int i = 0; i < c->m->g.n; i++) {
        const ir_node *n = node(c, i);
        if ((n->op != OP_PARAM && n->op != OP_STATE) || n->name != full) continue;
        const char *first = elab_fmt(c, "where its first use made it (at %s:%d:%d)", n->loc.file ? n->loc.file : "?", n->loc.line, n->loc.col);
        if (n->op != op) {
            elab_err(c, st->name_loc, "shared '%s' is a %s here but a %s %s", full, what, n->op == OP_STATE ? "state" : "param", first);
            return ERR;
        }
        if (n->dtype != (ir_dtype)st->type->dtype || !ir_shape_eq(&n->shape, s)) {
            elab_err(c, st->name_loc, "shared %s '%s' is %s here but %s %s", what, full,
                     ir_type_str((ir_dtype)st->type->dtype, s, here, sizeof here), ir_type_str(n->dtype, &n->shape, there, sizeof there), first);
            return ERR;
        }
        return vtensor(i);
    }
    elab_err(c, st->name_loc, "%s '%s' does not exist to share: reuse: true shares only what the first use of the scope made", what, full);
    return ERR;
}
