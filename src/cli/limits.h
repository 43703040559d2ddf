/*
 * limits.h - how big one step of a command may be, checked before any
 * memory is asked for (src/cli/output.c).
 */
#ifndef AG_CLI_LIMITS_H
#define AG_CLI_LIMITS_H

#include <stdint.h>

/* The most values one tensor of a step may hold (128 MB of floats): the
 * attention weights (B, H, T, T) grow with T squared, so a modest --seq or a
 * file's long x could otherwise ask for more memory than the machine has.
 * The two counts saturate instead of overflowing. */
#define AG_CLI_MAX_VALUES ((uint64_t)1 << 25)
uint64_t ag_cli_attention_values(uint64_t batch, uint64_t heads, uint64_t seq);
uint64_t ag_cli_activation_values(uint64_t batch, uint64_t seq, uint64_t dim);

#endif /* AG_CLI_LIMITS_H */
