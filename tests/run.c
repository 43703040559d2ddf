/*
 * run.c - running programs from the tests, and their scratch files: see
 * run.h. Every failure here is a test failure (ck_assert), named.
 */
#define _DEFAULT_SOURCE /* wait4, for a child's peak memory */
#include "run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define RUN_MAX_ARGS 64

/* ---- what to run ---- */

const char *run_bin(void)
{
    static char path[PATH_MAX];
    const char *bin = getenv("AG_BIN");
    ck_assert_msg(bin && *bin, "AG_BIN is not set: run the tests with `make test` or `make check`");
    if (bin[0] == '/') {
        ck_assert(snprintf(path, sizeof(path), "%s", bin) < (int)sizeof(path));
    } else {
        char cwd[PATH_MAX];
        ck_assert_msg(getcwd(cwd, sizeof(cwd)) != NULL, "getcwd: %s", strerror(errno));
        ck_assert(snprintf(path, sizeof(path), "%s/%s", cwd, bin) < (int)sizeof(path));
    }
    ck_assert_msg(access(path, X_OK) == 0, "AG_BIN=%s: %s", path, strerror(errno));
    return path;
}

int run_sanitized(void)
{
    const char *s = getenv("AG_SANITIZE");
    return s && *s;
}

const char *run_which(const char *program, char *buf, size_t len)
{
    ck_assert(buf != NULL && len > 0);
    for (const char *path = getenv("PATH"); path && *path;) {
        size_t n = strcspn(path, ":");
        int got = snprintf(buf, len, "%.*s/%s", (int)n, n ? path : ".", program);
        struct stat st;
        if (got > 0 && (size_t)got < len && stat(buf, &st) == 0 && S_ISREG(st.st_mode) &&
            access(buf, X_OK) == 0)
            return buf;
        path += n + (path[n] == ':');
    }
    return NULL;
}

int run_have(const char *program)
{
    char buf[PATH_MAX];
    return run_which(program, buf, sizeof(buf)) != NULL;
}

/* ---- running ---- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void append(char **buf, size_t *len, const char *data, size_t n)
{
    char *grown = realloc(*buf, *len + n + 1);
    ck_assert_ptr_nonnull(grown);
    memcpy(grown + *len, data, n);
    *len += n;
    grown[*len] = '\0';
    *buf = grown;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* In the child: stdin, stdout and stderr in place, then argv. Only
 * async-signal-safe calls, and _exit(127) when argv cannot run. */
