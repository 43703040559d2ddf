/*
 * cpu.h - what this CPU can run, asked once for the whole library: the
 * kernels that have a vector form pick it from here. Not installed.
 */
#ifndef AG_CPU_H
#define AG_CPU_H

/* The x86 vector kernels compiled into this build: on x86 with GCC or
 * Clang, unless AG_NO_SIMD (make PORTABLE=1) asks for plain C only. */
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__)) &&     \
    !defined(AG_NO_SIMD)
#define AG_X86_KERNELS 1
#endif

/* What the CPU supports of what the kernels use. All 0 without
 * AG_X86_KERNELS. */
typedef struct ag_cpu {
    int avx2;     /* AVX2 and FMA */
    int avx512;   /* AVX-512F (with AVX2, which its packing uses) */
    int avx512dq; /* AVX-512DQ as well, which the attention tiles use */
    /* AVX-512 run as two 256-bit halves, one vector FMA a cycle (AMD's Zen
     * 4): the gemm's tiles are 8 rows high there, not 12 */
    int avx512_halves;
} ag_cpu;

/* This CPU's features, read once (thread-safe), and no more than the
 * environment variable AG_CPU allows: "avx2" (no AVX-512) or "generic"
 * (no vector kernels). Functions compiled per instruction set (clones.h)
 * still pick their own, with the same results at every width. */
const ag_cpu *ag_cpu_get(void);

/* The widest row kernel of softmax and GELU this CPU runs: 2 for AVX-512F,
 * 1 for AVX2 and FMA, 0 for neither (or a double build, which has none). */
int ag_cpu_row_level(void);

#endif /* AG_CPU_H */
