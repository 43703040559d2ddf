/*
 * twin_param.c - a parameter's twin: its shape and its values (borrowed),
 * with a gradient of its own. The GPT trainer runs the two halves of a
 * batch through the model and a twin of it, so that the halves' backward
 * passes, at once on two threads, each add into their own gradients.
 */
#include "internal.h"

#include <string.h>

ag_tensor *ag_param_twin(const ag_tensor *param)
{
    /* one block, as ag_param_new's (so ag_param_free frees it): the
     * struct, then the gradient; no data of its own */
    size_t head = (sizeof(ag_tensor) + AG_ALIGN - 1) / AG_ALIGN * AG_ALIGN;
    size_t buf = (param->size * sizeof(ag_real) + AG_ALIGN - 1) / AG_ALIGN * AG_ALIGN;
    unsigned char *mem = ag_aligned_alloc(AG_ALIGN, head + buf);
    if (!mem)
        return NULL;
    memset(mem, 0, head + buf);
    ag_tensor *t = (ag_tensor *)mem;
    *t = *param; /* the shape, and the data pointer */
    t->grad = (ag_real *)(void *)(mem + head);
    return t;
}
