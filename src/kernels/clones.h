/*
 * clones.h - AG_CLONES, for the element loops the compiler vectorises by
 * itself (Adam's update, the mse loss): the function is compiled three
 * times, for AVX-512, AVX2 and the baseline (SSE2 on x86-64), and the
 * dynamic loader picks one for the CPU at startup (GCC and Clang's
 * target_clones, through an ifunc). Elsewhere, with a compiler without the
 * attribute, or with -DAG_NO_SIMD, it is empty and the one baseline version
 * remains.
 *
 * Every clone must compute the same thing bit for bit: a file that includes
 * this header has floating-point contraction off (Clang would otherwise fuse
 * a * b + c into one FMA in the clones whose target has FMA; GCC does not
 * contract in ISO C mode).
 */
#ifndef AG_CLONES_H
#define AG_CLONES_H

/* ThreadSanitizer instruments the ifunc's resolver, which the loader runs
 * before the sanitizer has started: no clones under it. */
#if defined(__SANITIZE_THREAD__)
#define AG_NO_CLONES
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define AG_NO_CLONES
#endif
#endif

#if defined(__has_attribute)
#if __has_attribute(target_clones) && defined(__x86_64__) && defined(__ELF__) &&                   \
    !defined(AG_NO_SIMD) && !defined(AG_NO_CLONES)
#define AG_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef AG_CLONES
#define AG_CLONES
#endif

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#endif /* AG_CLONES_H */
