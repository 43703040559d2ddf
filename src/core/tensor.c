/*
 * tensor.c - making tensors (on the tape or as parameters), shapes and
 * sizes, and the first-write marks of op outputs' gradients (set here;
 * read and cleared by the inline functions of internal.h).
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int ag_mul_size(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a)
        return 0;
    *out = a * b;
    return 1;
}

int ag_shape_size(int ndim, const int *shape, size_t *size)
{
    if (ndim < 1 || ndim > AG_MAX_DIMS || !shape)
        return 0;
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 1 || !ag_mul_size(n, (size_t)shape[i], &n))
            return 0;
    }
    size_t bytes;
    if (!ag_mul_size(n, sizeof(ag_real), &bytes))
        return 0;
    *size = n;
    return 1;
}

static void set_shape(ag_tensor *t, int ndim, const int *shape, size_t size)
{
    t->ndim = ndim;
    for (int i = 0; i < AG_MAX_DIMS; i++)
        t->shape[i] = i < ndim ? shape[i] : 1;
    t->size = size;
}

char *ag_dims_str(int ndim, const int *shape, char *buf, size_t len)
{
    if (!shape) {
        snprintf(buf, len, "NULL");
        return buf;
    }
    if (ndim < 1 || ndim > AG_MAX_DIMS) {
        snprintf(buf, len, "ndim %d", ndim);
        return buf;
    }
    size_t pos = 0;
    buf[0] = '\0';
    for (int i = 0; i < ndim && pos < len; i++)
        pos += (size_t)snprintf(buf + pos, len - pos, "%s%d", i ? "x" : "[", shape[i]);
    if (pos < len)
        snprintf(buf + pos, len - pos, "]");
    return buf;
}

char *ag_shape_str(const ag_tensor *t, char *buf, size_t len)
{
    if (!buf || len == 0)
        return buf;
    if (!t) {
        snprintf(buf, len, "NULL");
        return buf;
    }
    return ag_dims_str(t->ndim, t->shape, buf, len);
}

char *ag_index_str(const ag_tensor *t, size_t i, char *buf, size_t len)
{
    size_t idx[AG_MAX_DIMS] = {0}, used = 0;
    if (!buf || len == 0)
        return buf;
    buf[0] = '\0';
    if (!t || i >= t->size)
        return buf;
    for (int d = t->ndim - 1; d >= 0; d--) {
        idx[d] = i % (size_t)t->shape[d];
        i /= (size_t)t->shape[d];
    }
    for (int d = 0; d < t->ndim && used < len; d++) {
        int n = snprintf(buf + used, len - used, "[%zu]", idx[d]);
        used = n < 0 ? len : used + (size_t)n;
    }
    return buf;
}

int ag_same_shape(const ag_tensor *a, const ag_tensor *b)
{
    if (!a || !b || a->ndim != b->ndim)
        return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i])
            return 0;
    return 1;
}

size_t ag_rows(const ag_tensor *t)
{
    return t->size / (size_t)t->shape[t->ndim - 1];
}

ag_tensor *ag_tensor_make(ag_tape *tape, int ndim, const int *shape, int zero_data, int needs_grad)
{
    size_t size;
    if (!ag_shape_size(ndim, shape, &size)) {
        char s[64];
        ag_tape_fail(tape, AG_ERR_ARG,
                     "tensor: bad shape %s (1..%d dims, each >= 1, size must fit)",
                     ag_dims_str(ndim, shape, s, sizeof(s)), AG_MAX_DIMS);
        return NULL;
    }
    ag_node *n = ag_arena_alloc(tape, sizeof(*n));
    ag_real *data = ag_arena_alloc(tape, size * sizeof(ag_real));
    ag_real *grad = needs_grad ? ag_arena_alloc(tape, size * sizeof(ag_real)) : NULL;
    if (!n || !data || (needs_grad && !grad))
        return NULL;
    ag_tensor *t = &n->t;
    set_shape(t, ndim, shape, size);
    t->data = data;
    t->grad = grad;
    n->grad_unset = grad != NULL; /* zeroed, or written, in backward */
    if (zero_data)
        memset(data, 0, size * sizeof(ag_real));
    return t;
}

const ag_op ag_op_leaf = {"leaf", NULL, 0, 0};

ag_tensor *ag_param_new(int ndim, const int *shape)
{
    size_t size;
    if (!ag_shape_size(ndim, shape, &size))
        return NULL;
    /* One allocation: the struct, then data, then grad, each AG_ALIGN-aligned. */
    size_t head = (sizeof(ag_tensor) + AG_ALIGN - 1) / AG_ALIGN * AG_ALIGN;
    size_t buf = (size * sizeof(ag_real) + AG_ALIGN - 1) / AG_ALIGN * AG_ALIGN;
    if (buf > (SIZE_MAX - head) / 2)
        return NULL;
    unsigned char *mem = ag_aligned_alloc(AG_ALIGN, head + 2 * buf);
    if (!mem)
        return NULL;
    memset(mem, 0, head + 2 * buf);
    ag_tensor *t = (ag_tensor *)mem;
    set_shape(t, ndim, shape, size);
    t->data = (ag_real *)(void *)(mem + head); /* AG_ALIGN-aligned, sized for ag_real */
    t->grad = (ag_real *)(void *)(mem + head + buf);
    return t;
}

void ag_param_free(ag_tensor *param)
{
    free(param);
}

void ag_zero_grad(ag_tensor *const *params, size_t n)
{
    for (size_t i = 0; params && i < n; i++)
        if (params[i] && params[i]->grad)
            memset(params[i]->grad, 0, params[i]->size * sizeof(ag_real));
}
