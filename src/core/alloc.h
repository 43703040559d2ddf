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

#endif /* AG_ALLOC_H */
