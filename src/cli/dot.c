/*
 * dot.c - the command's Graphviz picture of a tape: the library's drawing
 * (ag_tape_dot, every tensor with its values and gradient; ag_tape_dot_save
 * writes it to a file) rendered to a PNG by Graphviz's `dot` program when
 * it is installed. Graphviz is optional, as
 * gnuplot is: without it the picture is refused with one clear message.
 */
#include "dot.h"
#include "plot.h"
#include "signals.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Run `dot -Tpng src -o dst` (no shell: the names are passed as they are)
 * with the signal mask the caller had before holding signals. */
static int run_dot(const char *src, const char *dst, const sigset_t *mask, char *err, size_t errlen)
{
    posix_spawnattr_t attr;
    if (posix_spawnattr_init(&attr) != 0) {
        snprintf(err, errlen, "cannot start dot");
        return 0;
    }
    posix_spawnattr_setsigmask(&attr, mask);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    char *argv[] = {"dot", "-Tpng", (char *)src, "-o", (char *)dst, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, "dot", NULL, &attr, argv, environ);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start dot: %s", strerror(rc));
        return 0;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            snprintf(err, errlen, "cannot wait for dot: %s", strerror(errno));
            return 0;
        }
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(err, errlen, "dot failed to draw %s", dst);
        return 0;
    }
    return 1;
}

int ag_cli_render_dot(const char *png, const ag_tape *tape, const ag_tensor_name *names,
                      size_t n_names, const char *title, char *err, size_t errlen)
{
    if (!ag_cli_have_program("dot")) {
        snprintf(err, errlen,
                 "Graphviz's dot is not installed, so no picture "
                 "(apt-get install graphviz)");
        return 0;
    }
    /* the graph and the picture both go to temporary files beside png; only
     * a finished picture is renamed into place, and Ctrl-C waits until the
     * temporary files are gone */
    char src[4096], dst[4096];
    sigset_t saved;
    ag_cli_hold_signals(1, &saved);
    int ok = ag_file_tmp_name(png, src, sizeof(src), err, errlen) == AG_OK;
    if (ok) {
        FILE *f = fopen(src, "w");
        ag_status st = f ? ag_tape_dot(tape, f, names, n_names, title) : AG_ERR_IO;
        if (f && fclose(f) != 0 && st == AG_OK)
            st = AG_ERR_IO;
        if (st != AG_OK)
            snprintf(err, errlen, "cannot write %s: %s", png,
                     st == AG_ERR_NOMEM ? "out of memory" : strerror(errno));
        ok = st == AG_OK && ag_file_tmp_name(png, dst, sizeof(dst), err, errlen) == AG_OK;
        if (ok) {
            ok = run_dot(src, dst, &saved, err, errlen) &&
                 ag_file_tmp_commit(dst, png, err, errlen) == AG_OK;
            if (!ok)
                remove(dst);
        }
        remove(src);
    }
    ag_cli_hold_signals(0, &saved);
    return ok;
}
