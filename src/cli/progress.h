/*
 * progress.h - what a long phase of a command shows while it runs
 * (progress.c): the library's progress hook, printed on stderr once a
 * phase has taken AG_PROGRESS_SECONDS (default 1; 0 shows every report),
 * as one line redrawn on a terminal or a line every few seconds elsewhere,
 * and a last line when it ends. Silent with --quiet.
 */
#ifndef AG_CLI_PROGRESS_H
#define AG_CLI_PROGRESS_H

#include "cli.h"

/* Show the library's progress as cmd's ("attograd train: validation: ..."),
 * unless quiet; ag_cli_progress_end removes the hook (a line being redrawn
 * is ended). */
void ag_cli_progress_begin(const ag_command *cmd, int quiet);
void ag_cli_progress_end(void);
/* Whether a progress line was shown since the last call (and forget it). */
int ag_cli_progress_shown(void);

#endif /* AG_CLI_PROGRESS_H */
