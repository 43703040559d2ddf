/*
 * plot.c - draw with gnuplot, when it is installed: a training run's loss
 * curve beside one example's attention weights, and gradcheck's sweep.
 *
 * gnuplot is a language interpreter, so nothing from the command line may
 * reach its parser: it reads a script made here from numbers and fixed text
 * on its stdin, and writes the picture to its stdout, a pipe, so no file
 * name is ever part of the script. The picture is kept only when it is a
 * whole PNG (a gnuplot that fails, or exits 0 having written nothing, makes
 * no file), and is then written like every other output (ag_file_write: a
 * temporary file renamed into place, or a device written through). gnuplot
 * runs in its own process group with a time limit; Ctrl-C, SIGTERM or SIGHUP
 * while it runs stop it, and the caller learns which signal came.
 */
#include "attograd.h"
#include "plot.h"
#include "signals.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The executable `name` on the PATH, in a new string, or NULL. */
static char *find_program(const char *name)
{
    const char *path = getenv("PATH");
    if (!path)
        return NULL;
    char buf[4096];
    while (*path) {
        size_t len = strcspn(path, ":");
        if (len > 0 && len + strlen(name) + 2 < sizeof(buf)) {
            snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, path, name);
            if (access(buf, X_OK) == 0)
                return strdup(buf);
        }
        path += len;
        if (*path == ':')
            path++;
    }
    return NULL;
}

int ag_cli_have_program(const char *name)
{
    char *p = find_program(name);
    free(p);
    return p != NULL;
}

void ag_cli_gnuplot_quote(FILE *g, const char *s)
{
    fputc('\'', g);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\'')
            fputc('\'', g);                        /* '' is a quote inside '...' */
        fputc(c < 0x20 || c == 0x7f ? ' ' : c, g); /* a newline would end the command */
    }
    fputc('\'', g);
}

int ag_cli_gnuplot_begin(ag_cli_gnuplot *g, int width, int height, char *err, size_t errlen)
{
    memset(g, 0, sizeof(*g));
    g->f = open_memstream(&g->script, &g->len);
    if (!g->f) {
        snprintf(err, errlen, "out of memory");
        return 0;
    }
    /* `set output` alone: the picture goes to gnuplot's stdout */
    fprintf(g->f, "set terminal pngcairo size %d,%d font 'sans,10'\nset output\n", width, height);
    return 1;
}

/* ---- running gnuplot ---- */

/* The signal that asked to stop while gnuplot ran, or 0. */
static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
    stop_signal = sig;
}

#define MAX_PNG ((size_t)64 << 20) /* a plot of a few MB at most; more is not a picture */

/* What one run of gnuplot gave back. */
typedef struct gp_run {
    unsigned char *png; /* (png_len) its stdout */
    size_t png_len, png_cap;
    char tail[512]; /* the end of its stderr */
    size_t tail_len;
    int status; /* waitpid's, when it ended by itself */
    int timed_out, too_big, failed_io;
} gp_run;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int gnuplot_seconds(void)
{
    long v;
    const char *s = getenv("AG_GNUPLOT_SECONDS");
    if (s && ag_parse_long(s, &v) == AG_PARSE_OK && v >= 1 && v <= 86400)
        return (int)v;
    return AG_GNUPLOT_SECONDS;
}

static int read_into(int fd, gp_run *r, int is_png)
{
    unsigned char chunk[16384];
    ssize_t got = read(fd, chunk, sizeof(chunk));
    if (got < 0)
        return errno == EINTR || errno == EAGAIN;
    if (got == 0)
        return 0;
    size_t n = (size_t)got;
    if (!is_png) { /* keep the last bytes of stderr: its error message */
        if (n >= sizeof(r->tail)) {
            memcpy(r->tail, chunk + n - (sizeof(r->tail) - 1), sizeof(r->tail) - 1);
            r->tail_len = sizeof(r->tail) - 1;
        } else {
            size_t keep = r->tail_len + n < sizeof(r->tail) ? r->tail_len : sizeof(r->tail) - 1 - n;
            memmove(r->tail, r->tail + r->tail_len - keep, keep);
            memcpy(r->tail + keep, chunk, n);
            r->tail_len = keep + n;
        }
        r->tail[r->tail_len] = '\0';
        return 1;
    }
    if (r->png_len + n > MAX_PNG) {
        r->too_big = 1;
        return 0;
    }
    if (r->png_len + n > r->png_cap) {
        size_t cap = r->png_cap ? r->png_cap : 1 << 16;
        while (cap < r->png_len + n)
            cap *= 2;
        unsigned char *p = realloc(r->png, cap);
        if (!p) {
            r->failed_io = 1;
            return 0;
        }
        r->png = p;
        r->png_cap = cap;
    }
    memcpy(r->png + r->png_len, chunk, n);
    r->png_len += n;
    return 1;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static int make_pipe(int p[2])
{
    if (pipe(p) != 0)
        return 0;
    fcntl(p[0], F_SETFD, FD_CLOEXEC);
    fcntl(p[1], F_SETFD, FD_CLOEXEC);
    return 1;
}

/* Start prog with in, out and err as its standard streams, in its own
 * process group (Ctrl-C at the terminal reaches attograd, which stops it).
 * Returns its pid, or -1. */
static pid_t spawn(const char *prog, int in, int out, int err)
{
    static const int sigs[4] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
    fflush(NULL);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    /* only async-signal-safe calls until exec */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int k = 0; k < 4; k++)
        sigaction(sigs[k], &dfl, NULL);
    setpgid(0, 0);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    char *const argv[] = {"gnuplot", NULL};
    execv(prog, argv);
    _exit(127);
}

