/*
 * cli_run.h - run the attograd command as a program from a Check test:
 * argv exactly as given (no shell, so tabs, newlines and empty strings
 * reach the command unchanged), stdout and stderr captured apart, the exit
 * status or the signal that ended it. Also a scratch directory per test
 * and a listing of it, to prove that no temporary file was left behind.
 * `make test` sets AG_BIN (the command) and AG_SANITIZE (the sanitizers of
 * the build, empty when none).
 */
#ifndef AG_TEST_CLI_RUN_H
#define AG_TEST_CLI_RUN_H

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

/* A finished (or running) child. */
typedef struct cli_proc {
    pid_t pid;
    int out_fd, err_fd;       /* our ends of its stdout and stderr, -1 once closed */
    char *out, *err;          /* everything read so far, NUL-terminated */
    size_t out_len, err_len;
    int status;               /* exit status, or -1 when a signal ended it */
    int signal;               /* that signal, or 0 */
} cli_proc;

/* The command, as an absolute path (a test may change PATH or the
 * directory). Borrowed from a static buffer. */
static inline const char *cli_bin(void)
{
    static char path[PATH_MAX];
    const char *bin = getenv("AG_BIN");
    ck_assert_msg(bin && *bin, "AG_BIN is not set: run the tests with `make test` or `make check`");
    if (bin[0] == '/') {
        snprintf(path, sizeof(path), "%s", bin);
    } else {
        char cwd[PATH_MAX];
        ck_assert_msg(getcwd(cwd, sizeof(cwd)) != NULL, "getcwd: %s", strerror(errno));
        ck_assert(snprintf(path, sizeof(path), "%s/%s", cwd, bin) < (int)sizeof(path));
    }
    ck_assert_msg(access(path, X_OK) == 0, "AG_BIN=%s: %s", path, strerror(errno));
    return path;
}

/* Whether this build has sanitizers (valgrind does not mix with them). */
static inline int cli_sanitized(void)
{
    const char *s = getenv("AG_SANITIZE");
    return s && *s;
}

static inline void cli_append(char **buf, size_t *len, const char *data, size_t n)
{
    char *grown = realloc(*buf, *len + n + 1);
    ck_assert_ptr_nonnull(grown);
    memcpy(grown + *len, data, n);
    *len += n;
    grown[*len] = '\0';
    *buf = grown;
}

/* Start argv[0] (a path) with argv; path_env, when not NULL, replaces PATH
 * in the child. stdin is /dev/null. */
static inline cli_proc cli_spawn(const char *const *argv, const char *path_env)
{
    int out[2], err[2];
    ck_assert_int_eq(pipe(out), 0);
    ck_assert_int_eq(pipe(err), 0);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGKILL);   /* a test that dies takes its long run along */
#endif
        int in = open("/dev/null", O_RDONLY);
        if (in >= 0)
            dup2(in, 0);
        dup2(out[1], 1);
        dup2(err[1], 2);
        close(out[0]), close(out[1]), close(err[0]), close(err[1]);
        if (path_env)
            setenv("PATH", path_env, 1);
        signal(SIGINT, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    cli_proc p;
    memset(&p, 0, sizeof(p));
    p.pid = pid;
    p.out_fd = out[0];
    p.err_fd = err[0];
    p.out = calloc(1, 1);
    p.err = calloc(1, 1);
    ck_assert(p.out && p.err);
    return p;
}

/* Read whatever the child has written (waiting up to timeout_ms for
 * something); returns 0 once both pipes are closed. */
