/*
 * cmd_run.h - run the attograd command from a test: `make test` puts the
 * built binary in AG_BIN. Output is captured through a pipe; the exit
 * status is returned separately. The command line goes through the shell,
 * which suits command strings written as a user would type them (the docs'
 * examples, `; echo $?`, redirections); cli_run.h runs argv exactly, without
 * a shell, with stdout and stderr apart, for tests of hostile arguments.
 */
#ifndef AG_TEST_CMD_RUN_H
#define AG_TEST_CMD_RUN_H

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* The attograd under test (fails the test when AG_BIN is not set). */
static inline const char *cmd_bin(void)
{
    const char *v = getenv("AG_BIN");
    ck_assert_msg(v && *v, "AG_BIN is not set: run the tests with `make test` or `make check`");
    return v;
}

/* Run the shell command cmd; return everything it wrote to stdout (the
 * caller frees it) and put its exit status in *status (-1 when it did not
 * exit normally). Add 2>&1 to the command to capture stderr too. */
static inline char *cmd_run_str(int *status, const char *cmd)
{
    FILE *p = popen(cmd, "r");
    ck_assert_msg(p != NULL, "popen failed: %s", cmd);
    size_t cap = 1 << 14, len = 0, got;
    char *out = malloc(cap);
    ck_assert_ptr_nonnull(out);
    while ((got = fread(out + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (len + 1 == cap) {
            cap *= 2;
            out = realloc(out, cap);
            ck_assert_ptr_nonnull(out);
        }
    }
    out[len] = '\0';
    int w = pclose(p);
    *status = w != -1 && WIFEXITED(w) ? WEXITSTATUS(w) : -1;
    return out;
}

/* cmd_run_str with the command built from fmt. */
static inline char *cmd_run(int *status, const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    ck_assert_msg(n > 0 && (size_t)n < sizeof(cmd), "command too long");
    return cmd_run_str(status, cmd);
}

/* The line of text that starts with prefix (at the start of a line), or NULL. */
static inline const char *cmd_line(const char *text, const char *prefix)
{
    size_t n = strlen(prefix);
    for (const char *p = text; p && *p;) {
        if (strncmp(p, prefix, n) == 0)
            return p;
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return NULL;
}

#endif /* AG_TEST_CMD_RUN_H */