/* Run prog with script on its stdin until it ends, the time is up or a
 * signal asks to stop (*sig). Returns 0 when it could not be started. */
static int run_gnuplot(const char *prog, const char *script, size_t len, gp_run *r, int *sig)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1};
    if (!make_pipe(in) || !make_pipe(out) || !make_pipe(er)) {
        close_fd(&in[0]), close_fd(&in[1]), close_fd(&out[0]), close_fd(&out[1]);
        return 0;
    }
    struct sigaction sa, old[3];
    static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop; /* no SA_RESTART: poll returns at once */
    sigemptyset(&sa.sa_mask);
    stop_signal = 0;
    for (int k = 0; k < 3; k++)
        sigaction(sigs[k], &sa, &old[k]);
    pid_t pid = spawn(prog, in[0], out[1], er[1]);
    close_fd(&in[0]), close_fd(&out[1]), close_fd(&er[1]);
    if (pid < 0) {
        close_fd(&in[1]), close_fd(&out[0]), close_fd(&er[0]);
        for (int k = 0; k < 3; k++)
            sigaction(sigs[k], &old[k], NULL);
        return 0;
    }
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    double deadline = now_seconds() + gnuplot_seconds();
    size_t sent = 0;
    int ended = 0, w = 0;
    while (!ended) {
        if (stop_signal || now_seconds() > deadline)
            break;
        if (in[1] >= 0 && sent == len)
            close_fd(&in[1]); /* the whole script: gnuplot sees its end */
        struct pollfd fds[3] = {{in[1], POLLOUT, 0}, {out[0], POLLIN, 0}, {er[0], POLLIN, 0}};
        int n = poll(fds, 3, 100); /* short, so a signal just before it waits little */
        if (n < 0 && errno != EINTR)
            break;
        if (n > 0 && in[1] >= 0 && (fds[0].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t put = write(in[1], script + sent, len - sent);
            if (put > 0)
                sent += (size_t)put;
            else if (put < 0 && errno != EAGAIN && errno != EINTR)
                close_fd(&in[1]); /* it stopped reading (EPIPE): its status says why */
        }
        if (n > 0 && out[0] >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) &&
            !read_into(out[0], r, 1))
            close_fd(&out[0]);
        if (n > 0 && er[0] >= 0 && (fds[2].revents & (POLLIN | POLLHUP | POLLERR)) &&
            !read_into(er[0], r, 0))
            close_fd(&er[0]);
        if (r->too_big || r->failed_io)
            break;
        /* both of its outputs closed: it has ended, or is about to */
        if (out[0] < 0 && er[0] < 0)
            ended = waitpid(pid, &w, WNOHANG) == pid;
    }
    if (!ended) {
        *sig = stop_signal;
        r->timed_out = !stop_signal && !r->too_big && !r->failed_io;
        kill(pid, SIGKILL);
        while (waitpid(pid, &w, 0) < 0 && errno == EINTR)
            ;
    }
    close_fd(&in[1]), close_fd(&out[0]), close_fd(&er[0]);
    for (int k = 0; k < 3; k++)
        sigaction(sigs[k], &old[k], NULL);
    r->status = w;
    return 1;
}

/* The last line of gnuplot's stderr, for a message. */
static const char *last_line(gp_run *r)
{
    char *s = r->tail;
    size_t n = r->tail_len;
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
        s[--n] = '\0';
    char *nl = strrchr(s, '\n');
    return nl ? nl + 1 : s;
}

/* Whether bytes are a whole PNG: the signature, and the IEND chunk last. */
static const char *png_problem(const unsigned char *p, size_t n)
{
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    static const unsigned char iend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82};
    if (n == 0)
        return "gnuplot wrote nothing";
    if (n < sizeof(sig) || memcmp(p, sig, sizeof(sig)) != 0)
        return "gnuplot's output is not a PNG image";
    if (n < sizeof(sig) + sizeof(iend) || memcmp(p + n - sizeof(iend), iend, sizeof(iend)) != 0)
        return "gnuplot's PNG is cut short (no IEND chunk)";
    return NULL;
}

