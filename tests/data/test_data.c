/* test_data.c - IDX and NPY readers, datasets, the loader and atomic writes; `test_data CASE`. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

#include "../../runtime/data.h"
#include "check.h"

static char dir[64];
static char err[512];

static const char *at(const char *name) {
    static char paths[8][256];
    static int k;
    char *p = paths[k++ % 8];
    snprintf(p, 256, "%s/%s", dir, name);
    return p;
}

static void put(const char *path, const void *buf, size_t n, int gz) {
    if (gz) {
        gzFile f = gzopen(path, "wb");
        gzwrite(f, buf, (unsigned)n);
        gzclose(f);
    } else {
        FILE *f = fopen(path, "wb");
        fwrite(buf, 1, n, f);
        fclose(f);
    }
}

/* IDX header: 00 00 type rank, dims big-endian; returns its length */
static size_t idx_header(unsigned char *b, int type, int rank, const uint32_t *dims) {
    b[0] = b[1] = 0, b[2] = (unsigned char)type, b[3] = (unsigned char)rank;
    for (int i = 0; i < rank; i++)
        for (int j = 0; j < 4; j++) b[4 + 4 * i + j] = (unsigned char)(dims[i] >> (24 - 8 * j));
    return 4 + 4 * (size_t)rank;
}

/* u8 images [n,h,w] with pixel = (i*7 + p) % 256, labels [n] = i % 10 */
static void write_images(const char *path, uint32_t n, uint32_t h, uint32_t w, int gz) {
    size_t len = 16 + (size_t)n * h * w;
    unsigned char *b = malloc(len);
    size_t o = idx_header(b, 0x08, 3, (uint32_t[]){n, h, w});
    for (size_t i = 0; i < (size_t)n * h * w; i++) b[o + i] = (unsigned char)((i / (h * w) * 7 + i % (h * w)) % 256);
    put(path, b, len, gz);
    free(b);
}

static void write_labels(const char *path, uint32_t n, int gz) {
    unsigned char *b = malloc(8 + n);
    size_t o = idx_header(b, 0x08, 1, (uint32_t[]){n});
    for (uint32_t i = 0; i < n; i++) b[o + i] = (unsigned char)(i % 10);
    put(path, b, 8 + n, gz);
    free(b);
}

static void case_idx_roundtrip(void) {
    rt_tensor t;
    for (int gz = 0; gz < 2; gz++) {
        const char *p = at(gz ? "img.gz" : "img");
        write_images(p, 3, 2, 4, gz);
        CHECK(rt_load_idx(p, &t, err, sizeof err) == 0);
        CHECK(t.dtype == IR_U8 && t.shape.rank == 3 && t.shape.dim[0] == 3 && t.shape.dim[2] == 4);
        CHECK(((uint8_t *)t.data)[8 + 5] == 7 + 5);
        rt_tensor_free(&t);
    }
    /* every element type, converted */
    unsigned char b[64];
    size_t o = idx_header(b, 0x0B, 1, (uint32_t[]){2});
    memcpy(b + o, "\xff\xfe\x01\x00", 4); /* i16: -2, 256 */
    CHECK(rt_load_idx_mem(b, o + 4, "m", &t, err, sizeof err) == 0);
    CHECK(t.dtype == IR_I32 && ((int32_t *)t.data)[0] == -2 && ((int32_t *)t.data)[1] == 256);
    rt_tensor_free(&t);
    o = idx_header(b, 0x09, 1, (uint32_t[]){1});
    b[o] = 0x80; /* i8 -128 */
    CHECK(rt_load_idx_mem(b, o + 1, "m", &t, err, sizeof err) == 0 && ((int32_t *)t.data)[0] == -128);
    rt_tensor_free(&t);
    o = idx_header(b, 0x0C, 1, (uint32_t[]){1});
    memcpy(b + o, "\x80\x00\x00\x01", 4);
    CHECK(rt_load_idx_mem(b, o + 4, "m", &t, err, sizeof err) == 0 && ((int32_t *)t.data)[0] == INT32_MIN + 1);
    rt_tensor_free(&t);
    o = idx_header(b, 0x0D, 2, (uint32_t[]){1, 1});
    memcpy(b + o, "\x3f\xc0\x00\x00", 4); /* f32 1.5 */
    CHECK(rt_load_idx_mem(b, o + 4, "m", &t, err, sizeof err) == 0 && t.dtype == IR_F32 && ((float *)t.data)[0] == 1.5f);
    rt_tensor_free(&t);
    o = idx_header(b, 0x0E, 1, (uint32_t[]){1});
    memcpy(b + o, "\xc0\x04\x00\x00\x00\x00\x00\x00", 8); /* f64 -2.5 */
    CHECK(rt_load_idx_mem(b, o + 8, "m", &t, err, sizeof err) == 0 && t.dtype == IR_F32 && ((float *)t.data)[0] == -2.5f);
    rt_tensor_free(&t);
    /* gzip in memory */
    write_images(at("g.gz"), 2, 3, 3, 1);
    size_t len;
    unsigned char *gzb = rt_read_file(at("g.gz"), &len, err, sizeof err);
    CHECK(gzb && rt_load_idx_mem(gzb, len, "g", &t, err, sizeof err) == 0 && t.shape.dim[0] == 2 &&
          ((uint8_t *)t.data)[17] == 7 + 8);
    rt_tensor_free(&t);
    free(gzb);
}