static inline int cli_pump(cli_proc *p, int timeout_ms)
{
    struct pollfd fds[2] = {{p->out_fd, POLLIN, 0}, {p->err_fd, POLLIN, 0}};
    if (p->out_fd < 0 && p->err_fd < 0)
        return 0;
    int n = poll(fds, 2, timeout_ms);
    if (n < 0 && errno == EINTR)
        return 1;
    ck_assert_int_ge(n, 0);
    for (int k = 0; k < 2; k++) {
        if (fds[k].fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        char buf[4096];
        ssize_t got = read(fds[k].fd, buf, sizeof(buf));
        if (got > 0) {
            if (k == 0)
                cli_append(&p->out, &p->out_len, buf, (size_t)got);
            else
                cli_append(&p->err, &p->err_len, buf, (size_t)got);
        } else if (got == 0 || errno != EINTR) {
            close(fds[k].fd);
            if (k == 0)
                p->out_fd = -1;
            else
                p->err_fd = -1;
        }
    }
    return p->out_fd >= 0 || p->err_fd >= 0;
}

/* Read everything until the child closes its pipes, then reap it. */
static inline void cli_wait(cli_proc *p)
{
    while (cli_pump(p, -1))
        ;
    int w;
    while (waitpid(p->pid, &w, 0) < 0)
        ck_assert_int_eq(errno, EINTR);
    p->status = WIFEXITED(w) ? WEXITSTATUS(w) : -1;
    p->signal = WIFSIGNALED(w) ? WTERMSIG(w) : 0;
}

static inline void cli_proc_free(cli_proc *p)
{
    free(p->out);
    free(p->err);
    p->out = p->err = NULL;
}

/* Run a command to the end. argv is NULL-terminated, argv[0] the program. */
static inline cli_proc cli_run_argv(const char *const *argv, const char *path_env)
{
    cli_proc p = cli_spawn(argv, path_env);
    cli_wait(&p);
    return p;
}

#define CLI_MAX_ARGS 48

/* Start `attograd ARGS...`: args is NULL-terminated, without the program;
 * path_env as for cli_spawn. */
static inline cli_proc cli_spawn_args(const char *const *args, const char *path_env)
{
    const char *argv[CLI_MAX_ARGS + 2];
    int n = 0;
    argv[n++] = cli_bin();
    for (int k = 0; args[k]; k++) {
        ck_assert_int_lt(n, CLI_MAX_ARGS);
        argv[n++] = args[k];
    }
    argv[n] = NULL;
    return cli_spawn(argv, path_env);
}

/* Run `attograd ARGS...` (a NULL-terminated list of strings). */
static inline cli_proc cli_run(const char *first, ...)
{
    const char *args[CLI_MAX_ARGS + 1];
    int n = 0;
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a; a = va_arg(ap, const char *)) {
        ck_assert_int_lt(n, CLI_MAX_ARGS);
        args[n++] = a;
    }
    va_end(ap);
    args[n] = NULL;
    cli_proc p = cli_spawn_args(args, NULL);
    cli_wait(&p);
    return p;
}

/* Start `attograd ARGS...` (args NULL-terminated), wait until its stdout
 * shows `until` (a fragment), then send sig; returns the finished child. A
 * child that never gets there is killed rather than left running (and dies
 * with the test if the test dies). */
static inline cli_proc cli_interrupt(const char *const *args, const char *until, int sig)
{
    cli_proc p = cli_spawn_args(args, NULL);
    int polls = 0;
    while (!strstr(p.out, until)) {
        /* a safety net only: 600 polls of 100 ms, never a measurement */
        if (!cli_pump(&p, 100) || ++polls > 600) {
            kill(p.pid, SIGKILL);
            cli_wait(&p);
            ck_abort_msg("the run did not print '%s':\n%s%s", until, p.out, p.err);
        }
    }
    ck_assert_int_eq(kill(p.pid, sig), 0);
    cli_wait(&p);
    return p;
}

/* Fail with the child's output shown, so a failure explains itself. */
#define cli_assert_status(p, want)                                                               \
    ck_assert_msg((p)->status == (want) && (p)->signal == 0,                                     \
                  "exit status %d (signal %d), want %d\n--- stdout:\n%s--- stderr:\n%s",         \
                  (p)->status, (p)->signal, (want), (p)->out, (p)->err)

#define cli_assert_has(text, fragment)                                                            \
    ck_assert_msg(strstr((text), (fragment)) != NULL, "'%s' not found in:\n%s", (fragment), (text))

