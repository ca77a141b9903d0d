/* dataset.c - datasets bound to model inputs (tensors, a Fashion-MNIST directory, --input files) and the shuffle. */
#include "data_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

void rt_dataset_free(rt_dataset *ds) {
    if (!ds) return;
    for (int i = 0; i < ds->n; i++) rt_tensor_free(&ds->t[i]), free(ds->source[i]);
    free(ds->t);
    free(ds->source);
    free(ds);
}

int64_t rt_dataset_count(const rt_dataset *ds) { return ds->count; }
int rt_dataset_inputs(const rt_dataset *ds) { return ds->n; }
const rt_tensor *rt_dataset_tensor(const rt_dataset *ds, int i) { return &ds->t[i]; }
const char *rt_dataset_source(const rt_dataset *ds, int i) { return ds->source[i]; }

int rt_dataset_check_range(const rt_dataset *ds, int i, int64_t limit, const char *what, char *err, size_t cap) {
    const rt_tensor *t = &ds->t[i];
    if (t->dtype != IR_I32) return 0;
    int64_t per = t->shape.dim[0] ? ir_shape_numel(&t->shape) / t->shape.dim[0] : 1;
    const int32_t *v = t->data;
    for (int64_t k = 0, n = ir_shape_numel(&t->shape); k < n; k++)
        if (v[k] < 0 || v[k] >= limit)
            return rt_data_fail(err, cap, "%s: %s %d of example %lld is outside [0, %lld)", ds->source[i], what, (int)v[k],
                        (long long)(k / per), (long long)limit);
    return 0;
}

/* Float inputs take float data or u8 pixels (scaled by 1/255): integers of
 * other widths are not images (an i8 pixel above 127 would turn negative).
 * i32 inputs (labels, ids) take i32 or u8. */
static bool convertible(ir_dtype from, ir_dtype to) {
    if (from == to) return true;
    if (to == IR_F32 || to == IR_F64) return from != IR_I32;
    return to == IR_I32 && from == IR_U8;
}

/* The shapes without their 1-sized axes: [28, 28] is [28, 28, 1]. */
static bool same_squeezed(const ir_shape *a, const ir_shape *b) {
    int i = 0, j = 0;
    for (;;) {
        while (i < a->rank && a->dim[i] == 1) i++;
        while (j < b->rank && b->dim[j] == 1) j++;
        if (i == a->rank || j == b->rank) return i == a->rank && j == b->rank;
        if (a->dim[i++] != b->dim[j++]) return false;
    }
}

