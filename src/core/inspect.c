/*
 * inspect.c - read-only views of the tape's entries, so a program (such as
 * `attograd explain attention`) can print or draw a step without knowing
 * the tape's private layout.
 */
#include "internal.h"

#include <string.h>

_Static_assert(AG_ENTRY_MAX_INPUTS == AG_MAX_INPUTS, "ag_entry_info holds every input");

ag_status ag_tape_entry_info(const ag_tape *tape, size_t k, ag_entry_info *info)
{
    if (!tape || !info || k >= tape->n_entries)
        return AG_ERR_ARG;
    const ag_entry *e = &tape->entries[k];
    memset(info, 0, sizeof(*info));
    info->op = e->op->name;
    info->n_in = e->n_in;
    for (int i = 0; i < e->n_in; i++)
        info->in[i] = e->in[i];
    info->out = e->out;
    info->arg = e->op->flags & AG_OP_SHOWS_ARG ? e->arg : 0;
    return AG_OK;
}