/* The last line of text (without its newline), in buf. */
static inline const char *cli_last_line(const char *text, char *buf, size_t len)
{
    size_t n = strlen(text);
    while (n > 0 && text[n - 1] == '\n')
        n--;
    size_t start = n;
    while (start > 0 && text[start - 1] != '\n')
        start--;
    snprintf(buf, len, "%.*s", (int)(n - start), text + start);
    return buf;
}

/* ---- files ---- */

/* A new empty directory for one test, under TMPDIR or /tmp: path in buf. */
static inline const char *cli_tmpdir(char *buf, size_t len)
{
    const char *base = getenv("TMPDIR");
    snprintf(buf, len, "%s/attograd-test-XXXXXX", base && *base ? base : "/tmp");
    ck_assert_msg(mkdtemp(buf) != NULL, "mkdtemp %s: %s", buf, strerror(errno));
    return buf;
}

/* dir/name in buf. */
static inline const char *cli_path(char *buf, size_t len, const char *dir, const char *name)
{
    int n = snprintf(buf, len, "%s/%s", dir, name);
    ck_assert(n > 0 && (size_t)n < len);
    return buf;
}

/* The names in dir, sorted, joined by spaces ("" when empty), in buf. */
static inline const char *cli_listing(const char *dir, char *buf, size_t len)
{
    char names[64][256];
    int n = 0;
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "opendir %s: %s", dir, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        ck_assert_int_lt(n, 64);
        snprintf(names[n++], sizeof(names[0]), "%s", e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof(names[0]), (int (*)(const void *, const void *))strcmp);
    buf[0] = '\0';
    size_t used = 0;
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(buf + used, used < len ? len - used : 0, "%s%s", i ? " " : "", names[i]);
    ck_assert(used < len);
    return buf;
}

/* Remove dir, its files and its subdirectories; assert that it is gone. */
static inline void cli_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[PATH_MAX];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        int n = snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (n < 0 || (size_t)n >= sizeof(path))
            continue;
        if (remove(path) != 0)
            cli_rmdir(path);
    }
    closedir(d);
    ck_assert_msg(rmdir(dir) == 0, "rmdir %s: %s", dir, strerror(errno));
}

/* A whole file in a new string (the caller frees it), or NULL when it
 * cannot be read; *len gets its size. */
static inline char *cli_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = calloc(1, 1);
    size_t n = 0;
    char chunk[4096];
    size_t got;
    while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0)
        cli_append(&buf, &n, chunk, got);
    fclose(f);
    if (len)
        *len = n;
    return buf;
}

static inline void cli_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s: %s", path, strerror(errno));
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

/* ---- pictures drawn by optional programs (gnuplot, Graphviz's dot) ---- */

/* A scratch directory (path in dir) holding one empty directory "bin" (its
 * path in bin): run with PATH=bin, the command finds no optional program. */
static inline void cli_tmpdir_nobin(char *dir, size_t dirlen, char *bin, size_t binlen)
{
    cli_tmpdir(dir, dirlen);
    cli_path(bin, binlen, dir, "bin");
    ck_assert_int_eq(mkdir(bin, 0700), 0);
}

/* Whether name is on PATH: what needs it is tested only where it is. */
static inline int cli_have(const char *name)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "command -v '%s' >/dev/null 2>&1", name);
    return system(cmd) == 0;
}

/* p succeeded and said `said` followed by png on stdout; png is a whole PNG
 * image, and dir holds exactly the names in listing (no temporary file). */
static inline void cli_assert_picture(const cli_proc *p, const char *said, const char *png,
                                      const char *dir, const char *listing)
{
    cli_assert_status(p, 0);
    char want[PATH_MAX + 64], names[1024];
    snprintf(want, sizeof(want), "%s%s\n", said, png);
    cli_assert_has(p->out, want);
    size_t len;
    char *img = cli_read_file(png, &len);
    ck_assert_msg(img && len > 1000 && memcmp(img, "\x89PNG", 4) == 0, "%s is not a PNG", png);
    free(img);
    ck_assert_str_eq(cli_listing(dir, names, sizeof(names)), listing);
}

#endif /* AG_TEST_CLI_RUN_H */