static void child(const char *const *argv, const run_opts *o, const int in[2], const int out[2],
                  const int err[2])
{
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* a test that dies takes its long run along */
#endif
    setpgid(0, 0); /* its own group: past the time bound, it goes with all it started */
    int fd_in = o->in ? in[0] : open("/dev/null", O_RDONLY);
    int fd_out = o->out_file ? open(o->out_file, O_WRONLY | O_CREAT | O_TRUNC, 0666) : out[1];
    if (fd_in < 0 || fd_out < 0 || dup2(fd_in, 0) < 0 || dup2(fd_out, 1) < 0 || dup2(err[1], 2) < 0)
        _exit(127);
    for (int fd = 3; fd < 256; fd++) /* our pipes and whatever the runner had open */
        close(fd);
    if (o->path)
        setenv("PATH", o->path, 1);
    signal(SIGINT, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    execv(argv[0], (char *const *)argv);
    _exit(127);
}

/* argv as a command line in buf, for messages: the program's base name,
 * then the arguments, cut to fit. */
static void show_cmd(char *buf, size_t len, const char *const *argv)
{
    size_t used = 0;
    for (int k = 0; argv[k] && used + 1 < len; k++) {
        const char *a = k ? argv[k] : strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
        used += (size_t)snprintf(buf + used, len - used, "%s%s", k ? " " : "", *a ? a : "''");
    }
    for (char *c = buf; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
}

run_proc run_start(const char *const *argv, const run_opts *o)
{
    static const run_opts defaults;
    if (!o)
        o = &defaults;
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2];
    if (o->in) {
        ck_assert_int_eq(pipe(in), 0);
        signal(SIGPIPE, SIG_IGN); /* a child that stops reading is an EPIPE, not our death */
    }
    if (!o->out_file)
        ck_assert_int_eq(pipe(out), 0);
    ck_assert_int_eq(pipe(err), 0);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        child(argv, o, in, out, err);
    setpgid(pid, pid); /* also here, so that it holds before the child gets to it */
    close_fd(&in[0]);
    close_fd(&out[1]);
    close_fd(&err[1]);

    run_proc p;
    memset(&p, 0, sizeof(p));
    p.pid = pid;
    p.in_fd = in[1];
    p.out_fd = out[0];
    p.err_fd = err[0];
    p.in = o->in;
    p.in_len = o->in && !o->in_len ? strlen(o->in) : o->in_len;
    if (p.in_fd >= 0) {
        ck_assert_int_eq(fcntl(p.in_fd, F_SETFL, fcntl(p.in_fd, F_GETFL) | O_NONBLOCK), 0);
        if (p.in_len == 0)
            close_fd(&p.in_fd); /* an empty stdin: end of file at once */
    }
    const char *mult = getenv("CK_TIMEOUT_MULTIPLIER");
    double scale = mult && atof(mult) >= 1 ? atof(mult) : 1;
    p.timeout_s = (int)((o->timeout_s > 0 ? o->timeout_s : RUN_TIMEOUT_S) * scale);
    p.deadline = now_s() + p.timeout_s;
    p.out = calloc(1, 1);
    p.err = calloc(1, 1);
    ck_assert(p.out && p.err);
    show_cmd(p.cmd, sizeof(p.cmd), argv);
    return p;
}

/* Past the time bound: kill the child, collect what it said, and fail. */
static void timed_out(run_proc *p)
{
    kill(-p->pid, SIGKILL);
    close_fd(&p->in_fd);
    p->deadline = now_s() + 2; /* what is still in the pipes (unless a stray holds them) */
    while ((p->out_fd >= 0 || p->err_fd >= 0) && now_s() < p->deadline) {
        struct pollfd fds[2] = {{p->out_fd, POLLIN, 0}, {p->err_fd, POLLIN, 0}};
        if (poll(fds, 2, 100) <= 0)
            continue;
        for (int k = 0; k < 2; k++) {
            char buf[4096];
            int *fd = k ? &p->err_fd : &p->out_fd;
            ssize_t got = fds[k].revents ? read(*fd, buf, sizeof(buf)) : -1;
            if (got > 0)
                append(k ? &p->err : &p->out, k ? &p->err_len : &p->out_len, buf, (size_t)got);
            else if (fds[k].revents)
                close_fd(fd);
        }
    }
    close_fd(&p->out_fd);
    close_fd(&p->err_fd);
    waitpid(p->pid, NULL, 0);
    ck_abort_msg("the run took longer than %d s and was killed\n--- stdout:\n%s--- stderr:\n%s",
                 p->timeout_s, p->out, p->err);
}

int run_pump(run_proc *p, int timeout_ms)
{
    if (p->in_fd < 0 && p->out_fd < 0 && p->err_fd < 0)
        return 0;
    double left = p->deadline - now_s();
    if (left <= 0)
        timed_out(p);
    int wait_ms = left * 1000 < INT_MAX ? (int)(left * 1000) + 1 : INT_MAX;
    if (timeout_ms >= 0 && timeout_ms < wait_ms)
        wait_ms = timeout_ms;
    struct pollfd fds[3] = {{p->out_fd, POLLIN, 0}, {p->err_fd, POLLIN, 0}, {p->in_fd, POLLOUT, 0}};
    int n = poll(fds, 3, wait_ms);
    if (n < 0 && errno == EINTR)
        return 1;
    ck_assert_msg(n >= 0, "poll: %s", strerror(errno));
    for (int k = 0; k < 2; k++) {
        if (fds[k].fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        char buf[4096];
        ssize_t got = read(fds[k].fd, buf, sizeof(buf));
        if (got > 0)
            append(k ? &p->err : &p->out, k ? &p->err_len : &p->out_len, buf, (size_t)got);
        else if (got == 0 || errno != EINTR)
            close_fd(k ? &p->err_fd : &p->out_fd);
    }
    if (fds[2].fd >= 0 && fds[2].revents) {
        ssize_t put = write(p->in_fd, p->in + p->in_done, p->in_len - p->in_done);
        if (put > 0)
            p->in_done += (size_t)put;
        /* done, or the child closed its stdin (EPIPE): either way, no more */
        if (p->in_done == p->in_len || (put < 0 && errno != EINTR && errno != EAGAIN))
            close_fd(&p->in_fd);
    }
    return p->in_fd >= 0 || p->out_fd >= 0 || p->err_fd >= 0;
}

void run_wait(run_proc *p)
{
    while (run_pump(p, -1))
        ;
    int w;
    for (;;) {
        struct rusage ru;
        memset(&ru, 0, sizeof(ru));
        pid_t got = wait4(p->pid, &w, WNOHANG, &ru);
        p->maxrss = ru.ru_maxrss;
        if (got == p->pid)
            break;
        ck_assert_msg(got == 0 || errno == EINTR, "waitpid: %s", strerror(errno));
        if (now_s() > p->deadline)
            timed_out(p); /* it closed its pipes but runs on */
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    p->status = WIFEXITED(w) ? WEXITSTATUS(w) : -1;
    p->signal = WIFSIGNALED(w) ? WTERMSIG(w) : 0;
}

void run_free(run_proc *p)
{
    close_fd(&p->in_fd);
    close_fd(&p->out_fd);
    close_fd(&p->err_fd);
    free(p->out);
    free(p->err);
    p->out = p->err = NULL;
}

run_proc run_exec(const char *const *argv, const run_opts *o)
{
    run_proc p = run_start(argv, o);
    run_wait(&p);
    return p;
}

run_proc run_start_args(const char *const *args, const run_opts *o)
{
    const char *argv[RUN_MAX_ARGS + 2];
    int n = 0;
    argv[n++] = run_bin();
    for (int k = 0; args[k]; k++) {
        ck_assert_int_lt(n, RUN_MAX_ARGS);
        argv[n++] = args[k];
    }
    argv[n] = NULL;
    return run_start(argv, o);
}

run_proc run_args(const char *const *args, const run_opts *o)
{
    run_proc p = run_start_args(args, o);
    run_wait(&p);
    return p;
}

run_proc run_cmd(const char *first, ...)
{
    const char *args[RUN_MAX_ARGS + 1];
    int n = 0;
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a; a = va_arg(ap, const char *)) {
        ck_assert_int_lt(n, RUN_MAX_ARGS);
        args[n++] = a;
    }
    va_end(ap);
    args[n] = NULL;
    return run_args(args, NULL);
}

run_proc run_words(const char *words)
{
    char copy[4096];
    const char *args[RUN_MAX_ARGS + 1];
    int n = 0;
    ck_assert_uint_lt(strlen(words), sizeof(copy));
    strcpy(copy, words);
    for (char *w = copy; *w;) {
        size_t len = strcspn(w, " ");
        ck_assert_msg(len > 0, "run_words: an empty word in '%s'", words);
        ck_assert_int_lt(n, RUN_MAX_ARGS);
        args[n++] = w;
        w += len;
        if (*w)
            *w++ = '\0';
    }
    ck_assert_msg(n == 0 || copy[strlen(words) - 1] != '\0', "run_words: '%s' ends in a space",
                  words);
    args[n] = NULL;
    return run_args(args, NULL);
}

run_proc run_shell(const char *script)
{
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    return run_exec(argv, NULL);
}

run_proc run_interrupt(const char *const *args, const char *until, int sig)
{
    run_proc p = run_start_args(args, NULL);
    double give_up = now_s() + 60; /* a safety net only, never a measurement */
    while (!strstr(p.out, until)) {
        if (!run_pump(&p, 100) || now_s() > give_up) {
            kill(p.pid, SIGKILL);
            run_wait(&p);
            ck_abort_msg("the run did not print '%s':\n%s%s", until, p.out, p.err);
        }
    }
    ck_assert_int_eq(kill(p.pid, sig), 0);
    run_wait(&p);
    return p;
}

void run_assert_usage(const run_proc *p, const char *usage)
{
    ck_assert_msg(p->status == 2 && p->signal == 0,
                  "`%s`: exit status %d (signal %d), want 2 "
                  "(bad usage)\n--- stderr:\n%s",
                  p->cmd, p->status, p->signal, p->err);
    ck_assert_msg(p->out_len == 0, "`%s`: bad usage, and this on stdout:\n%s", p->cmd, p->out);
    ck_assert_msg(strstr(p->err, usage) != NULL, "`%s`: '%s' not on stderr:\n%s", p->cmd, usage,
                  p->err);
}

void run_assert_picture(const run_proc *p, const char *said, const char *png, const char *dir,
                        const char *listing)
{
    run_assert_status(p, 0);
    char want[PATH_MAX + 64], names[1024];
    snprintf(want, sizeof(want), "%s%s\n", said, png);
    run_assert_has(p->out, want);
    size_t len;
    char *img = file_read(png, &len);
    ck_assert_msg(img && len > 1000 && memcmp(img, "\x89PNG", 4) == 0, "%s is not a PNG", png);
    free(img);
    ck_assert_str_eq(file_listing(dir, names, sizeof(names)), listing);
}

/* ---- text ---- */

const char *text_line(const char *text, const char *prefix)
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

const char *text_last_line(const char *text, char *buf, size_t len)
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

const char *file_tmpdir(char *buf, size_t len)
{
    const char *base = getenv("TMPDIR");
    int n = snprintf(buf, len, "%s/attograd-test-XXXXXX", base && *base ? base : "/tmp");
    ck_assert(n > 0 && (size_t)n < len);
    ck_assert_msg(mkdtemp(buf) != NULL, "mkdtemp %s: %s", buf, strerror(errno));
    return buf;
}

void file_tmpdir_nobin(char *dir, size_t dirlen, char *bin, size_t binlen)
{
    file_tmpdir(dir, dirlen);
    file_path(bin, binlen, dir, "bin");
    ck_assert_int_eq(mkdir(bin, 0700), 0);
}

const char *file_path(char *buf, size_t len, const char *dir, const char *name)
{
    int n = snprintf(buf, len, "%s/%s", dir, name);
    ck_assert(n > 0 && (size_t)n < len);
    return buf;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(a, b);
}

const char *file_listing(const char *dir, char *buf, size_t len)
{
    char names[64][256];
    int n = 0;
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "opendir %s: %s", dir, strerror(errno));
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        ck_assert_int_lt(n, 64);
        snprintf(names[n++], sizeof(names[0]), "%s", e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof(names[0]), cmp_name);
    buf[0] = '\0';
    size_t used = 0;
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(buf + used, used < len ? len - used : 0, "%s%s", i ? " " : "",
                                 names[i]);
    ck_assert(used < len);
    return buf;
}

void file_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    char path[PATH_MAX];
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        int n = snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (n < 0 || (size_t)n >= sizeof(path))
            continue;
        if (remove(path) != 0)
            file_rmdir(path);
    }
    closedir(d);
    ck_assert_msg(rmdir(dir) == 0, "rmdir %s: %s", dir, strerror(errno));
}

char *file_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = calloc(1, 1);
    ck_assert_ptr_nonnull(buf);
    size_t n = 0, got;
    char chunk[4096];
    while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0)
        append(&buf, &n, chunk, got);
    fclose(f);
    if (len)
        *len = n;
    return buf;
}

int file_same(const char *a, const char *b)
{
    size_t la = 0, lb = 1;
    char *fa = file_read(a, &la), *fb = file_read(b, &lb);
    int same = fa && fb && la == lb && memcmp(fa, fb, la) == 0;
    free(fa), free(fb);
    return same;
}

void file_write(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s: %s", path, strerror(errno));
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}
