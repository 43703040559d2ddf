/*
 * arena.c - the memory of one step: a chain of AG_ALIGN-aligned blocks,
 * handed out by bumping a pointer and rewound at once by ag_tape_reset.
 * Nothing is freed per tensor, and once a step has sized the arena, a step
 * of the same shape calls malloc zero times.
 */
#include "internal.h"

#include <stdint.h>
#include <stdlib.h>

static ag_block *block_new(size_t cap)
{
    ag_block *b = ag_malloc(sizeof(*b));
    if (!b)
        return NULL;
    cap = (cap + AG_ALIGN - 1) / AG_ALIGN * AG_ALIGN;
    b->mem = ag_aligned_alloc_large(AG_ALIGN, cap); /* huge pages: a step walks all of it */
    if (!b->mem) {
        free(b);
        return NULL;
    }
    b->next = NULL;
    b->cap = cap;
    b->used = 0;
    return b;
}

static void blocks_free(ag_block *b)
{
    while (b) {
        ag_block *next = b->next;
        free(b->mem);
        free(b);
        b = next;
    }
}

void *ag_arena_alloc(ag_tape *tape, size_t bytes)
{
    if (bytes > SIZE_MAX - AG_ALIGN) {
        ag_tape_fail(tape, AG_ERR_NOMEM, "arena: %zu bytes do not fit in memory", bytes);
        return NULL;
    }
    ag_arena *a = &tape->arena;
    size_t need = (bytes + AG_ALIGN - 1) / AG_ALIGN * AG_ALIGN;
    if (need == 0)
        need = AG_ALIGN;
    ag_block *b = a->cur;
    while (b && b->cap - b->used < need)
        b = b->next; /* later blocks are empty after a rewind */
    if (!b) {
        /* Grow geometrically so a step needs few blocks; a rewind merges them. */
        size_t cap = a->cur ? a->cur->cap * 2 : (size_t)1 << 16;
        if (cap < need)
            cap = need;
        b = block_new(cap);
        if (!b) {
            ag_tape_fail(tape, AG_ERR_NOMEM, "arena: out of memory allocating %zu bytes", bytes);
            return NULL;
        }
        if (a->cur) {
            b->next = a->cur->next;
            a->cur->next = b;
        } else {
            a->first = b;
        }
        a->n_blocks++;
    }
    a->cur = b;
    void *p = b->mem + b->used;
    b->used += need;
    a->used += need;
    if (a->used > a->peak)
        a->peak = a->used;
    return p;
}

void ag_arena_rewind(ag_arena *a)
{
    /* One block the size of the most any step has used (not the blocks'
     * total: geometric growth overshoots). */
    if (a->n_blocks > 1) {
        ag_block *merged = block_new(a->peak);
        if (merged) {
            blocks_free(a->first);
            a->first = merged;
            a->n_blocks = 1;
        }
    }
    for (ag_block *b = a->first; b; b = b->next)
        b->used = 0;
    a->cur = a->first;
    a->used = 0;
}

void ag_arena_back(ag_arena *a, ag_arena_mark m)
{
    if (a->used == m.used)
        return; /* nothing handed out since */
    for (ag_block *b = m.cur ? m.cur->next : a->first; b; b = b->next)
        b->used = 0;
    if (m.cur)
        m.cur->used = m.cur_used;
    a->cur = m.cur ? m.cur : a->first;
    a->used = m.used;
}

void ag_arena_free(ag_arena *a)
{
    blocks_free(a->first);
    *a = (ag_arena){0};
}