static double elem(const void *p, ir_dtype t, int64_t i) {
    switch (t) {
    case IR_F32: return ((const float *)p)[i];
    case IR_I32: return ((const int32_t *)p)[i];
    case IR_F64: return ((const double *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}

/* Copies src into dst's dtype; u8 -> float scales by 1/255. */
static void convert(const rt_tensor *src, rt_tensor *dst, int64_t n) {
    if (src->dtype == dst->dtype) {
        memcpy(dst->data, src->data, (size_t)rt_tensor_bytes(dst));
        return;
    }
    double scale = src->dtype == IR_U8 && dst->dtype != IR_I32 ? 1.0 / 255.0 : 1.0;
    for (int64_t i = 0; i < n; i++) {
        double v = elem(src->data, src->dtype, i) * scale;
        switch (dst->dtype) {
        case IR_F32: ((float *)dst->data)[i] = (float)v; break;
        case IR_F64: ((double *)dst->data)[i] = v; break;
        case IR_I32: ((int32_t *)dst->data)[i] = (int32_t)v; break;
        default: ((uint8_t *)dst->data)[i] = (uint8_t)v; break;
        }
    }
}

/* Checks src (examples on axis 0) against the input and fills dst. */
static int bind_input(const rt_tensor *src, const char *name, const rt_input_spec *in, rt_tensor *dst, char *err,
                      size_t cap) {
    char b1[128], b2[128];
    if (src->shape.rank < 1) return rt_data_fail(err, cap, "%s: holds a scalar, not a list of examples", name);
    ir_shape ex = {.rank = src->shape.rank - 1};
    memcpy(ex.dim, src->shape.dim + 1, sizeof(int64_t) * (size_t)ex.rank);
    if (!same_squeezed(&ex, &in->shape))
        return rt_data_fail(err, cap, "%s: examples are %s but input '%s' wants %s", name, rt_dims_str(&src->shape, 1, b1, sizeof b1),
                    in->name, ir_type_str(in->dtype, &in->shape, b2, sizeof b2));
    if (!convertible(src->dtype, in->dtype))
        return rt_data_fail(err, cap, "%s: holds %s values but input '%s' wants %s%s", name, ir_dtype_name(src->dtype),
                    in->name, ir_type_str(in->dtype, &in->shape, b2, sizeof b2),
                    src->dtype == IR_I32 ? " (float data, or u8 pixels scaled by 1/255)" : "");
    if (in->shape.rank + 1 > IR_MAX_RANK) return rt_data_fail(err, cap, "input '%s' has too many dimensions", in->name);
    dst->dtype = in->dtype;
    dst->shape.rank = in->shape.rank + 1;
    dst->shape.dim[0] = src->shape.dim[0];
    memcpy(dst->shape.dim + 1, in->shape.dim, sizeof(int64_t) * (size_t)in->shape.rank);
    dst->data = malloc((size_t)rt_tensor_bytes(dst) + 1);
    if (!dst->data) return rt_data_fail(err, cap, "%s: out of memory", name);
    convert(src, dst, ir_shape_numel(&dst->shape));
    return 0;
}

static rt_dataset *dataset_new(int n) {
    rt_dataset *ds = calloc(1, sizeof *ds);
    if (ds) ds->t = calloc((size_t)(n ? n : 1), sizeof *ds->t), ds->source = calloc((size_t)(n ? n : 1), sizeof(char *));
    if (ds && (!ds->t || !ds->source)) free(ds->t), free(ds->source), free(ds), ds = NULL;
    if (ds) ds->n = n;
    return ds;
}

rt_dataset *rt_dataset_from_tensors(const rt_tensor *tensors, const char *const *names, const rt_input_spec *inputs,
                                    int n_inputs, char *err, size_t cap) {
    rt_dataset *ds = dataset_new(n_inputs);
    if (!ds) return rt_data_fail(err, cap, "out of memory"), NULL;
    for (int i = 0; i < n_inputs; i++) {
        if (bind_input(&tensors[i], names[i], &inputs[i], &ds->t[i], err, cap) < 0) goto bad;
        if (!(ds->source[i] = strdup(names[i]))) {
            rt_data_fail(err, cap, "out of memory");
            goto bad;
        }
        int64_t n = tensors[i].shape.dim[0];
        if (i > 0 && n != ds->count) {
            rt_data_fail(err, cap, "%s has %lld examples but %s has %lld", names[i], (long long)n, names[0],
                 (long long)ds->count);
            goto bad;
        }
        ds->count = n;
    }
    return ds;
bad:
    rt_dataset_free(ds);
    return NULL;
}

/* dir/base, or dir/base.gz when only that exists */
static char *quartet_path(const char *dir, const char *base) {
    size_t n = strlen(dir) + strlen(base) + 8;
    char *p = malloc(n);
    if (!p) return NULL;
    snprintf(p, n, "%s/%s", dir, base);
    if (access(p, F_OK) == 0) return p;
    snprintf(p, n, "%s/%s.gz", dir, base);
    return p;
}

static int find_image_label(const rt_input_spec *inputs, int n, int *img, int *lab, char *err, size_t cap) {
    *img = *lab = -1;
    for (int i = 0; i < n; i++) {
        if (inputs[i].dtype == IR_F32 && *img < 0) *img = i;
        else if (inputs[i].dtype == IR_I32 && *lab < 0) *lab = i;
    }
    if (n != 2 || *img < 0 || *lab < 0)
        return rt_data_fail(err, cap, "--data needs a model with two inputs, one f32 (images) and one i32 (labels); "
                              "bind inputs with name=FILE instead");
    return 0;
}

rt_dataset *rt_dataset_from_dir(const char *dir, const char *split, const rt_input_spec *inputs, int n_inputs,
                                char *err, size_t cap) {
    int img, lab;
    if (!dir) dir = RT_DEFAULT_DATA_DIR;
    if (strcmp(split, "train") && strcmp(split, "test"))
        return rt_data_fail(err, cap, "unknown split '%s' (train or test)", split), NULL;
    if (find_image_label(inputs, n_inputs, &img, &lab, err, cap) < 0) return NULL;
    const char *pre = !strcmp(split, "train") ? "train" : "t10k";
    char bi[64], bl[64];
    snprintf(bi, sizeof bi, "%s-images-idx3-ubyte", pre);
    snprintf(bl, sizeof bl, "%s-labels-idx1-ubyte", pre);
    char *pi = quartet_path(dir, bi), *pl = quartet_path(dir, bl);
    rt_tensor t[2] = {{0}, {0}};
    rt_dataset *ds = NULL;
    if (!pi || !pl) rt_data_fail(err, cap, "out of memory");
    else if (rt_load_idx(pi, &t[0], err, cap) == 0 && rt_load_idx(pl, &t[1], err, cap) == 0) {
        if (t[0].shape.dim[0] != t[1].shape.dim[0])
            rt_data_fail(err, cap, "%s has %lld labels but %s has %lld images", pl, (long long)t[1].shape.dim[0], pi,
                 (long long)t[0].shape.dim[0]);
        else {
            rt_tensor ordered[2];
            const char *names[2];
            ordered[img] = t[0], names[img] = pi;
            ordered[lab] = t[1], names[lab] = pl;
            ds = rt_dataset_from_tensors(ordered, names, inputs, n_inputs, err, cap);
        }
    }
    rt_tensor_free(&t[0]);
    rt_tensor_free(&t[1]);
    free(pi);
    free(pl);
    return ds;
}

/* Which binding names input `name`; -1 if none. Also checks the syntax of all of them. */
static int find_binding(const char *const *b, int n, const char *name, char *err, size_t cap) {
    int found = -1;
    for (int j = 0; j < n; j++) {
        const char *eq = strchr(b[j], '=');
        if (!eq || eq == b[j] || !eq[1]) return rt_data_fail(err, cap, "'%s': expected NAME=FILE", b[j]) - 1;
        if ((size_t)(eq - b[j]) == strlen(name) && !strncmp(b[j], name, strlen(name))) {
            if (found >= 0) return rt_data_fail(err, cap, "input '%s' is bound twice", name) - 1;
            found = j;
        }
    }
    return found;
}

static int check_bindings(const char *const *b, int nb, const rt_input_spec *inputs, int n, int *which, char *err,
                          size_t cap) {
    for (int i = 0; i < n; i++) {
        which[i] = find_binding(b, nb, inputs[i].name, err, cap);
        if (which[i] < -1) return -1;
        if (which[i] < 0) return rt_data_fail(err, cap, "input '%s' has no data (bind it with %s=FILE)", inputs[i].name,
                                      inputs[i].name);
    }
    for (int j = 0; j < nb; j++) {
        int used = 0;
        for (int i = 0; i < n; i++) used |= which[i] == j;
        if (!used) {
            size_t k = strcspn(b[j], "=");
            return rt_data_fail(err, cap, "no model input named '%.*s'", (int)k, b[j]);
        }
    }
    return 0;
}

rt_dataset *rt_dataset_from_bindings(const char *const *bindings, int n_bindings, const rt_input_spec *inputs,
                                     int n_inputs, char *err, size_t cap) {
    int *which = calloc((size_t)n_inputs + 1, sizeof *which);
    rt_tensor *t = calloc((size_t)n_inputs + 1, sizeof *t);
    const char **names = calloc((size_t)n_inputs + 1, sizeof *names);
    rt_dataset *ds = NULL;
    int i = 0;
    if (!which || !t || !names) rt_data_fail(err, cap, "out of memory");
    else if (check_bindings(bindings, n_bindings, inputs, n_inputs, which, err, cap) == 0) {
        for (; i < n_inputs; i++) {
            names[i] = strchr(bindings[which[i]], '=') + 1;
            if (rt_load_tensor_file(names[i], &t[i], err, cap) < 0) break;
        }
        if (i == n_inputs) ds = rt_dataset_from_tensors(t, names, inputs, n_inputs, err, cap);
    }
    for (int j = 0; t && j < n_inputs; j++) rt_tensor_free(&t[j]);
    free(which);
    free(t);
    free(names);
    return ds;
}

/* ---- shuffle ---- */

static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, bound) by Lemire's multiply-and-reject. */
static uint64_t uniform(uint64_t *state, uint64_t bound) {
    unsigned __int128 m = (unsigned __int128)splitmix64(state) * bound;
    uint64_t lo = (uint64_t)m;
    if (lo < bound) {
        uint64_t t = -bound % bound;
        while (lo < t) {
            m = (unsigned __int128)splitmix64(state) * bound;
            lo = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

/* state = splitmix64 output of seed, xor epoch; then Fisher-Yates from the top. */
void rt_permutation(uint64_t seed, int64_t epoch, int64_t n, int64_t *perm) {
    uint64_t s = seed;
    uint64_t state = splitmix64(&s) ^ (uint64_t)epoch;
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)uniform(&state, (uint64_t)i + 1);
        int64_t x = perm[i];
        perm[i] = perm[j];
        perm[j] = x;
    }
}
