/* elab_init.c - initializers as values of the language: the Keras names
 * (zeros, ones, glorot_uniform, he_normal, he_uniform, glorot_normal,
 * lecun_normal, lecun_uniform, orthogonal, truncated_normal, random_normal,
 * constant), calls that set their parameter (truncated_normal(stddev: 0.02),
 * constant(0.1)), and their placement on a variable node. */
#include <math.h>
#include <string.h>

#include "elab.h"

/* The parameter of an initializer, by its Keras name, and its Keras default. */
static const char *param_name(ir_init k) { return ir_init_fattr(k) == 0 ? "value" : "stddev"; }
static double param_default(ir_init k) { return ir_init_fattr(k) == 1 ? 0.05 : 0.0; }

value elab_init_value(ir_init k) { return (value){.k = V_INIT, .i = k, .f = param_default(k)}; }

/* init(), init(p), init(name: p): the initializer with its parameter set */
value elab_call_init(elab *c, ir_init kind, call *k) {
    const char *name = ir_init_names[kind];
    bool has = ir_init_fattr(kind) >= 0;
    value r = elab_init_value(kind);
    for (int i = 0; i < k->n; i++) {
        const arg *a = &k->a[i];
        if (!has || i > 0) {
            elab_err(c, a->loc, "'%s' takes %s", name, has ? elab_fmt(c, "one argument, %s", param_name(kind)) : "no arguments");
            return ERR;
        }
        if (a->name && strcmp(a->name, param_name(kind))) {
            elab_err(c, a->loc, "'%s' has no parameter named '%s'; it takes %s", name, a->name, param_name(kind));
            return ERR;
        }
        if (!is_num(a->v)) {
            if (a->v.k != V_ERR) elab_err(c, a->loc, "%s of '%s' must be a number, got %s", param_name(kind), name, elab_describe(c, a->v));
            return ERR;
        }
        r.f = num(a->v);
        if (!isfinite(r.f) || (ir_init_fattr(kind) == 1 && r.f <= 0)) {
            elab_err(c, a->loc, "%s of '%s' must be %s, got %g", param_name(kind), name,
                     ir_init_fattr(kind) == 1 ? "positive" : "finite", r.f);
            return ERR;
        }
    }
    return r;
}

/* The initializer on a variable node of shape n->shape (fans already set);
 * orthogonal needs a matrix (rank 2 or more), as Keras. */
bool elab_init_apply(elab *c, value init, ir_node *n, ir_loc loc, const char *what, const char *name) {
    char b[96];
    if (init.i == INIT_ORTHOGONAL && n->shape.rank < 2) {
        elab_err(c, loc, "the orthogonal initializer needs a %s of rank 2 or more; '%s' is %s", what, name,
                 ir_type_str(n->dtype, &n->shape, b, sizeof b));
        return false;
    }
    n->iattr[0] = init.i;
    int f = ir_init_fattr((ir_init)init.i);
    if (f >= 0) n->fattr[f] = init.f;
    return true;
}
