/*
 * cpuid_cap.so: hides the CPU's vector extensions above a level from one process, so that
 * onnxruntime (whose kernels pick an instruction set from CPUID at load) runs the kernels it
 * would run on a CPU without them. `hark bench --backend cpu --isa avx2|scalar` preloads it into
 * the onnxruntime anchor, so both engines of an arm run the same instruction set.
 *
 *   HARK_CPUID_CAP=avx2   no AVX-512 of any kind
 *   HARK_CPUID_CAP=sse    no AVX, AVX2, FMA or AVX-512 either (what x86-64's baseline has)
 *
 * How: Linux's CPUID faulting (arch_prctl ARCH_SET_CPUID, on CPUs that list `cpuid_fault`)
 * turns every CPUID instruction of the process's threads into a SIGSEGV; the handler runs the
 * real CPUID with faulting briefly off, clears the hidden bits, and steps over the instruction.
 * The setting is inherited by threads the process starts later. Written here rather than
 * taken from a library: nothing packaged does this, and it is one signal handler.
 *
 * If faulting cannot be turned on, it says so on stderr and changes nothing; the bench checks
 * what the anchor reports it sees (numpy's CPU features) and labels an arm it could not cap.
 */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#ifndef ARCH_SET_CPUID
#define ARCH_SET_CPUID 0x1012
#endif

/* 2: keep AVX2 and FMA; 1: keep only SSE. */
static int level;

static void real_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
    __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}

static void hide(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
    if (leaf == 7 && sub == 0) {
        /* EBX: AVX512F 16, DQ 17, IFMA 21, PF 26, ER 27, CD 28, BW 30, VL 31. */
        r[1] &= ~((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) |
                  (1u << 30) | (1u << 31));
        /* ECX: VBMI 1, VBMI2 6, VNNI 11, BITALG 12, VPOPCNTDQ 14. */
        r[2] &= ~((1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14));
        /* EDX: 4VNNIW 2, 4FMAPS 3, VP2INTERSECT 8, FP16 23. */
        r[3] &= ~((1u << 2) | (1u << 3) | (1u << 8) | (1u << 23));
        if (level < 2) r[1] &= ~(1u << 5); /* AVX2 */
    }
    if (leaf == 7 && sub == 1) r[0] &= ~(1u << 5); /* AVX512_BF16 */
    if (leaf == 1 && level < 2) r[2] &= ~((1u << 28) | (1u << 12)); /* AVX, FMA */
}

static void on_fault(int sig, siginfo_t *info, void *context) {
    (void)info;
    ucontext_t *uc = context;
    greg_t *g = uc->uc_mcontext.gregs;
    const uint8_t *ip = (const uint8_t *)g[REG_RIP];
    if (ip[0] != 0x0f || ip[1] != 0xa2) {
        /* A real fault: let it kill the process as it would have. */
        signal(sig, SIG_DFL);
        return;
    }
    uint32_t leaf = (uint32_t)g[REG_RAX], sub = (uint32_t)g[REG_RCX], r[4];
    syscall(SYS_arch_prctl, ARCH_SET_CPUID, 1);
    real_cpuid(leaf, sub, r);
    syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0);
    hide(leaf, sub, r);
    g[REG_RAX] = r[0];
    g[REG_RBX] = r[1];
    g[REG_RCX] = r[2];
    g[REG_RDX] = r[3];
    g[REG_RIP] += 2;
}

__attribute__((constructor)) static void cap_cpuid(void) {
    const char *cap = getenv("HARK_CPUID_CAP");
    if (cap == NULL || *cap == '\0') return;
    level = strcmp(cap, "avx2") == 0 ? 2 : 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, NULL) != 0 || syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0) != 0) {
        static const char msg[] = "cpuid_cap: CPUID faulting is not available; nothing hidden\n";
        ssize_t ignored = write(2, msg, sizeof msg - 1);
        (void)ignored;
        signal(SIGSEGV, SIG_DFL);
    }
}
