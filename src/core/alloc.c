/*
 * alloc.c - the library's allocation wrappers and their counter. One
 * relaxed atomic increment per call: allocations are rare (the point of the
 * arena), so the count costs nothing, and threads may allocate at once
 * (each worker's packing buffer).
 */
#define _DEFAULT_SOURCE /* madvise's MADV_HUGEPAGE, beyond POSIX */

#include "alloc.h"
#include "attograd.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

static atomic_size_t n_allocs;

static void count(void)
{
    atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed);
}

size_t ag_alloc_count(void)
{
    return atomic_load_explicit(&n_allocs, memory_order_relaxed);
}

void *ag_malloc(size_t bytes)
{
    count();
    return malloc(bytes);
}

void *ag_calloc(size_t n, size_t size)
{
    count();
    return calloc(n, size);
}

void *ag_realloc(void *p, size_t bytes)
{
    count();
    return realloc(p, bytes);
}

void *ag_aligned_alloc(size_t align, size_t bytes)
{
    count();
    if (bytes > SIZE_MAX - align)
        return NULL;
    bytes = (bytes + align - 1) / align * align; /* C11 asks for a multiple */
    void *p = NULL;
    if (posix_memalign(&p, align, bytes ? bytes : align) != 0)
        return NULL;
    return p;
}

/* A transparent huge page on x86-64 and most other Linux machines. Where
 * they are another size the hint does nothing, and the alignment costs
 * address space, not memory. */
#define HUGE_PAGE ((size_t)2 << 20)

void *ag_aligned_alloc_large(size_t align, size_t bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= HUGE_PAGE && align <= HUGE_PAGE) {
        /* ag_aligned_alloc rounds the size up to the alignment: whole pages */
        bytes = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        void *p = ag_aligned_alloc(HUGE_PAGE, bytes);
        if (p)
            (void)madvise(p, bytes, MADV_HUGEPAGE);
        return p;
    }
#endif
    return ag_aligned_alloc(align, bytes);
}