static void case_idx_errors(void) {
    rt_tensor t;
    char want[512];
    const char *p = at("bad");
    put(p, "\x12\x34\x56\x78\0\0\0\0", 8, 0);
    CHECK_ERR(rt_load_idx(p, &t, err, sizeof err) < 0, err, (snprintf(want, sizeof want, "%s: not an IDX file (bad magic 0x12345678)", p), want));
    put(p, "\x12\x34\x56\x78\0\0\0\0", 8, 1);
    CHECK_ERR(rt_load_idx(p, &t, err, sizeof err) < 0, err, want);
    const char *missing = at("missing");
    CHECK_ERR(rt_load_idx(missing, &t, err, sizeof err) < 0, err,
              (snprintf(want, sizeof want, "%s: cannot open: No such file or directory", missing), want));
    unsigned char b[64] = {0};
    size_t o = idx_header(b, 0x08, 2, (uint32_t[]){4, 6});
    for (int gz = 0; gz < 2; gz++) {
        put(p, b, o + 10, gz);
        CHECK_ERR(rt_load_idx(p, &t, err, sizeof err) < 0, err,
                  (snprintf(want, sizeof want, "%s: truncated (expected 24 bytes of data, got 10)", p), want));
    }
    put(p, b, 6, 0);
    CHECK_ERR(rt_load_idx(p, &t, err, sizeof err) < 0, err,
              (snprintf(want, sizeof want, "%s: truncated (expected 12 bytes of header, got 6)", p), want));
    o = idx_header(b, 0x08, 3, (uint32_t[]){65536, 65536, 65536});
    put(p, b, o, 0);
    CHECK_ERR(rt_load_idx(p, &t, err, sizeof err) < 0, err,
              (snprintf(want, sizeof want, "%s: dimensions 65536x65536x65536 exceed the limit of 2^31 elements", p), want));
    /* big but under the element limit: refused by the file size, nothing allocated */
    o = idx_header(b, 0x0D, 2, (uint32_t[]){20000, 20000});
    put(p, b, o + 4, 0);
    CHECK_ERR(rt_load_idx(p, &t, err, sizeof err) < 0, err,
              (snprintf(want, sizeof want, "%s: truncated (expected 1600000000 bytes of data, got 4)", p), want));
    put(p, b, o + 4, 1);
    CHECK(rt_load_idx(p, &t, err, sizeof err) < 0 && strstr(err, "dimensions 20000x20000 need 1600000000 bytes, more than the file can hold"));
    o = idx_header(b, 0x08, 7, (uint32_t[]){1, 1, 1, 1, 1, 1, 1});
    CHECK_ERR(rt_load_idx_mem(b, o + 1, "m", &t, err, sizeof err) < 0, err, "m: IDX file has 7 dimensions (at most 6 supported)");
    CHECK_ERR(rt_load_idx_mem("\x1f\x8b\x07\x00garbage", 11, "m", &t, err, sizeof err) < 0, err,
              "m: corrupt gzip data: unknown compression method");
}

