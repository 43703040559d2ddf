/*
 * limits.h - how big a run of a command may be, checked before any memory
 * is asked for: one tensor of a step (src/cli/output.c), the whole run's
 * memory against the limit (src/cli/memory.c), and the counters a
 * checkpoint keeps.
 */
#ifndef AG_CLI_LIMITS_H
#define AG_CLI_LIMITS_H

#include "cli.h"

#include <stdint.h>

/* The most values one tensor of a step may hold (128 MB of floats): the
 * attention weights (B, H, T, T) grow with T squared, so a modest --seq or a
 * file's long x could otherwise ask for more memory than the machine has.
 * The two counts saturate instead of overflowing. */
#define AG_CLI_MAX_VALUES ((uint64_t)1 << 25)
uint64_t ag_cli_attention_values(uint64_t batch, uint64_t heads, uint64_t seq);
uint64_t ag_cli_activation_values(uint64_t batch, uint64_t seq, uint64_t dim);

/* The memory a run may use, in bytes: AG_MAX_MEMORY when set (a size: 8G,
 * 1.5G, 512M, 64K, or bytes), else the machine's physical memory, and no
 * more than the process may have (ulimit -v, -d). *source says which, for
 * messages ("AG_MAX_MEMORY", "this machine's memory", "ulimit -v").
 * AG_EXIT_OK, or a usage error (AG_EXIT_USAGE, said) for a bad
 * AG_MAX_MEMORY. */
int ag_cli_memory_limit(const ag_command *cmd, double *bytes, const char **source);

/* Refuse a run whose estimate m is beyond the limit, before anything is
 * allocated: one line with the total, the largest parts and the limit and
 * how to raise it. file NULL: the flags ask for it, a usage error
 * (AG_EXIT_USAGE); else the settings come from file, named, AG_EXIT_FAIL.
 * Returns AG_EXIT_OK when it fits. */
int ag_cli_memory_check(const ag_command *cmd, const ag_memory *m, const char *file);

/* ag_gpt_memory of run for a model of c, then ag_cli_memory_check. */
int ag_cli_gpt_memory_check(const ag_command *cmd, const ag_gpt_config *c, const ag_gpt_run *run,
                            const char *file);
/* After a checkpoint's "not an attograd ... (format 'F')": which commands
 * read it, when F is the other attograd format (a GPT's, or a toy task's);
 * else "". */
const char *ag_cli_format_hint(const char *err);
/* A GPT checkpoint as sample and eval take it: read (checked as the
 * library checks it), the memory of run (file_bytes filled in) checked for
 * its model, the model made: AG_EXIT_OK with *f and *g (the caller frees
 * them, on failure too), or the status, said: a failure naming the file,
 * or a signal ("interrupted; " and `nothing`, 128 + it). */
int ag_cli_gpt_load(const ag_command *cmd, const char *path, ag_gpt_run run, const char *nothing,
                    ag_gpt_file **f, ag_gpt **g);
/* The size of the file at path, for an estimate (0 when it cannot be
 * known: its reader will say why). */
double ag_cli_file_bytes(const char *path);

/* "1.5 GiB" for a number of bytes, into buf. */
const char *ag_cli_bytes(double bytes, char *buf, size_t len);
/* Before any work: whether the file system that will hold path (a file
 * about `bytes` long, written beside it and renamed over it) has that much
 * free now. AG_EXIT_OK (also when it cannot tell, or path is a device), or
 * AG_EXIT_FAIL after "FLAG PATH: the file will take about .., and only ..
 * is free there". A long run then does not end in a full disk. */
int ag_cli_check_space(const ag_command *cmd, const char *flag, const char *path, double bytes);

/* One rule for every counter a checkpoint keeps: a run of `steps` more
 * steps from path's checkpoint at step (and optim_steps) must stay within
 * AG_TRAIN_MAX_STEP, the most a checkpoint holds, or it is refused before
 * any work: a usage error naming --steps when it was given, else (the
 * default would pass it) a failure naming the file. AG_EXIT_OK when it
 * fits. */
int ag_cli_check_counts(const ag_command *cmd, const char *path, long steps, int steps_given,
                        long step, long optim_steps);

#endif /* AG_CLI_LIMITS_H */
