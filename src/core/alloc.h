/*
 * alloc.h - every heap allocation the library makes goes through these, so
 * that it can count them (ag_alloc_count): a steady training step must make
 * none, and a test proves it. Each behaves exactly as the libc function it
 * is named after; the memory is released with free(). Not installed.
 */
#ifndef AG_ALLOC_H
#define AG_ALLOC_H

#include <stddef.h>

void *ag_malloc(size_t bytes);
void *ag_calloc(size_t n, size_t size);
void *ag_realloc(void *p, size_t bytes);
/* bytes rounded up to a multiple of align (a power of two, at least
 * sizeof(void *)), so any size may be asked for; NULL on failure. */
void *ag_aligned_alloc(size_t align, size_t bytes);
/* The same, for a large block that a step walks through (the tape's arena):
 * from 2 MB on, on Linux, aligned to 2 MB and backed by transparent huge
 * pages where the system allows them (madvise), one address translation
 * for what would take 512 small pages. A hint: if it is refused, the memory
 * is the same, in small pages. */
void *ag_aligned_alloc_large(size_t align, size_t bytes);

#endif /* AG_ALLOC_H */
