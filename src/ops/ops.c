/*
 * ops.c - the op table: each op's name and backward, indexed by ag_op.
 * Adding an op: one file in src/ops/, one ag_op value, one row here.
 */
#include "../core/internal.h"

const ag_op_info ag_ops[] = {
    [AG_OP_LEAF] = {"leaf", NULL},
    [AG_OP_MATMUL] = {"matmul", ag_matmul_backward},
    [AG_OP_MATMUL_BT] = {"matmul_bt", ag_matmul_bt_backward},
    [AG_OP_TRANSPOSE] = {"transpose", ag_transpose_backward},
    [AG_OP_SCALE] = {"scale", ag_scale_backward},
    [AG_OP_SOFTMAX] = {"softmax", ag_softmax_backward},
    [AG_OP_CAUSAL_MASK] = {"causal_mask", ag_causal_mask_backward},
    [AG_OP_ADD] = {"add", ag_add_backward},
    [AG_OP_MUL] = {"mul", ag_mul_backward},
    [AG_OP_SUM] = {"sum", ag_sum_backward},
    [AG_OP_MEAN] = {"mean", ag_mean_backward},
    [AG_OP_MSE] = {"mse", ag_mse_backward},
    [AG_OP_SPLIT_HEADS] = {"split_heads", ag_split_heads_backward},
    [AG_OP_MERGE_HEADS] = {"merge_heads", ag_merge_heads_backward},
    [AG_OP_CROSS_ENTROPY] = {"cross_entropy", ag_cross_entropy_backward},
    [AG_OP_EMBEDDING] = {"embedding", ag_embedding_backward},
    [AG_OP_RESHAPE] = {"reshape", ag_reshape_backward},
    [AG_OP_ATTENTION] = {"attention", ag_attention_fused_backward},
};

_Static_assert(sizeof(ag_ops) / sizeof(ag_ops[0]) == AG_OP_COUNT, "one row per op");