static void case_npy_roundtrip(void) {
    float f[6] = {1, -2, 3.5f, 4, 5, 6};
    rt_tensor t = {IR_F32, {2, {2, 3}}, f}, u;
    const char *p = at("a.npy");
    CHECK(rt_save_npy(p, &t, err, sizeof err) == 0);
    CHECK(rt_load_npy(p, &u, err, sizeof err) == 0 && u.dtype == IR_F32 && u.shape.rank == 2 && u.shape.dim[1] == 3 &&
          !memcmp(u.data, f, sizeof f));
    rt_tensor_free(&u);
    size_t len;
    unsigned char *raw = rt_read_file(p, &len, err, sizeof err);
    CHECK(raw && len == 128 + sizeof f && raw[127] == '\n');
    CHECK(raw && strstr((char *)raw + 10, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"));
    free(raw);
    int32_t i[5] = {1, 2, 3, -4, 5};
    uint8_t c[3] = {0, 128, 255};
    double d[1] = {0.25};
    rt_tensor ts[3] = {{IR_I32, {1, {5}}, i}, {IR_U8, {1, {3}}, c}, {IR_F64, {0, {0}}, d}};
    for (int k = 0; k < 3; k++) {
        CHECK(rt_save_npy(p, &ts[k], err, sizeof err) == 0);
        CHECK(rt_load_tensor_file(p, &u, err, sizeof err) == 0 && u.dtype == ts[k].dtype &&
              ir_shape_eq(&u.shape, &ts[k].shape) && !memcmp(u.data, ts[k].data, (size_t)rt_tensor_bytes(&u)));
        rt_tensor_free(&u);
    }
    /* version 2 header, <i8 converted to i32 */
    unsigned char b[128] = "\x93NUMPY\x02\x00";
    const char *h = "{\"descr\":\"<i8\",\"shape\":(2,),\"fortran_order\":False}\n";
    uint32_t hl = (uint32_t)strlen(h);
    memcpy(b + 8, &hl, 4);
    memcpy(b + 12, h, hl);
    int64_t v[2] = {-7, 2000000000};
    memcpy(b + 12 + hl, v, 16);
    CHECK(rt_load_npy_mem(b, 12 + hl + 16, "m", &u, err, sizeof err) == 0 && u.dtype == IR_I32 &&
          ((int32_t *)u.data)[0] == -7 && ((int32_t *)u.data)[1] == 2000000000);
    rt_tensor_free(&u);
}

/* NPY v1 with header text h and nbytes of zero data */
static size_t npy(unsigned char *b, const char *h, size_t nbytes) {
    size_t hl = strlen(h);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (unsigned char)hl, b[9] = 0;
    memcpy(b + 10, h, hl);
    memset(b + 10 + hl, 0, nbytes);
    return 10 + hl + nbytes;
}

static void case_npy_errors(void) {
    unsigned char b[256];
    rt_tensor t;
    size_t n = npy(b, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16);
    CHECK_ERR(rt_load_npy_mem(b, n, "x.npy", &t, err, sizeof err) < 0, err,
              "x.npy: fortran_order arrays are not supported (save in C order)");
    n = npy(b, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8);
    CHECK_ERR(rt_load_npy_mem(b, n, "x.npy", &t, err, sizeof err) < 0, err,
              "x.npy: unsupported dtype '>f4' (supported: <f4 <f8 <i4 <i8 |u1 |i1)");
    n = npy(b, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 20);
    CHECK_ERR(rt_load_npy_mem(b, n, "x.npy", &t, err, sizeof err) < 0, err,
              "x.npy: truncated (expected 24 bytes of data, got 20)");
    n = npy(b, "{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000), }", 0);
    CHECK_ERR(rt_load_npy_mem(b, n, "x.npy", &t, err, sizeof err) < 0, err,
              "x.npy: shape 100000x100000 exceeds the limit of 2^31 elements");
    n = npy(b, "{'descr': '<f4', 'shape': (2,), }", 8);
    CHECK_ERR(rt_load_npy_mem(b, n, "x.npy", &t, err, sizeof err) < 0, err,
              "x.npy: bad NPY header: missing 'descr', 'fortran_order' or 'shape'");
    n = npy(b, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,, }", 8);
    CHECK_ERR(rt_load_npy_mem(b, n, "x.npy", &t, err, sizeof err) < 0, err,
              "x.npy: bad NPY header: bad 'shape' value (at most 6 dimensions)");
    n = npy(b, "{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }", 0);
    memcpy(b + n, "\0\0\0\0\x01\0\0\0", 8);
    CHECK_ERR(rt_load_npy_mem(b, n + 8, "x.npy", &t, err, sizeof err) < 0, err,
              "x.npy: int64 value 4294967296 at index 0 does not fit in i32");
    CHECK_ERR(rt_load_npy_mem("PK\3\4xxxxxxxx", 12, "x.npy", &t, err, sizeof err) < 0, err,
              "x.npy: not an NPY file (bad magic)");
    b[6] = 4;
    CHECK_ERR(rt_load_npy_mem(b, n, "x.npy", &t, err, sizeof err) < 0, err, "x.npy: unsupported NPY version 4.0");
    b[6] = 1, b[8] = 200;
    CHECK_ERR(rt_load_npy_mem(b, 80, "x.npy", &t, err, sizeof err) < 0, err,
              "x.npy: truncated (header of 200 bytes, file has 70 after the preamble)");
}

static const rt_input_spec mnist[2] = {
    {"image", IR_F32, {3, {28, 28, 1}}},
    {"label", IR_I32, {0, {0}}},
};

static void case_dataset(void) {
    char want[512];
    write_images(at("train-images-idx3-ubyte.gz"), 5, 28, 28, 1);
    write_labels(at("train-labels-idx1-ubyte"), 5, 0);
    rt_dataset *ds = rt_dataset_from_dir(dir, "train", mnist, 2, err, sizeof err);
    CHECK(ds && rt_dataset_count(ds) == 5);
    if (ds) {
        const rt_tensor *im = rt_dataset_tensor(ds, 0), *lb = rt_dataset_tensor(ds, 1);
        CHECK(im->dtype == IR_F32 && im->shape.rank == 4 && im->shape.dim[3] == 1 && lb->shape.rank == 1);
        CHECK(((float *)im->data)[784 * 2 + 3] == (float)((14 + 3) / 255.0));
        CHECK(((int32_t *)lb->data)[4] == 4);
    }
    rt_dataset_free(ds);
    /* counts that disagree */
    write_images(at("t10k-images-idx3-ubyte"), 4, 28, 28, 0);
    write_labels(at("t10k-labels-idx1-ubyte.gz"), 5, 1);
    CHECK_ERR(!rt_dataset_from_dir(dir, "test", mnist, 2, err, sizeof err), err,
              (snprintf(want, sizeof want, "%s has 5 labels but %s has 4 images", at("t10k-labels-idx1-ubyte.gz"),
                        at("t10k-images-idx3-ubyte")), want));
    /* shape that does not fit the input */
    write_images(at("t10k-images-idx3-ubyte"), 5, 32, 32, 0);
    CHECK_ERR(!rt_dataset_from_dir(dir, "test", mnist, 2, err, sizeof err), err,
              (snprintf(want, sizeof want, "%s: examples are 32x32 but input 'image' wants f32[28,28,1]",
                        at("t10k-images-idx3-ubyte")), want));
    /* bindings: NPY labels, IDX images [28, 28] for an input of [28, 28, 1] (1-sized axes aside,
     * the shapes must agree: [784] or [14, 56] is not an image of 28x28) */
    rt_input_spec flat[2] = {{"x", IR_F32, {3, {28, 28, 1}}}, {"y", IR_I32, {0, {0}}}};
    int32_t lab[5] = {9, 8, 7, 6, 5};
    CHECK(rt_save_npy(at("y.npy"), &(rt_tensor){IR_I32, {1, {5}}, lab}, err, sizeof err) == 0);
    char bx[300], by[300];
    snprintf(bx, sizeof bx, "x=%s", at("train-images-idx3-ubyte.gz"));
    snprintf(by, sizeof by, "y=%s", at("y.npy"));
    ds = rt_dataset_from_bindings((const char *[]){by, bx}, 2, flat, 2, err, sizeof err);
    CHECK(ds && rt_dataset_count(ds) == 5 && ((int32_t *)rt_dataset_tensor(ds, 1)->data)[1] == 8);
    rt_dataset_free(ds);
    for (int k = 0; k < 2; k++) {
        rt_input_spec wrong[2] = {{"x", IR_F32, k ? (ir_shape){2, {14, 56}} : (ir_shape){1, {784}}}, flat[1]};
        CHECK_ERR(!rt_dataset_from_bindings((const char *[]){by, bx}, 2, wrong, 2, err, sizeof err), err,
                  (snprintf(want, sizeof want, "%s: examples are 28x28 but input 'x' wants f32[%s]",
                            at("train-images-idx3-ubyte.gz"), k ? "14,56" : "784"), want));
    }
    /* integers that are not u8 pixels are not images */
    int32_t ints[5 * 4] = {0};
    CHECK(rt_save_npy(at("xi.npy"), &(rt_tensor){IR_I32, {2, {5, 4}}, ints}, err, sizeof err) == 0);
    char bxi[300];
    snprintf(bxi, sizeof bxi, "x=%s", at("xi.npy"));
    rt_input_spec four[2] = {{"x", IR_F32, {1, {4}}}, flat[1]};
    CHECK_ERR(!rt_dataset_from_bindings((const char *[]){bxi, by}, 2, four, 2, err, sizeof err), err,
              (snprintf(want, sizeof want,
                        "%s: holds i32 values but input 'x' wants f32[4] (float data, or u8 pixels scaled by 1/255)",
                        at("xi.npy")), want));
    float fl[5] = {0};
    CHECK(rt_save_npy(at("yf.npy"), &(rt_tensor){IR_F32, {1, {5}}, fl}, err, sizeof err) == 0);
    snprintf(by, sizeof by, "y=%s", at("yf.npy"));
    CHECK_ERR(!rt_dataset_from_bindings((const char *[]){bx, by}, 2, flat, 2, err, sizeof err), err,
              (snprintf(want, sizeof want, "%s: holds f32 values but input 'y' wants i32[]", at("yf.npy")), want));
    CHECK_ERR(!rt_dataset_from_bindings((const char *[]){bx}, 1, flat, 2, err, sizeof err), err,
              "input 'y' has no data (bind it with y=FILE)");
    CHECK_ERR(!rt_dataset_from_bindings((const char *[]){bx, by, "z=q"}, 3, flat, 2, err, sizeof err), err,
              "no model input named 'z'");
    CHECK_ERR(!rt_dataset_from_bindings((const char *[]){"x"}, 1, flat, 2, err, sizeof err), err,
              "'x': expected NAME=FILE");
    int32_t lab4[4] = {0};
    CHECK(rt_save_npy(at("y4.npy"), &(rt_tensor){IR_I32, {1, {4}}, lab4}, err, sizeof err) == 0);
    snprintf(by, sizeof by, "y=%s", at("y4.npy"));
    CHECK_ERR(!rt_dataset_from_bindings((const char *[]){bx, by}, 2, flat, 2, err, sizeof err), err,
              (snprintf(want, sizeof want, "%s has 4 examples but %s has 5", at("y4.npy"),
                        at("train-images-idx3-ubyte.gz")), want));
}

/* A dataset of n examples: x = f32[2] {i, -i}, y = i32 i. */
static rt_dataset *counting(int64_t n) {
    float *x = malloc(sizeof(float) * 2 * (size_t)n);
    int32_t *y = malloc(sizeof(int32_t) * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[2 * i] = (float)i, x[2 * i + 1] = (float)-i, y[i] = (int32_t)i;
    rt_tensor t[2] = {{IR_F32, {2, {n, 2}}, x}, {IR_I32, {1, {n}}, y}};
    rt_input_spec in[2] = {{"x", IR_F32, {1, {2}}}, {"y", IR_I32, {0, {0}}}};
    rt_dataset *ds = rt_dataset_from_tensors(t, (const char *[]){"x", "y"}, in, 2, err, sizeof err);
    free(x);
    free(y);
    return ds;
}

/* Reads one epoch of labels (the example ids) from l into ids; checks x agrees. */
static void read_epoch(rt_loader *l, int64_t B, int64_t steps, int32_t *ids, int64_t epoch) {
    for (int64_t s = 0; s < steps; s++) {
        const rt_batch *b = rt_loader_next(l);
        CHECK(b->epoch == epoch && b->step == s);
        for (int64_t r = 0; r < b->valid; r++) {
            int32_t id = ((int32_t *)b->data[1])[r];
            CHECK(((float *)b->data[0])[2 * r] == (float)id && ((float *)b->data[0])[2 * r + 1] == (float)-id);
            ids[s * B + r] = id;
        }
    }
}

static void case_loader(void) {
    enum { N = 1000, B = 64 };
    rt_dataset *ds = counting(N);
    rt_loader_opts o = {.batch = B, .seed = 42, .shuffle = true};
    rt_loader *l1 = rt_loader_new(ds, &o, err, sizeof err), *l2 = rt_loader_new(ds, &o, err, sizeof err);
    CHECK(l1 && l2 && rt_loader_steps_per_epoch(l1) == N / B);
    static int32_t a0[N], b0[N], a1[N], b1[N];
    read_epoch(l1, B, N / B, a0, 0);
    read_epoch(l1, B, N / B, a1, 1);
    read_epoch(l2, B, N / B, b0, 0);
    read_epoch(l2, B, N / B, b1, 1);
    CHECK(!memcmp(a0, b0, sizeof a0) && !memcmp(a1, b1, sizeof a1)); /* same seed, same order */
    CHECK(memcmp(a0, a1, sizeof a0));                                 /* epochs differ */
    int64_t perm[N];
    rt_permutation(42, 1, N, perm);
    for (int i = 0; i < N / B * B; i++) CHECK(a1[i] == perm[i]);
    /* resume at (1, 3) gives what the uninterrupted run gave */
    CHECK(rt_loader_seek(l2, 1, 3, err, sizeof err) == 0);
    const rt_batch *b = rt_loader_next(l2);
    CHECK(b->epoch == 1 && b->step == 3 && !memcmp(b->data[1], a1 + 3 * B, B * sizeof(int32_t)));
    CHECK_ERR(rt_loader_seek(l2, 0, 15, err, sizeof err) < 0, err,
              "loader: cannot seek to epoch 0 step 15 (15 steps per epoch)");
    rt_loader_free(l1);
    rt_loader_free(l2);
    /* every example exactly once with a partial last batch, padded with zeros */
    o.keep_partial = true, o.seed = 7;
    rt_loader *l = rt_loader_new(ds, &o, err, sizeof err);
    CHECK(rt_loader_steps_per_epoch(l) == 16);
    static int32_t ids[16 * B];
    int seen[N] = {0};
    read_epoch(l, B, 16, ids, 0);
    for (int i = 0; i < N; i++) seen[ids[i]]++;
    for (int i = 0; i < N; i++) CHECK(seen[i] == 1);
    b = rt_loader_next(l); /* epoch 1 step 0 follows */
    CHECK(b->epoch == 1 && b->step == 0 && b->valid == B);
    rt_loader_seek(l, 0, 15, err, sizeof err);
    b = rt_loader_next(l);
    CHECK(b->valid == N - 15 * B);
    for (int r = (int)b->valid; r < B; r++) CHECK(((int32_t *)b->data[1])[r] == 0 && ((float *)b->data[0])[2 * r] == 0);
    rt_loader_free(l);
    /* no shuffle: in order; a slice of rows per process */
    rt_loader_opts os = {.batch = 10, .row_begin = 5, .rows = 5};
    l = rt_loader_new(ds, &os, err, sizeof err);
    b = rt_loader_next(l);
    b = rt_loader_next(l);
    CHECK(b->step == 1 && ((int32_t *)b->data[1])[0] == 15 && ((int32_t *)b->data[1])[4] == 19);
    rt_loader_free(l);
    CHECK_ERR(!rt_loader_new(ds, &(rt_loader_opts){.batch = 2000}, err, sizeof err), err,
              "loader: the dataset has 1000 examples, fewer than one batch of 2000");
    rt_dataset_free(ds);
}

/* Many epochs through the prefetch thread while the caller is slow and fast in turn. */
static void case_prefetch(void) {
    enum { N = 257, B = 16 };
    rt_dataset *ds = counting(N);
    rt_loader *l = rt_loader_new(ds, &(rt_loader_opts){.batch = B, .seed = 3, .shuffle = true}, err, sizeof err);
    int64_t perm[N];
    for (int64_t e = 0; e < 40; e++) {
        rt_permutation(3, e, N, perm);
        for (int64_t s = 0; s < N / B; s++) {
            const rt_batch *b = rt_loader_next(l);
            if ((e + s) % 7 == 0) usleep(200);
            CHECK(b->epoch == e && b->step == s && b->valid == B);
            for (int r = 0; r < B; r++) CHECK(((int32_t *)b->data[1])[r] == perm[s * B + r]);
        }
        if (e == 20) rt_loader_seek(l, 21, 0, err, sizeof err);
    }
    rt_loader_free(l);
    /* freed while the worker is blocked on a full buffer, and right after creation */
    l = rt_loader_new(ds, &(rt_loader_opts){.batch = B}, err, sizeof err);
    rt_loader_next(l);
    usleep(1000);
    rt_loader_free(l);
    rt_loader_free(rt_loader_new(ds, &(rt_loader_opts){.batch = B}, err, sizeof err));
    rt_dataset_free(ds);
}

static void case_atomic(void) {
    char want[512], path[300];
    snprintf(path, sizeof path, "%s/old.npy", dir);
    float big[4096] = {1};
    rt_tensor small = {IR_F32, {1, {2}}, big}, large = {IR_F32, {1, {4096}}, big}, u;
    CHECK(rt_save_npy(path, &small, err, sizeof err) == 0);
    /* a file-size limit makes the write fail midway: the old file survives, no temp is left */
    struct rlimit old, lim = {8192, 8192};
    getrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, SIG_IGN);
    lim.rlim_max = old.rlim_max;
    setrlimit(RLIMIT_FSIZE, &lim);
    CHECK_ERR(rt_save_npy(path, &large, err, sizeof err) < 0, err,
              (snprintf(want, sizeof want, "%s: cannot write: File too large", path), want));
    setrlimit(RLIMIT_FSIZE, &old);
    CHECK(rt_load_npy(path, &u, err, sizeof err) == 0 && u.shape.dim[0] == 2);
    rt_tensor_free(&u);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "test $(ls %s | grep -c tmp) -eq 0", dir);
    CHECK(system(cmd) == 0);
    snprintf(path, sizeof path, "%s/old.npy/x.npy", dir);
    CHECK_ERR(rt_save_npy(path, &small, err, sizeof err) < 0, err,
              (snprintf(want, sizeof want, "%s: cannot write: Not a directory", path), want));
}

int main(int argc, char **argv) {
    static const test_case cases[] = {
        {"idx_roundtrip", case_idx_roundtrip}, {"idx_errors", case_idx_errors}, {"npy_roundtrip", case_npy_roundtrip},
        {"npy_errors", case_npy_errors},       {"dataset", case_dataset},       {"loader", case_loader},
        {"prefetch", case_prefetch},           {"atomic", case_atomic},
    };
    return run_cases(cases, sizeof cases / sizeof cases[0], dir, sizeof dir, "/tmp/mgc_data_XXXXXX", argc, argv);
}