int ag_cli_gnuplot_end(ag_cli_gnuplot *g, const char *png, int *sig, char *err, size_t errlen)
{
    char shown[AG_QUOTE_LEN], why[AG_QUOTE_LEN];
    *sig = 0;
    ag_quote(png, shown, sizeof(shown));
    int ok = fclose(g->f) == 0;
    g->f = NULL;
    char *prog = ok ? find_program("gnuplot") : NULL;
    gp_run r;
    memset(&r, 0, sizeof(r));
    if (!ok) {
        snprintf(err, errlen, "out of memory");
    } else if (!prog) {
        snprintf(err, errlen, "gnuplot is not installed, so no plot (apt-get install gnuplot-nox)");
        ok = 0;
    } else if (!run_gnuplot(prog, g->script, g->len, &r, sig)) {
        snprintf(err, errlen, "cannot start gnuplot: %s, so no plot", strerror(errno));
        ok = 0;
    } else if (*sig) {
        snprintf(err, errlen, "interrupted while gnuplot was drawing %s: stopped it, no plot",
                 shown);
        ok = 0;
    } else if (r.timed_out) {
        snprintf(err, errlen,
                 "gnuplot did not finish drawing %s within %d s (AG_GNUPLOT_SECONDS): "
                 "stopped it, no plot",
                 shown, gnuplot_seconds());
        ok = 0;
    } else if (r.too_big || r.failed_io) {
        snprintf(err, errlen, "gnuplot's output for %s is %s: no plot", shown,
                 r.too_big ? "larger than any plot (64 MB)" : "more than memory holds");
        ok = 0;
    } else if (WIFSIGNALED(r.status)) {
        snprintf(err, errlen, "gnuplot was killed by signal %d while drawing %s: no plot",
                 WTERMSIG(r.status), shown);
        ok = 0;
    } else if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0) {
        int code = WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1;
        const char *line = last_line(&r);
        if (code == 127 && !*line)
            snprintf(err, errlen, "cannot start gnuplot (%s), so no plot", prog);
        else
            snprintf(err, errlen, "gnuplot failed to draw %s (exit status %d)%s%s: no plot", shown,
                     code, *line ? ": " : "", ag_quote(line, why, 200));
        ok = 0;
    } else if (png_problem(r.png, r.png_len)) {
        snprintf(err, errlen, "%s for %s (%zu bytes): no plot", png_problem(r.png, r.png_len),
                 shown, r.png_len);
        ok = 0;
    }
    if (ok) {
        /* written like every output; a signal waits until it is whole or gone */
        sigset_t held;
        ag_cli_hold_signals(1, &held);
        ok = ag_file_write(png, r.png, r.png_len, err, errlen) == AG_OK;
        ag_cli_hold_signals(0, &held);
    }
    free(prog);
    free(r.png);
    free(g->script);
    memset(g, 0, sizeof(*g));
    return ok;
}

int ag_cli_plot_run(const char *png, const ag_plot_data *d, int *sig, char *err, size_t errlen)
{
    ag_cli_gnuplot gp;
    *sig = 0;
    if (!ag_cli_gnuplot_begin(&gp, 1100, 450, err, errlen))
        return 0;
    FILE *g = gp.f;
    fprintf(g, "set multiplot layout 1,2 title ");
    ag_cli_gnuplot_quote(g, d->title);
    fprintf(g, "\n");
    fprintf(
        g,
        "set xlabel 'step'\nset ylabel 'loss'\nset logscale y\nset y2label 'held-out accuracy'\n"
        "set y2range [0:1.05]\nset y2tics\nset ytics nomirror\nset format y '%%g'\nset key right center\nset grid\n");
    fprintf(g, "plot '-' using 1:2 with lines title 'training loss', "
               "'-' using 1:2 axes x1y2 with linespoints title 'held-out accuracy'\n");
    ag_curve_write(d->loss, g);
    fprintf(g, "e\n");
    ag_curve_write(d->acc, g);
    fprintf(g, "e\n");
    if (d->attn) {
        int T = d->attn_size;
        fprintf(g,
                "unset logscale y\nunset y2tics\nunset y2label\nset ytics mirror\nunset grid\n"
                "set title 'attention of one held-out example (head 1)'\n"
                "set xlabel 'key position'\nset ylabel 'query position'\n"
                "set xrange [-0.5:%g]\nset yrange [%g:-0.5]\nset cbrange [0:1]\n"
                "set palette grey negative\nunset key\n",
                T - 0.5, T - 0.5);
        fprintf(g, "plot '-' matrix with image\n");
        for (int i = 0; i < T; i++) {
            for (int j = 0; j < T; j++)
                fprintf(g, "%s%.4f", j ? " " : "", d->attn[i * T + j]);
            fprintf(g, "\n");
        }
        fprintf(g, "e\n");
    }
    fprintf(g, "unset multiplot\n");
    return ag_cli_gnuplot_end(&gp, png, sig, err, errlen);
}
