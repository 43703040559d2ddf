/*
 * run.h - run programs from a Check test, and the scratch files they use.
 *
 * A run is argv exactly as given, without a shell, so tabs, newlines, quotes
 * and empty strings reach the program unchanged. Its stdin is /dev/null or
 * bytes the test gives; its stdout and stderr are captured apart (or stdout
 * goes to a file); the result is the exit status or the signal that ended
 * it. Every run has a time bound: a run past it is killed and fails the
 * test with its output shown, even where Check does not fork (CK_FORK=no).
 * run_shell is for the tests that mean a shell: the docs' commands as a
 * user types them.
 *
 * `make test` sets AG_BIN (the attograd under test) and AG_SANITIZE (the
 * build's sanitizers, empty when none). The code is in run.c, linked into
 * the test runner.
 */
#ifndef AG_TEST_RUN_H
#define AG_TEST_RUN_H

#include <check.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>

/* The time bound of a run unless run_opts says otherwise, in seconds (the
 * longest Check timeout of the suites; CK_TIMEOUT_MULTIPLIER scales both). */
#define RUN_TIMEOUT_S 600

/* How to run: a zeroed run_opts (or NULL) is stdin from /dev/null, our PATH,
 * stdout captured and RUN_TIMEOUT_S. */
typedef struct run_opts {
    const char *in;       /* bytes for its stdin (borrowed until the run ends), NULL: /dev/null */
    size_t in_len;        /* their count; 0 with in set: strlen(in) */
    const char *path;     /* PATH in the child, NULL: ours */
    const char *out_file; /* stdout goes to this file (created or truncated), NULL: captured */
    int timeout_s;        /* the time bound, 0: RUN_TIMEOUT_S */
} run_opts;

/* A running or finished child. */
typedef struct run_proc {
    pid_t pid;
    int in_fd, out_fd, err_fd; /* our ends of its pipes, -1 once closed */
    const char *in;            /* stdin still to write: in[in_done..in_len) */
    size_t in_len, in_done;
    double deadline; /* CLOCK_MONOTONIC seconds when the bound runs out */
    int timeout_s;
    char *out, *err; /* everything read so far, NUL-terminated (owned) */
    size_t out_len, err_len;
    int status;    /* exit status, or -1 when a signal ended it */
    int signal;    /* that signal, or 0 */
    long maxrss;   /* its peak resident memory in KiB, once it has ended (0: unknown) */
    char cmd[160]; /* the command line, to name it in a failure (cut, '?' for a
                                   control byte, '' for an empty argument) */
} run_proc;

/* ---- what to run ---- */

/* The attograd under test as an absolute path (a test may change PATH or
 * the directory), which must be executable. Borrowed from a static buffer. */
const char *run_bin(void);

/* Whether this build has sanitizers (valgrind does not mix with them). */
int run_sanitized(void);

/* The first executable file named program in a directory of PATH, in buf;
 * NULL when there is none. */
const char *run_which(const char *program, char *buf, size_t len);

/* Whether program is on PATH: what needs an optional program (gnuplot, dot,
 * valgrind) is tested only where it is. */
int run_have(const char *program);

/* ---- running to the end ---- */

/* `attograd ARGS...`: the arguments after the program, NULL-terminated. */
run_proc run_cmd(const char *first, ...);

/* `attograd args...` (args NULL-terminated, without the program), with o
 * (may be NULL). */
run_proc run_args(const char *const *args, const run_opts *o);

/* `attograd` with words split at single spaces: for tables of short command
 * lines. An argument that holds a space, or an empty one, needs run_cmd. */
run_proc run_words(const char *words);

/* Any program: argv[0] is its path, argv NULL-terminated; o may be NULL. */
run_proc run_exec(const char *const *argv, const run_opts *o);

/* /bin/sh -c script, for what a test means to go through a shell. */
run_proc run_shell(const char *script);

/* ---- a run in steps: start, read, signal, wait ---- */

/* Start argv (as run_exec) without waiting. A child outlives no test: it
 * is killed when the test process dies. */
run_proc run_start(const char *const *argv, const run_opts *o);

/* Start `attograd args...` (as run_args) without waiting. */
run_proc run_start_args(const char *const *args, const run_opts *o);

/* Feed stdin and read whatever the child has written, waiting up to
 * timeout_ms (-1: until something happens); returns 0 once its stdout and
 * stderr are closed. Past the run's time bound, kills it and fails. */
int run_pump(run_proc *p, int timeout_ms);

/* Read everything until the child closes its pipes, then reap it. */
void run_wait(run_proc *p);

/* Start `attograd args...`, wait (at most a minute) until its stdout shows
 * until (a fragment), send sig, and return the finished child. */
run_proc run_interrupt(const char *const *args, const char *until, int sig);

/* Free what a run captured; the struct may be reused. */
void run_free(run_proc *p);

/* Fail with the command and its output shown, so a failure explains itself. */
#define run_assert_status(p, want)                                                                 \
    ck_assert_msg((p)->status == (want) && (p)->signal == 0,                                       \
                  "`%s`: exit status %d (signal %d), want %d\n--- stdout:\n%s--- stderr:\n%s",     \
                  (p)->cmd, (p)->status, (p)->signal, (want), (p)->out, (p)->err)

#define run_assert_has(text, fragment)                                                             \
    ck_assert_msg(strstr((text), (fragment)) != NULL, "'%s' not found in:\n%s", (fragment), (text))

/* p is bad usage as the command line promises: exit status 2, nothing on
 * stdout, and usage (such as "usage: attograd gradcheck") on stderr. */
void run_assert_usage(const run_proc *p, const char *usage);

/* p succeeded and said `said` followed by png on stdout; png is a whole PNG
 * image, and dir holds exactly the names in listing (no temporary file). */
void run_assert_picture(const run_proc *p, const char *said, const char *png, const char *dir,
                        const char *listing);

/* ---- text ---- */

/* The line of text that starts with prefix (at the start of a line), or NULL. */
const char *text_line(const char *text, const char *prefix);

/* The last line of text (without its newline), in buf. */
const char *text_last_line(const char *text, char *buf, size_t len);

/* ---- files ---- */

/* A new empty directory for one test, under TMPDIR or /tmp: path in buf. */
const char *file_tmpdir(char *buf, size_t len);

/* A scratch directory (path in dir) holding one empty directory "bin" (its
 * path in bin): run with PATH=bin, the command finds no optional program. */
void file_tmpdir_nobin(char *dir, size_t dirlen, char *bin, size_t binlen);

/* dir/name in buf. */
const char *file_path(char *buf, size_t len, const char *dir, const char *name);

/* The names in dir, sorted, joined by spaces ("" when empty), in buf. */
const char *file_listing(const char *dir, char *buf, size_t len);

/* Remove dir, its files and its subdirectories; assert that it is gone. */
void file_rmdir(const char *dir);

/* A whole file in a new string (the caller frees it), or NULL when it
 * cannot be read; *len (when len is not NULL) gets its size. */
char *file_read(const char *path, size_t *len);

/* Whether the files at a and b both exist and hold the same bytes. */
int file_same(const char *a, const char *b);

/* Write len bytes of data to path (created or truncated), or fail. */
void file_write(const char *path, const void *data, size_t len);

#endif /* AG_TEST_RUN_H */
