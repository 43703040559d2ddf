#include "attn_tile.h"
const ag_attn_kernel *ag_attn_kernel_avx512(size_t T) { (void)T; return NULL; }
const ag_attn_kernel *ag_attn_kernel_avx2(size_t T) { (void)T; return NULL; }
