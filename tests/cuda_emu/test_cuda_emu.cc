/* test_cuda_emu.cc - every CUDA kernel of runtime/cuda on the CPU (issue 15):
 * the .cu files are built by the host compiler with cuda_emu.h, each launch
 * wrapper of cuda_kernels.h runs on odd-sized inputs (and one grid-stride loop
 * over more elements than 65,535 blocks hold) and is compared with a reference.
 * Coverage is checked both ways: every wrapper declared in cuda_kernels.h has a
 * case below, and every __global__ kernel of the .cu files ran.
 * Usage: test_cuda_emu <runtime/cuda directory> */
#include <ctype.h>
#include <dirent.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "emu_util.h"

int failures;

#define CASES(X)                                                                                                      \
    X(binary) X(unary) X(broadcast) X(cast) X(fill) X(reduce) X(reduce_extreme) X(box_copy) X(transpose)               \
    X(softmax_axis) X(xent) X(xent_grad) X(argmax_match) X(in_top_k) X(dropout) X(sgd) X(adam) X(rmsprop)             \
    X(adagrad) X(nadam) X(lamb) X(sq_norm) X(activation) X(activation_grad) X(gather) X(scatter_add) X(one_hot)        \
    X(fused) X(epilogue) X(max_pool_grad) X(hwio_to_ohwi) X(ohwi_to_hwio) X(check_finite) X(bn_epilogue)        \
    X(set_step) X(causal_softmax) X(normalize) /* issue 14: char_gpt speed */                                   \
    X(channel_sum) X(scale_shift) /* issue 14: batch norm in training */                                       \
    X(channel_sum_dot) /* issue 14: batch norm's backward reads dy once */                                      \
    X(tri_mask) /* issue 14: causal_matmul's output triangle */                                                  \
    X(grad_filter_pool2) /* issue 14: seed CNN speed */                                                          \
    X(relu_pool2) X(relu_pool2_grad_filter) /* issue 14: seed CNN speed, the conv, relu and pool in one pass */ \
    X(causal_softmax_dropout_grad) /* issue 14: attention's dropout gradient in causal_softmax_grad */

#define DECLARE(name) void case_##name(void);
CASES(DECLARE)
#undef DECLARE

static const struct {
    const char *wrapper;
    void (*run)(void);
} cases[] = {
#define ROW(name) {"cuda_k_" #name, case_##name},
    CASES(ROW)
#undef ROW
};

static std::string slurp(const std::string &path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

/* the identifier that ends just before text[end] (spaces skipped) */
static std::string name_before(const std::string &text, size_t end) {
    while (end > 0 && isspace((unsigned char)text[end - 1])) end--;
    size_t start = end;
    while (start > 0 && (isalnum((unsigned char)text[start - 1]) || text[start - 1] == '_')) start--;
    return text.substr(start, end - start);
}

/* the name of each function whose declaration follows a `key` (cudaError_t,
 * __global__): the identifier before the first '(' after it, if no ';' or '{'
 * comes first; only names starting with prefix */
static std::set<std::string> declared_after(const std::string &text, const std::string &key, const std::string &prefix) {
    std::set<std::string> out;
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + 1)) {
        size_t paren = text.find_first_of("(;{", at);
        if (paren == std::string::npos || text[paren] != '(') continue;
        std::string name = name_before(text, paren);
        if (!name.empty() && name.compare(0, prefix.size(), prefix) == 0) out.insert(name);
    }
    return out;
}

/* every wrapper declared in cuda_kernels.h has a case, and every case a wrapper */
static void wrappers_covered(const std::string &dir) {
    std::string header = slurp(dir + "/cuda_kernels.h");
    std::set<std::string> declared = declared_after(header, "cudaError_t", "cuda_k_"), tested;
    for (auto &c : cases) tested.insert(c.wrapper);
    if (declared.empty()) fprintf(stderr, "FAIL: no cuda_k_ wrapper found in %s/cuda_kernels.h\n", dir.c_str()), failures++;
    for (auto &w : declared)
        if (!tested.count(w))
            fprintf(stderr, "FAIL: %s (cuda_kernels.h) has no emulation case in tests/cuda_emu\n", w.c_str()), failures++;
    for (auto &t : tested)
        if (!declared.count(t)) fprintf(stderr, "FAIL: case %s names no wrapper of cuda_kernels.h\n", t.c_str()), failures++;
    printf("%zu launch wrappers, each with a case\n", declared.size());
}

static void note_launched(const char *name, void *set) { ((std::set<std::string> *)set)->insert(name); }

/* every __global__ kernel of the .cu files ran at least once */
static void kernels_covered(const std::string &dir) {
    std::set<std::string> kernels, ran;
    DIR *d = opendir(dir.c_str());
    for (struct dirent *e; d && (e = readdir(d));) {
        std::string name = e->d_name;
        if (name.size() > 3 && name.compare(name.size() - 3, 3, ".cu") == 0)
            for (auto &k : declared_after(slurp(dir + "/" + name), "__global__", "")) kernels.insert(k);
    }
    if (d) closedir(d);
    mgc_emu_launched(note_launched, &ran);
    if (kernels.empty()) fprintf(stderr, "FAIL: no __global__ kernel found in %s\n", dir.c_str()), failures++;
    for (auto &k : kernels)
        if (!ran.count(k)) fprintf(stderr, "FAIL: kernel %s never ran under the emulation\n", k.c_str()), failures++;
    printf("%zu __global__ kernels, each run on the CPU\n", kernels.size());
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s <runtime/cuda directory>\n", argv[0]);
        return 2;
    }
    printf("grid cap %lld blocks of %lld threads\n", (long long)MAX_BLOCKS, (long long)THREADS);
    int checks = 0, failed = 0;
    for (auto &c : cases) {
        int before = failures;
        c.run();
        printf("%-24s %s\n", c.wrapper, failures == before ? "ok" : "FAILED");
        checks++, failed += failures != before;
    }
    int before = failures;
    wrappers_covered(argv[1]);
    checks++, failed += failures != before, before = failures;
    kernels_covered(argv[1]);
    checks++, failed += failures != before;
    printf("%d passed, %d failed\n", checks - failed, failed);
    return failed ? 1 : 0;
}
