/* cuda_emu.cc - the CPU side of cuda_emu.h: grid loops, fibers for blocks that
 * synchronize, guarded allocations, the emulated runtime calls and atomics.
 * One launch at a time on the calling thread; blocks run in order. */
#include "cuda_emu.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <map>
#include <set>
#include <string>

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

static cudaError_t last_error = cudaSuccess;
static const char *current = "(no kernel)"; /* the kernel running, for fault messages */
static std::set<std::string> launched;

extern "C" cudaError_t cudaGetLastError(void) {
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

extern "C" const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    default: return "unspecified launch failure";
    }
}

/* ---- guarded memory: [pad][bytes][PROT_NONE page] ---- */
static std::map<void *, std::pair<void *, size_t>> allocations; /* user pointer -> mapping */

extern "C" void *mgc_emu_alloc(size_t bytes) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE), body = (bytes + page - 1) / page * page;
    char *base = (char *)mmap(NULL, body + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return NULL;
    if (mprotect(base + body, page, PROT_NONE) != 0) return munmap(base, body + page), (void *)NULL;
    void *p = base + body - bytes;
    allocations[p] = {base, body + page};
    return p;
}

extern "C" void mgc_emu_free(void *p) {
    auto it = allocations.find(p);
    if (it == allocations.end()) return;
    munmap(it->second.first, it->second.second);
    allocations.erase(it);
}

extern "C" cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t) {
    *p = mgc_emu_alloc(bytes);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

extern "C" cudaError_t cudaFreeAsync(void *p, cudaStream_t) {
    mgc_emu_free(p);
    return cudaSuccess;
}

/* a kernel touching memory outside its buffers: name it, and where */
static void on_fault(int sig, siginfo_t *info, void *) {
    fprintf(stderr,
            "FAIL: kernel %s, block (%u,%u,%u) thread (%u,%u,%u): %s at %p, outside every buffer "
            "(past the end of one?)\n",
            current, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z,
            sig == SIGSEGV ? "invalid access" : "bus error", info->si_addr);
    fflush(NULL);
    _exit(1);
}

static void guard_faults(void) {
    static bool done;
    if (done) return;
    done = true;
    static char alt[1 << 16];
    stack_t st = {};
    st.ss_sp = alt, st.ss_size = sizeof alt;
    sigaltstack(&st, NULL);
    struct sigaction sa = {};
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
}

/* ---- threads of one block as fibers ---- */
enum { STACK = 1 << 16, MAX_THREADS = 1024 };

typedef struct {
    ucontext_t ctx;
    char *stack;
    bool done, waiting;
} fiber;

static fiber fibers[MAX_THREADS];
static ucontext_t scheduler;
static fiber *running;              /* the fiber on the CPU, NULL outside fiber mode */
static void (*body_fn)(void *);
static void *body_ctx;
static bool synced;                 /* the current launch met a __syncthreads */

static void fiber_main(void) {
    body_fn(body_ctx);
    running->done = true; /* uc_link returns to the scheduler */
}

void __syncthreads(void) {
    if (!running) {
        /* a thread run as a plain call met a barrier: only possible when thread
         * (0,0,0) of the launch did not (a divergent barrier, undefined in CUDA) */
        fprintf(stderr, "FAIL: kernel %s: __syncthreads in thread %u of block %u but not in thread 0 of block 0\n",
                current, threadIdx.x, blockIdx.x);
        fflush(NULL);
        _exit(1);
    }
    synced = true;
    running->waiting = true;
    swapcontext(&running->ctx, &scheduler);
}

static void start_fiber(fiber *f) {
    if (!f->stack) f->stack = (char *)malloc(STACK);
    getcontext(&f->ctx);
    f->ctx.uc_stack.ss_sp = f->stack, f->ctx.uc_stack.ss_size = STACK, f->ctx.uc_link = &scheduler;
    f->done = f->waiting = false;
    makecontext(&f->ctx, fiber_main, 0);
}

static uint3 thread_of(unsigned t, dim3 b) { return uint3{t % b.x, t / b.x % b.y, t / (b.x * b.y)}; }

/* switches to fiber t until it finishes or waits at a barrier */
static void resume(fiber *f, uint3 tid) {
    threadIdx = tid, running = f, f->waiting = false;
    swapcontext(&scheduler, &f->ctx);
    running = NULL;
}

/* runs every thread of the block as a fiber, round by round: a round ends when
 * each thread has finished or waits at the barrier; a mix is a divergent
 * barrier. Threads below first_started already wait at the first barrier. */
static void run_block_fibers(unsigned nt, dim3 b, unsigned first_started) {
    for (unsigned t = first_started; t < nt; t++) start_fiber(&fibers[t]), resume(&fibers[t], thread_of(t, b));
    for (;;) {
        unsigned done = 0, waiting = 0;
        for (unsigned t = 0; t < nt; t++) done += fibers[t].done, waiting += fibers[t].waiting;
        if (done == nt) return;
        if (waiting != nt) {
            fprintf(stderr, "FAIL: kernel %s block %u: %u threads wait at __syncthreads, %u have returned\n", current,
                    blockIdx.x, waiting, done);
            fflush(NULL);
            _exit(1);
        }
        for (unsigned t = 0; t < nt; t++) resume(&fibers[t], thread_of(t, b));
    }
}

void mgc_emu::run(const char *name, dim3 grid, dim3 block, void (*body)(void *), void *ctx) {
    std::string base(name);
    launched.insert(base.substr(0, base.find('<')));
    unsigned long long nt = (unsigned long long)block.x * block.y * block.z;
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535 ||
        nt == 0 || nt > MAX_THREADS || block.z > 64) {
        last_error = cudaErrorInvalidConfiguration; /* as a GPU: nothing runs */
        return;
    }
    guard_faults();
    current = name, body_fn = body, body_ctx = ctx, synced = false;
    gridDim = grid, blockDim = block;
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++) {
                blockIdx = uint3{x, y, z};
                unsigned first = 0;
                if (x == 0 && y == 0 && z == 0) {
                    /* thread 0 of block 0 as a fiber: does this kernel synchronize? */
                    start_fiber(&fibers[0]);
                    resume(&fibers[0], thread_of(0, block));
                    first = 1;
                }
                if (synced) {
                    run_block_fibers((unsigned)nt, block, first);
                    continue;
                }
                for (unsigned t = first; t < nt; t++) threadIdx = thread_of(t, block), body(ctx);
            }
    current = "(no kernel)";
}

/* ---- atomics: one thread runs at a time, so plain reads and writes ---- */
int atomicCAS(int *p, int compare, int value) {
    int old = *p;
    if (old == compare) *p = value;
    return old;
}

unsigned long long atomicMin(unsigned long long *p, unsigned long long value) {
    unsigned long long old = *p;
    if (value < old) *p = value;
    return old;
}

float __int_as_float(int bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* every kernel launched so far (names without template arguments), one per line */
extern "C" void mgc_emu_launched(void (*each)(const char *name, void *arg), void *arg) {
    for (const std::string &s : launched) each(s.c_str(), arg);
}
