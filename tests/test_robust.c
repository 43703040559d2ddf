/*
 * test_robust.c - the command against a hostile user, by class (each rule is
 * in docs/robustness.md), with several variants of each:
 *
 *   outputs   an output that is a device, a directory, a FIFO, a socket or
 *             a link: written through, refused or followed, never replaced
 *   same      two names of one file (./x, dir/../x, links, stdout)
 *   names     control bytes in file names and values: never reach gnuplot
 *             or the terminal; long values cut with the reason kept
 *   inputs    /dev/zero, /dev/urandom, FIFOs, sockets: refused, not read
 *   finite    finite inputs whose result is not: an error, nothing written
 *   early     outputs checked before the work (250-byte names, no directory)
 *   plots     gnuplot failing, writing nothing or garbage: no picture, exit 1
 *   signals   Ctrl-C or a hang while gnuplot runs; stale temporary files
 *   edges     explain at huge logits, hex floats, --version extra, counts
 *             at the checkpoint limit
 *
 * gnuplot is replaced by small shell scripts first on PATH (the real one is
 * used only where it is installed). Device files are made with mknod, which
 * needs root (as in CI); without it those variants are skipped.
 */
#define _XOPEN_SOURCE 700 /* mknodat */
#include "run.h"
#include "st_edit.h"
#include "test_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/sysmacros.h>
#endif

#define PREVIOUS "previous content\n"

/* ---- scratch files ---- */

/* A fresh scratch directory for one test, with bin/ for fake programs. */
typedef struct scratch {
    char dir[256];
    char bin[512];   /* dir/bin */
    char path[600];  /* PATH for the command: bin first */
    char *names[64]; /* (n_names) what at() made, freed by scratch_free */
    int n_names;
} scratch;

static void scratch_new(scratch *s)
{
    memset(s, 0, sizeof(*s));
    file_tmpdir(s->dir, sizeof(s->dir));
    file_path(s->bin, sizeof(s->bin), s->dir, "bin");
    ck_assert_int_eq(mkdir(s->bin, 0755), 0);
    snprintf(s->path, sizeof(s->path), "%s:/usr/bin:/bin", s->bin);
}

/* dir/name, kept until scratch_free. */
static const char *at(scratch *s, const char *name)
{
    ck_assert_int_lt(s->n_names, 64);
    size_t n = strlen(s->dir) + strlen(name) + 2;
    char *b = malloc(n);
    ck_assert_ptr_nonnull(b);
    snprintf(b, n, "%s/%s", s->dir, name);
    return s->names[s->n_names++] = b;
}

/* Remove the directory and everything in it; free the names. */
static void scratch_free(scratch *s)
{
    file_rmdir(s->dir);
    for (int k = 0; k < s->n_names; k++)
        free(s->names[k]);
    s->n_names = 0;
}

/* Whether a temporary file (NAME.tmp-...) is left in dir. */
static int tmp_left(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)) != NULL)
        found |= strstr(e->d_name, ".tmp-") != NULL;
    closedir(d);
    return found;
}

static mode_t kind_of(const char *path)
{
    struct stat sb;
    ck_assert_msg(lstat(path, &sb) == 0, "lstat %s: %s", path, strerror(errno));
    return sb.st_mode & S_IFMT;
}

/* A character device like /dev/null (1,3) or /dev/full (1,7), or a block
 * device, at path: 0 when this process may not make one (not root). */
static int make_device(const char *path, mode_t kind, int major, int minor)
{
#ifdef __linux__
    return mknodat(AT_FDCWD, path, kind | 0666, makedev((unsigned)major, (unsigned)minor)) == 0;
#else
    (void)path, (void)kind, (void)major, (void)minor;
    return 0;
#endif
}

static void make_socket(const char *path)
{
    struct sockaddr_un a;
    memset(&a, 0, sizeof(a));
    a.sun_family = AF_UNIX;
    ck_assert_uint_lt(strlen(path), sizeof(a.sun_path));
    strcpy(a.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    close(fd); /* the name stays: a socket file nobody listens on */
}

/* An executable shell script `name` in s's bin/. */
static void fake_program(const scratch *s, const char *name, const char *body)
{
    char path[700], text[4096];
    snprintf(path, sizeof(path), "%s/%s", s->bin, name);
    snprintf(text, sizeof(text), "#!/bin/sh\n%s\n", body);
    file_write(path, text, strlen(text));
    ck_assert_int_eq(chmod(path, 0755), 0);
}

/* The smallest output our PNG check accepts: signature ... IEND. */
#define FAKE_PNG                                                                                   \
    "printf '\\211PNG\\r\\n\\032\\n\\000\\000\\000\\015IHDRxxxxxxxxxxxxx"                          \
    "\\000\\000\\000\\000IEND\\256B`\\202'"

/* A gnuplot that reads its script (kept in dir/script.txt) and draws a PNG. */
static void fake_gnuplot_ok(const scratch *s)
{
    char body[1024];
    snprintf(body, sizeof(body), "cat > '%s/script.txt'\n" FAKE_PNG, s->dir);
    fake_program(s, "gnuplot", body);
}

/* Run the command with argv (after "attograd", NULL-terminated) and PATH. */
static run_proc run_in(const scratch *s, const char *const *args)
{
    return run_args(args, &(run_opts){.path = s->path});
}

/* stderr is one line per message: no control byte but '\n', no C1 control. */
static void assert_clean(const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        ck_assert_msg(c == '\n' || (c >= 0x20 && c != 0x7f), "byte 0x%02x at %zu in:\n%s", c, i,
                      text);
        ck_assert_msg(!(c == 0xc2 && i + 1 < len && (unsigned char)text[i + 1] >= 0x80 &&
                        (unsigned char)text[i + 1] <= 0x9f),
                      "a C1 control at %zu in:\n%s", i, text);
    }
}

static size_t count_lines(const char *text)
{
    size_t n = 0;
    for (; *text; text++)
        n += *text == '\n';
    return n;
}

/* A model and a batch for grad, written as F64 safetensors by hand (so
 * that values beyond float, and below it, can be in the file): wq..wo
 * (4, 4) times w, x (2, 3, 4) times x, y times y; n_heads 2. */
static double pattern(size_t i)
{
    return ((double)((i * 7 + 3) % 13) - 6.5) / 13.0; /* in (-0.5, 0.5), never 0 */
}

static void write_f64(const char *path, const char *const *names, int n, int ndim, const int *shape,
                      const double *scale, const char *meta)
{
    size_t count = 1;
    for (int d = 0; d < ndim; d++)
        count *= (size_t)shape[d];
    char json[2048], dims[64];
    size_t used = 0;
    size_t at_dim = (size_t)snprintf(dims, sizeof(dims), "[");
    for (int d = 0; d < ndim; d++)
        at_dim +=
            (size_t)snprintf(dims + at_dim, sizeof(dims) - at_dim, "%s%d", d ? "," : "", shape[d]);
    snprintf(dims + at_dim, sizeof(dims) - at_dim, "]");
    used += (size_t)snprintf(json + used, sizeof(json) - used, "{");
    for (int k = 0; k < n; k++)
        used +=
            (size_t)snprintf(json + used, sizeof(json) - used,
                             "\"%s\":{\"dtype\":\"F64\",\"shape\":%s,\"data_offsets\":[%zu,%zu]},",
                             names[k], dims, (size_t)k * count * 8, (size_t)(k + 1) * count * 8);
    used += (size_t)snprintf(json + used, sizeof(json) - used, "\"__metadata__\":{%s}}", meta);
    ck_assert_uint_lt(used, sizeof(json));
    size_t total = 8 + used + (size_t)n * count * 8;
    unsigned char *buf = malloc(total);
    ck_assert_ptr_nonnull(buf);
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)((uint64_t)used >> (8 * i));
    memcpy(buf + 8, json, used);
    for (int k = 0; k < n; k++)
        for (size_t i = 0; i < count; i++) {
            double v = scale[k] * pattern(i + (size_t)k);
            uint64_t u;
            memcpy(&u, &v, 8);
            for (int b = 0; b < 8; b++)
                buf[8 + used + ((size_t)k * count + i) * 8 + (size_t)b] =
                    (unsigned char)(u >> (8 * b));
        }
    file_write(path, buf, total);
    free(buf);
}

static void grad_files(const char *m, const char *b, double w, double x, double y)
{
    static const char *const wn[4] = {"wq", "wk", "wv", "wo"}, *const bn[2] = {"x", "y"};
    const double ws[4] = {w, w, w, w}, bs[2] = {x, y};
    write_f64(m, wn, 4, 2, (const int[]){4, 4}, ws, "\"n_heads\":\"2\",\"causal\":\"false\"");
    write_f64(b, bn, 2, 3, (const int[]){2, 3, 4}, bs, "");
}

/* A text for train --task text: a few hundred characters of a sentence. */
static void write_text(const char *path)
{
    char text[1024] = "";
    for (int k = 0; k < 12; k++)
        strcat(text, "the cat sat on the mat and looked at the hat. ");
    file_write(path, text, strlen(text));
}

/* A small GPT checkpoint for attend, of the text's characters. */
static void write_gpt(const char *path)
{
    char err[256];
    ag_vocab *v = ag_vocab_from_chars(" .acdehklmnorst", err, sizeof(err));
    ck_assert_msg(v != NULL, "%s", err);
    ag_gpt_config c = ag_gpt_defaults(ag_vocab_size(v));
    c.layers = 1, c.heads = 2, c.dim = 8, c.seq = 8;
    ag_rng rng = ag_rng_new(1);
    ag_gpt *g = ag_gpt_new(&c, &rng, err, sizeof(err));
    ck_assert_msg(g != NULL, "%s", err);
    ck_assert_int_eq(ag_gpt_save(g, v, path, err, sizeof(err)), AG_OK);
    ag_gpt_free(g);
    ag_vocab_free(v);
}

/* ---- 1. outputs that are not plain files ---- */

/* Each command that writes a file, with its output flag last: the output
 * is appended by the test. Files the commands read are made first. */
typedef struct writer {
    const char *what;
    const char *args[24];
} writer;

static const writer writers[] = {
    {"train --save", {"train", "--steps", "2", "--quiet", "--save"}},
    {"train --log", {"train", "--steps", "2", "--quiet", "--log"}},
    {"train --plot", {"train", "--steps", "2", "--quiet", "--plot"}},
    {"grad --out", {"grad", "--model", "@m", "--batch", "@b", "--out"}},
    {"explain attention --dot", {"explain", "attention", "--dot"}},
    {"gradcheck --sweep --plot", {"gradcheck", "--sweep", "--op", "scale", "--plot"}},
    {"train --plot-heads", {"train", "--steps", "2", "--quiet", "--plot-heads"}},
    {"explain posenc --plot", {"explain", "posenc", "--plot"}},
    {"train --task text --log",
     {"train", "--task", "text", "--text", "@t", "--steps", "1", "--layers", "1", "--dim", "8",
      "--heads", "2", "--seq", "8", "--quiet", "--log"}},
    {"train --task text --plot-heads",
     {"train", "--task", "text", "--text", "@t", "--steps", "1", "--layers", "1", "--dim", "8",
      "--heads", "2", "--seq", "8", "--quiet", "--plot-heads"}},
    {"attend --out", {"attend", "--load", "@g", "--prompt", "the cat", "--out"}},
    {"attend --png", {"attend", "--load", "@g", "--prompt", "the cat", "--png"}},
};
#define N_WRITERS ((int)(sizeof(writers) / sizeof(writers[0])))

/* The kinds of file an output may already be, and what must happen. */
enum {
    K_NULL,
    K_FULL,
    K_DIR,
    K_FIFO,
    K_SOCKET,
    K_BLOCK,
    K_LINK_FILE,
    K_LINK_NOWHERE,
    K_LINK_DIR,
    N_KINDS
};

static run_proc run_writer(scratch *s, const writer *w, const char *out)
{
    const char *args[28];
    int n = 0;
    for (int k = 0; w->args[k]; k++)
        args[n++] = strcmp(w->args[k], "@m") == 0   ? at(s, "m.st")
                    : strcmp(w->args[k], "@b") == 0 ? at(s, "b.st")
                    : strcmp(w->args[k], "@t") == 0 ? at(s, "t.txt")
                    : strcmp(w->args[k], "@g") == 0 ? at(s, "g.st")
                                                    : w->args[k];
    args[n++] = out;
    args[n] = NULL;
    return run_in(s, args);
}

START_TEST(test_output_kinds)
{
    const writer *w = &writers[_i % N_WRITERS];
    int kind = _i / N_WRITERS;
    scratch s;
    scratch_new(&s);
    fake_gnuplot_ok(&s);
    grad_files(at(&s, "m.st"), at(&s, "b.st"), 1, 1, 1);
    write_text(at(&s, "t.txt"));
    write_gpt(at(&s, "g.st"));
    const char *out = at(&s, "out");
    int want = 1;
    const char *msg = NULL;
    switch (kind) {
    case K_NULL:
    case K_FULL:
        if (!make_device(out, S_IFCHR, 1, kind == K_NULL ? 3 : 7)) {
            scratch_free(&s);
            return; /* not root: no mknod */
        }
        want = kind == K_NULL ? 0 : 1;
        msg = kind == K_NULL ? NULL : "No space left on device";
        break;
    case K_DIR:
        ck_assert_int_eq(mkdir(out, 0755), 0);
        msg = "out: is a directory";
        break;
    case K_FIFO:
        ck_assert_int_eq(mkfifo(out, 0644), 0);
        msg = "out: is a FIFO (a pipe): an output is a regular file";
        break;
    case K_SOCKET:
        make_socket(out);
        msg = "out: is a socket";
        break;
    case K_BLOCK:
        if (!make_device(out, S_IFBLK, 241, 0)) { /* a local/experimental major: no disk */
            scratch_free(&s);
            return;
        }
        msg = "out: is a block device";
        break;
    case K_LINK_FILE:
        file_write(at(&s, "target"), PREVIOUS, strlen(PREVIOUS));
        ck_assert_int_eq(symlink("target", out), 0);
        want = 0;
        break;
    case K_LINK_NOWHERE:
        ck_assert_int_eq(symlink("nothing-here", out), 0);
        msg = "out: is a symbolic link to a file that does not exist";
        break;
    case K_LINK_DIR:
        ck_assert_int_eq(mkdir(at(&s, "d"), 0755), 0);
        ck_assert_int_eq(symlink("d", out), 0);
        msg = "out: is a directory";
        break;
    }
    mode_t before = kind_of(out);
    run_proc p = run_writer(&s, w, out);
    ck_assert_msg(p.status == want && p.signal == 0,
                  "%s over kind %d: status %d (signal %d), want %d\n%s", w->what, kind, p.status,
                  p.signal, want, p.err);
    if (msg)
        ck_assert_msg(strstr(p.err, msg) != NULL, "%s over kind %d: '%s' not in:\n%s", w->what,
                      kind, msg, p.err);
    if (want != 0 && kind != K_FULL)
        ck_assert_ptr_null(strstr(p.out, "result:")); /* found before the work */
    /* never replaced: the same kind of file is still there */
    ck_assert_int_eq(kind_of(out), before);
    if (kind == K_LINK_FILE) {
        /* the link was followed: the file it leads to is the new output */
        char *text = file_read(at(&s, "target"), NULL);
        ck_assert_str_ne(text, PREVIOUS);
        free(text);
    }
    ck_assert_msg(!tmp_left(s.dir), "%s: a temporary file was left", w->what);
    run_free(&p);
    scratch_free(&s);
}
END_TEST

/* ---- 2. two names for one file ---- */

typedef struct same_case {
    const char *what;
    const char *args[16]; /* @x is dir/x */
    int status;
    const char *msg;
} same_case;

static const same_case same_cases[] = {
    {"--out ./m",
     {"grad", "--model", "@m.st", "--batch", "@b.st", "--out", "@./m.st"},
     2,
     "would overwrite the --model file"},
    {"--out sub/../m",
     {"grad", "--model", "@m.st", "--batch", "@b.st", "--out", "@sub/../m.st"},
     2,
     "would overwrite the --model file"},
    {"--out //b",
     {"grad", "--model", "@m.st", "--batch", "@b.st", "--out", "@/b.st"},
     2,
     "would overwrite the --batch file"},
    {"--out symlink to m",
     {"grad", "--model", "@m.st", "--batch", "@b.st", "--out", "@link-m"},
     2,
     "would overwrite the --model file"},
    {"--out hard link to b",
     {"grad", "--model", "@m.st", "--batch", "@b.st", "--out", "@hard-b"},
     2,
     "would overwrite the --batch file"},
    {"--log ./ck",
     {"train", "--load", "@ck.st", "--steps", "1", "--log", "@./ck.st"},
     2,
     "--log '"},
    {"--plot link to ck",
     {"train", "--load", "@ck.st", "--steps", "1", "--plot", "@link-ck"},
     2,
     "would overwrite the --load file"},
    {"--log and --save, new",
     {"train", "--steps", "1", "--log", "@new.x", "--save", "@sub/../new.x"},
     2,
     "are the same file"},
    {"--log and --plot, new",
     {"train", "--steps", "1", "--log", "@./p", "--plot", "@sub/../p"},
     2,
     "are the same file"},
    {"--plot-heads link to ck",
     {"train", "--load", "@ck.st", "--steps", "1", "--plot-heads", "@link-ck"},
     2,
     "would overwrite the --load file"},
    {"text --log ./t.txt",
     {"train", "--task", "text", "--text", "@t.txt", "--steps", "1", "--log", "@./t.txt"},
     2,
     "would overwrite the --text file"},
    {"text --save hard link to t.txt",
     {"train", "--task", "text", "--text", "@t.txt", "--steps", "1", "--save", "@hard-t"},
     2,
     "would overwrite the --text file"},
    /* allowed: resuming in place, through any name; a device twice */
    {"--save ./ck over --load",
     {"train", "--load", "@ck.st", "--steps", "1", "--quiet", "--save", "@./ck.st"},
     0,
     NULL},
    {"--save hard link over --load",
     {"train", "--load", "@ck.st", "--steps", "1", "--quiet", "--save", "@hard-ck"},
     0,
     NULL},
    {"/dev/null twice",
     {"train", "--steps", "1", "--quiet", "--log", "/dev/null", "--save", "/dev/null"},
     0,
     NULL},
};
#define N_SAME ((int)(sizeof(same_cases) / sizeof(same_cases[0])))

START_TEST(test_same_file)
{
    const same_case *c = &same_cases[_i];
    scratch s;
    scratch_new(&s);
    fake_gnuplot_ok(&s);
    ck_assert_int_eq(mkdir(at(&s, "sub"), 0755), 0);
    grad_files(at(&s, "m.st"), at(&s, "b.st"), 1, 1, 1);
    run_proc p = run_cmd("train", "--steps", "2", "--quiet", "--save", at(&s, "ck.st"), NULL);
    run_assert_status(&p, 0);
    run_free(&p);
    ck_assert_int_eq(symlink("m.st", at(&s, "link-m")), 0);
    ck_assert_int_eq(symlink("ck.st", at(&s, "link-ck")), 0);
    ck_assert_int_eq(link(at(&s, "b.st"), at(&s, "hard-b")), 0);
    ck_assert_int_eq(link(at(&s, "ck.st"), at(&s, "hard-ck")), 0);
    write_text(at(&s, "t.txt"));
    ck_assert_int_eq(link(at(&s, "t.txt"), at(&s, "hard-t")), 0);
    size_t mlen, cklen;
    char *m0 = file_read(at(&s, "m.st"), &mlen), *ck0 = file_read(at(&s, "ck.st"), &cklen);

    const char *args[20];
    int n = 0;
    for (int k = 0; c->args[k]; k++)
        args[n++] = c->args[k][0] == '@' ? at(&s, c->args[k] + 1) : c->args[k];
    args[n] = NULL;
    p = run_in(&s, args);
    ck_assert_msg(p.status == c->status && p.signal == 0, "%s: status %d, want %d\n%s", c->what,
                  p.status, c->status, p.err);
    if (c->msg) {
        ck_assert_msg(strstr(p.err, c->msg) != NULL, "%s: '%s' not in:\n%s", c->what, c->msg,
                      p.err);
        run_assert_has(p.err, "usage: attograd");
        ck_assert_uint_eq(p.out_len, 0);
        /* the inputs are untouched */
        size_t len = 0;
        char *m1 = file_read(at(&s, "m.st"), &len);
        ck_assert(len == mlen && memcmp(m0, m1, len) == 0);
        free(m1);
        char *ck1 = file_read(at(&s, "ck.st"), &len);
        ck_assert(len == cklen && memcmp(ck0, ck1, len) == 0);
        free(ck1);
        ck_assert_int_ne(access(at(&s, "new.x"), F_OK), 0);
    }
    ck_assert(!tmp_left(s.dir));
    free(m0);
    free(ck0);
    run_free(&p);
    scratch_free(&s);
}
END_TEST

/* An output that is where standard output goes (`--out g.st > g.st`). */
START_TEST(test_output_is_stdout)
{
    scratch s;
    scratch_new(&s);
    grad_files(at(&s, "m.st"), at(&s, "b.st"), 1, 1, 1);
    const char *names[2] = {at(&s, "g.st"), "/dev/stdout"};
    for (int k = 0; k < 2; k++) {
        const char *args[] = {"grad",         "--model", at(&s, "m.st"), "--batch",
                              at(&s, "b.st"), "--out",   names[k],       NULL};
        run_proc p = run_args(args, &(run_opts){.out_file = at(&s, "g.st")});
        run_assert_status(&p, 2);
        run_assert_has(p.err, "is the file standard output goes to");
        run_free(&p);
    }
    scratch_free(&s);
}
END_TEST

/* ---- 3. control characters in names and messages ---- */

static const char *const hostile_names[] = {
    "p\nsystem(\"touch PWNED\")\n.png",
    "q'\nsystem('touch PWNED')\n'.png",
    "\x1b]0;title\x07\x1b[2J.png",
    "csi\xc2\x9b"
    "31m.png",
    "bad\xff\xfe"
    "utf8.png",
};
#define N_HOSTILE ((int)(sizeof(hostile_names) / sizeof(hostile_names[0])))

/* No name reaches gnuplot: the script it reads holds none, and the picture
 * lands under the exact name asked for; stdout shows the name escaped. */
START_TEST(test_plot_name_not_in_script)
{
    scratch s;
    scratch_new(&s);
    fake_gnuplot_ok(&s);
    const char *png = at(&s, hostile_names[_i]);
    const char *args[] = {"train", "--steps", "3", "--plot", png, NULL};
    run_proc p = run_in(&s, args);
    run_assert_status(&p, 0);
    ck_assert_int_eq(kind_of(png), S_IFREG);
    char *script = file_read(at(&s, "script.txt"), NULL);
    ck_assert_ptr_nonnull(script);
    ck_assert_ptr_null(strstr(script, "PWNED"));
    ck_assert_ptr_null(strstr(script, s.dir));
    ck_assert_ptr_null(strstr(script, ".png"));
    assert_clean(script, strlen(script));
    free(script);
    run_assert_has(p.out, "plot: ");
    assert_clean(p.out, p.out_len);
    assert_clean(p.err, p.err_len);
    run_free(&p);
    scratch_free(&s);
}
END_TEST

/* The same with the real gnuplot, where it is installed: nothing runs. */
START_TEST(test_plot_name_real_gnuplot)
{
    if (access("/usr/bin/gnuplot", X_OK) != 0)
        return;
    scratch s;
    scratch_new(&s);
    char cwd[PATH_MAX], bin[PATH_MAX];
    snprintf(bin, sizeof(bin), "%s", run_bin());
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
    ck_assert_int_eq(chdir(s.dir), 0); /* where a `touch PWNED` would land */
    for (int k = 0; k < 2; k++) {
        const char *argv[] = {bin,       "train",  "--steps",        "3",
                              "--quiet", "--plot", hostile_names[k], NULL};
        run_proc p = run_exec(argv, &(run_opts){.path = s.path});
        run_assert_status(&p, 0);
        ck_assert_int_eq(kind_of(hostile_names[k]), S_IFREG);
        run_free(&p);
    }
    ck_assert_int_ne(access("PWNED", F_OK), 0);
    ck_assert_int_eq(chdir(cwd), 0);
    scratch_free(&s);
}
END_TEST

/* Messages that quote a name or a value escape control bytes and stay one
 * line; a long value is cut, and the reason after it still shows. */
START_TEST(test_messages_escaped)
{
    static char long_value[6000];
    memset(long_value, '7', sizeof(long_value) - 1);
    typedef struct {
        const char *args[8];
        int status;
        const char *fragment;
    } msg_case;
    static const msg_case cases[] = {
        {{"\x1b[31mred"}, 2, "unknown command '\\x1b[31mred'"},
        {{"\xc2\x9b"
          "2J"},
         2,
         "unknown command '\\xc2\\x9b2J'"},
        {{"train", "--save", "/nonexistent/\x1b[2Jx\ny"},
         1,
         "/nonexistent/\\x1b[2Jx\\ny: cannot write there"},
        {{"train", "--load", "/nonexistent/\x9b\x07"}, 1, "/nonexistent/\\x9b\\x07: cannot open"},
        {{"grad", "--model", "m\rx", "--batch", "b\x7f", "--out", "/nonexistent/o\tp"},
         1,
         "--out /nonexistent/o\\tp: cannot write there"},
        {{"train", "--task", "\x1b]0;t\x07"}, 2, "--task: unknown task '\\x1b]0;t\\x07'"},
        {{"explain", "\x1b[1m"}, 2, "unknown topic '\\x1b[1m'"},
        {{"train", "--lr", long_value}, 2, "is not a finite number"},
        {{"train", "--steps", long_value + 1000}, 2, "is out of range (1..100000000)"},
        {{"train", long_value}, 2, "(options start with --)"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const msg_case *c = &cases[k];
        run_proc p = run_args(c->args, NULL);
        ck_assert_msg(p.status == c->status, "case %zu: status %d\n%s", k, p.status, p.err);
        ck_assert_msg(strstr(p.err, c->fragment) != NULL, "case %zu: '%s' not in:\n%s", k,
                      c->fragment, p.err);
        assert_clean(p.err, p.err_len);
        /* the first line is the message, and a readable one */
        const char *nl = strchr(p.err, '\n');
        ck_assert_ptr_nonnull(nl);
        ck_assert_msg(nl - p.err < 1100, "case %zu: a %td-byte message", k, nl - p.err);
        if (c->status == 1)
            ck_assert_uint_eq(count_lines(p.err), 1);
        run_free(&p);
    }
}
END_TEST

/* A saved file's name with a newline: the command's own lines stay one line each. */
START_TEST(test_stdout_names_escaped)
{
    scratch s;
    scratch_new(&s);
    const char *ck = at(&s, "c\nk\x1b[0m.st");
    const char *args[] = {"train", "--steps", "2", "--save", ck, NULL};
    run_proc p = run_in(&s, args);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "saved: ");
    run_assert_has(p.out, "c\\nk\\x1b[0m.st (step 2)");
    assert_clean(p.out, p.out_len);
    ck_assert_int_eq(kind_of(ck), S_IFREG);
    run_free(&p);
    scratch_free(&s);
}
END_TEST

/* ---- 4. inputs that are not regular files ---- */

START_TEST(test_inputs_not_files)
{
    scratch s;
    scratch_new(&s);
    char m[700], b[700], out[700], fifo[700], sock[700], zero[700];
    snprintf(m, sizeof(m), "%s", at(&s, "m.st"));
    snprintf(b, sizeof(b), "%s", at(&s, "b.st"));
    snprintf(out, sizeof(out), "%s", at(&s, "out.st"));
    snprintf(fifo, sizeof(fifo), "%s", at(&s, "fifo"));
    snprintf(sock, sizeof(sock), "%s", at(&s, "sock"));
    snprintf(zero, sizeof(zero), "%s", at(&s, "zero-link"));
    grad_files(m, b, 1, 1, 1);
    ck_assert_int_eq(mkfifo(fifo, 0644), 0);
    make_socket(sock);
    ck_assert_int_eq(symlink("/dev/zero", zero), 0);
    typedef struct {
        const char *load;
        const char *fragment;
    } in_case;
    const in_case cases[] = {
        {"/dev/zero", "/dev/zero: is a character device, not a regular file"},
        {"/dev/urandom", "/dev/urandom: is a character device, not a regular file"},
        {"/dev/stdin", "is a character device, not a regular file"}, /* stdin is /dev/null */
        {fifo, "fifo: is a FIFO (a pipe), not a regular file"},
        {sock, "sock: is a socket, not a regular file"},
        {zero, "zero-link: is a character device, not a regular file"},
        {s.bin, "bin: is a directory"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        /* as a checkpoint, as a model, as a batch and as a text */
        for (int role = 0; role < 4; role++) {
            const char *args_train[] = {"train", "--load", cases[k].load, "--steps", "1", NULL};
            const char *args_text[] = {"train", "--task", "text", "--text", cases[k].load, NULL};
            const char *args_grad[] = {"grad",
                                       "--model",
                                       role == 1 ? cases[k].load : m,
                                       "--batch",
                                       role == 2 ? cases[k].load : b,
                                       "--out",
                                       out,
                                       NULL};
            run_proc p = run_in(&s, role == 0 ? args_train : role == 3 ? args_text : args_grad);
            ck_assert_msg(p.status == 1 && p.signal == 0, "%s as %d: status %d\n%s", cases[k].load,
                          role, p.status, p.err);
            run_assert_has(p.err, cases[k].fragment);
            ck_assert_uint_eq(count_lines(p.err), 1);
            ck_assert_uint_eq(p.out_len, 0);
            run_free(&p);
        }
    }
    ck_assert_int_ne(access(out, F_OK), 0);
    scratch_free(&s);
}
END_TEST

/* ---- 5. finite inputs, results that are not ---- */

typedef struct finite_case {
    const char *what;
    double w, x, y; /* scales of the weights, x and y in the files */
} finite_case;

#ifdef AG_REAL_DOUBLE
#define BIG_TARGET 1e200
#define BIG_WEIGHT 1e200
#define BIG_X 1e160
#else
#define BIG_TARGET 1e20
#define BIG_WEIGHT 3e38
#define BIG_X 1e20
#endif

static const finite_case finite_cases[] = {
    {"huge targets", 1, 1, BIG_TARGET},
    {"huge weights", BIG_WEIGHT, 1, 1},
    {"huge x", 1, BIG_X, 1},
    {"huge everything", BIG_WEIGHT, BIG_X, BIG_TARGET},
};
#define N_FINITE ((int)(sizeof(finite_cases) / sizeof(finite_cases[0])))

START_TEST(test_result_not_finite)
{
    const finite_case *c = &finite_cases[_i];
    scratch s;
    scratch_new(&s);
    grad_files(at(&s, "m.st"), at(&s, "b.st"), c->w, c->x, c->y);
    file_write(at(&s, "out.st"), PREVIOUS, strlen(PREVIOUS));
    run_proc p = run_cmd("grad", "--model", at(&s, "m.st"), "--batch", at(&s, "b.st"), "--out",
                         at(&s, "out.st"), NULL);
    ck_assert_msg(p.status == 1, "%s: status %d\n%s%s", c->what, p.status, p.out, p.err);
    run_assert_has(p.err, "attograd grad: the result is not finite: '");
    run_assert_has(p.err, "nothing was written");
    ck_assert_uint_eq(count_lines(p.err), 1);
    ck_assert_uint_eq(p.out_len, 0);
    char *kept = file_read(at(&s, "out.st"), NULL);
    ck_assert_str_eq(kept, PREVIOUS);
    free(kept);
    ck_assert(!tmp_left(s.dir));
    run_free(&p);
    scratch_free(&s);
}
END_TEST

/* Values that are not 0 in an F64 file but are in float: said, not hidden;
 * ordinary values: nothing said. */
START_TEST(test_tiny_values_said)
{
    scratch s;
    scratch_new(&s);
    for (int k = 0; k < 3; k++) {
        double x = k == 0 ? 1 : k == 1 ? 1e-50 : 1e-300;
        grad_files(at(&s, "m.st"), at(&s, "b.st"), 1, x, 1);
        run_proc p = run_cmd("grad", "--model", at(&s, "m.st"), "--batch", at(&s, "b.st"), "--out",
                             at(&s, "out.st"), NULL);
        run_assert_status(&p, 0);
#ifdef AG_REAL_DOUBLE
        ck_assert_uint_eq(p.err_len, 0);
#else
        if (k == 0)
            ck_assert_uint_eq(p.err_len, 0);
        else
            run_assert_has(p.err, "tensor 'x': 24 value(s) too small for float became 0 (the first "
                                  "at element 0)");
#endif
        run_free(&p);
    }
    scratch_free(&s);
}
END_TEST

/* ---- 6. outputs checked before the work ---- */

START_TEST(test_long_names)
{
    scratch s;
    scratch_new(&s);
    char name[300];
    /* 250 and 255 bytes are legal names: the temporary name beside them
     * must fit too; 256 is not legal, and says so before training */
    const int lens[3] = {250, 255, 256};
    for (int k = 0; k < 3; k++) {
        memset(name, 'n', (size_t)lens[k]);
        memcpy(name + lens[k] - 3, ".st", 3);
        name[lens[k]] = '\0';
        const char *args[] = {"train", "--steps",       "3", "--save", at(&s, name),
                              "--log", at(&s, "l.csv"), NULL};
        run_proc p = run_in(&s, args);
        if (lens[k] <= 255) {
            run_assert_status(&p, 0);
            run_free(&p);
            const char *again[] = {"train",   "--load", at(&s, name), "--steps", "1",
                                   "--quiet", "--save", at(&s, name), NULL};
            p = run_in(&s, again);
            run_assert_status(&p, 0);
            run_assert_has(p.out, "steps=4");
            ck_assert_int_eq(remove(at(&s, name)), 0);
        } else {
            run_assert_status(&p, 1);
            run_assert_has(p.err, "File name too long");
            ck_assert_uint_eq(p.out_len, 0);
        }
        run_free(&p);
        ck_assert(!tmp_left(s.dir));
    }
    scratch_free(&s);
}
END_TEST

START_TEST(test_checked_before_work)
{
    scratch s;
    scratch_new(&s);
    fake_gnuplot_ok(&s);
    file_write(at(&s, "file"), "x", 1);
    grad_files(at(&s, "m.st"), at(&s, "b.st"), 1, 1, 1);
    typedef struct {
        const char *args[12];
        const char *fragment;
    } early_case;
    const early_case cases[] = {
        {{"gradcheck", "--sweep", "--plot", "/nonexistent/x.png"},
         "--plot /nonexistent/x.png: cannot write there"},
        {{"gradcheck", "--sweep", "--plot", at(&s, "file/x.png")}, "Not a directory"},
        {{"train", "--steps", "100000", "--plot", at(&s, "file/p.png")}, "Not a directory"},
        {{"train", "--steps", "100000", "--log", at(&s, "no/dir/l.csv")},
         "No such file or directory"},
        {{"train", "--steps", "100000", "--save", at(&s, "newdir/")}, "is a directory"},
        {{"grad", "--model", at(&s, "m.st"), "--batch", at(&s, "b.st"), "--out",
          at(&s, "none/g.st")},
         "cannot write there"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        run_proc p = run_in(&s, cases[k].args);
        ck_assert_msg(p.status == 1, "case %zu: status %d\n%s", k, p.status, p.err);
        run_assert_has(p.err, cases[k].fragment);
        ck_assert_msg(p.out_len == 0, "case %zu: work was done first:\n%s", k, p.out);
        run_free(&p);
    }
    /* without root, a directory without write permission too */
    if (geteuid() != 0) {
        ck_assert_int_eq(mkdir(at(&s, "ro"), 0555), 0);
        const char *args[] = {"train", "--steps", "100000", "--save", at(&s, "ro/c.st"), NULL};
        run_proc p = run_in(&s, args);
        run_assert_status(&p, 1);
        run_assert_has(p.err, "Permission denied");
        run_free(&p);
        chmod(at(&s, "ro"), 0755);
    }
    scratch_free(&s);
}
END_TEST

/* ---- 7. plots that were not made ---- */

typedef struct bad_gnuplot {
    const char *what;
    const char *body;     /* the fake gnuplot */
    const char *fragment; /* in the message */
} bad_gnuplot;

static const bad_gnuplot bad_gnuplots[] = {
    {"exits 0, writes nothing", "cat > /dev/null; exit 0", "gnuplot wrote nothing"},
    {"writes text", "cat > /dev/null; echo hello", "gnuplot's output is not a PNG image"},
    {"writes half a PNG", "cat > /dev/null; printf '\\211PNG\\r\\n\\032\\nxxxxxxxxxxxxxxxx'",
     "gnuplot's PNG is cut short"},
    {"fails", "cat > /dev/null; echo 'line 0: unknown or ambiguous terminal type' >&2; exit 1",
     "gnuplot failed to draw"},
    {"fails with ESC on stderr", "cat > /dev/null; printf '\\033[2Jboom\\n' >&2; exit 3",
     "(exit status 3): \\x1b[2Jboom"},
    {"killed", "kill -9 $$", "gnuplot was killed by signal 9"},
    {"not executable as a program", "exit 127", "cannot start gnuplot"},
};
#define N_BAD_GNUPLOT ((int)(sizeof(bad_gnuplots) / sizeof(bad_gnuplots[0])))

START_TEST(test_plot_not_made)
{
    const bad_gnuplot *b = &bad_gnuplots[_i];
    scratch s;
    scratch_new(&s);
    fake_program(&s, "gnuplot", b->body);
    const char *png = at(&s, "p.png"), *log = at(&s, "l.csv"), *ck = at(&s, "c.st");
    const char *args[] = {"train", "--steps", "5", "--plot", png, "--log", log, "--save", ck, NULL};
    run_proc p = run_in(&s, args);
    ck_assert_msg(p.status == 1, "%s: status %d\n%s", b->what, p.status, p.err);
    run_assert_has(p.err, b->fragment);
    run_assert_has(p.err, "no plot");
    assert_clean(p.err, p.err_len);
    ck_assert_ptr_null(strstr(p.out, "plot: "));
    /* the rest of the run's results are kept */
    run_assert_has(p.out, "saved: ");
    run_assert_has(p.out, "result: task=lookup steps=5");
    ck_assert_int_eq(access(log, F_OK), 0);
    ck_assert_int_eq(access(ck, F_OK), 0);
    ck_assert_int_ne(access(png, F_OK), 0);
    ck_assert(!tmp_left(s.dir));
    run_free(&p);

    /* gradcheck's sweep, the same */
    const char *sweep[] = {"gradcheck", "--sweep", "--op", "scale", "--plot", png, NULL};
    p = run_in(&s, sweep);
    ck_assert_msg(p.status == 1, "%s: gradcheck status %d\n%s", b->what, p.status, p.err);
    run_assert_has(p.err, b->fragment);
    ck_assert_int_ne(access(png, F_OK), 0);
    run_free(&p);
    scratch_free(&s);
}
END_TEST

/* A good picture to a full device: not made, said, exit 1. */
START_TEST(test_plot_to_full_device)
{
    scratch s;
    scratch_new(&s);
    fake_gnuplot_ok(&s);
    if (!make_device(at(&s, "full"), S_IFCHR, 1, 7)) {
        scratch_free(&s);
        return;
    }
    const char *args[] = {"train", "--steps", "3", "--quiet", "--plot", at(&s, "full"), NULL};
    run_proc p = run_in(&s, args);
    run_assert_status(&p, 1);
    run_assert_has(p.err, "No space left on device");
    ck_assert_int_eq(kind_of(at(&s, "full")), S_IFCHR);
    run_free(&p);
    scratch_free(&s);
}
END_TEST

/* ---- 8. interrupts around gnuplot, and stale temporary files ---- */

/* A gnuplot that says it runs (its pid in dir/gp.pid), then hangs. */
static void fake_gnuplot_hangs(const scratch *s)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "echo $$ > '%s/gp.tmp' && mv '%s/gp.tmp' '%s/gp.pid'\nexec sleep 600", s->dir, s->dir,
             s->dir);
    fake_program(s, "gnuplot", body);
}

/* Start args, wait for the fake gnuplot to run, send sig; returns the
 * finished child and gnuplot's pid in *gp. */
static run_proc interrupt_gnuplot(scratch *s, const char *const *args, int sig, pid_t *gp)
{
    run_proc p = run_start_args(args, &(run_opts){.path = s->path});
    const char *marker = at(s, "gp.pid");
    char *pid = NULL;
    for (int polls = 0; !(pid = file_read(marker, NULL)); polls++) {
        run_pump(&p, 100); /* a safety net only: never a measurement */
        if (polls > 1200) {
            kill(p.pid, SIGKILL);
            run_wait(&p);
            ck_abort_msg("gnuplot never ran:\n%s%s", p.out, p.err);
        }
    }
    *gp = (pid_t)atol(pid);
    free(pid);
    ck_assert_int_gt(*gp, 0);
    ck_assert_int_eq(kill(p.pid, sig), 0);
    run_wait(&p);
    return p;
}

START_TEST(test_signal_during_gnuplot)
{
    static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    int sig = sigs[_i];
    scratch s;
    scratch_new(&s);
    fake_gnuplot_hangs(&s);
    const char *png = at(&s, "p.png"), *log = at(&s, "l.csv"), *ck = at(&s, "c.st");
    const char *args[] = {"train", "--steps", "4", "--plot", png, "--log", log, "--save", ck, NULL};
    pid_t gp;
    run_proc p = interrupt_gnuplot(&s, args, sig, &gp);
    run_assert_status(&p, 128 + sig);
    run_assert_has(p.err, "interrupted while gnuplot was drawing");
    run_assert_has(p.out, "result: task=lookup steps=4");
    ck_assert_int_eq(access(log, F_OK), 0);
    ck_assert_int_eq(access(ck, F_OK), 0);
    ck_assert_int_ne(access(png, F_OK), 0);
    ck_assert(!tmp_left(s.dir));
    /* gnuplot was stopped and reaped, not left behind */
    ck_assert_int_eq(kill(gp, 0), -1);
    ck_assert_int_eq(errno, ESRCH);
    run_free(&p);
    scratch_free(&s);
}
END_TEST

START_TEST(test_ctrl_c_gradcheck_plot)
{
    scratch s;
    scratch_new(&s);
    fake_gnuplot_hangs(&s);
    const char *png = at(&s, "s.png");
    const char *args[] = {"gradcheck", "--sweep", "--op", "scale", "--plot", png, NULL};
    pid_t gp;
    run_proc p = interrupt_gnuplot(&s, args, SIGINT, &gp);
    run_assert_status(&p, 130);
    run_assert_has(p.out, "Step-size sweep");
    run_assert_has(p.err, "interrupted while gnuplot was drawing");
    ck_assert_int_ne(access(png, F_OK), 0);
    ck_assert_int_eq(kill(gp, 0), -1);
    run_free(&p);
    scratch_free(&s);
}
END_TEST

/* A gnuplot that never ends is stopped after AG_GNUPLOT_SECONDS. */
START_TEST(test_gnuplot_hangs)
{
    scratch s;
    scratch_new(&s);
    fake_gnuplot_hangs(&s);
    setenv("AG_GNUPLOT_SECONDS", "1", 1);
    const char *png = at(&s, "p.png");
    const char *args[] = {"train", "--steps", "2", "--quiet", "--plot", png, NULL};
    run_proc p = run_in(&s, args);
    unsetenv("AG_GNUPLOT_SECONDS");
    run_assert_status(&p, 1);
    run_assert_has(p.err, "gnuplot did not finish drawing");
    run_assert_has(p.err, "within 1 s (AG_GNUPLOT_SECONDS)");
    run_assert_has(p.out, "result:");
    ck_assert_int_ne(access(png, F_OK), 0);
    char *pid = file_read(at(&s, "gp.pid"), NULL);
    ck_assert_ptr_nonnull(pid);
    ck_assert_int_eq(kill((pid_t)atol(pid), 0), -1);
    free(pid);
    run_free(&p);
    scratch_free(&s);
}
END_TEST

/* The pid of a process that has ended (and been reaped). */
static long dead_pid(void)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(0);
    ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
    return (long)pid;
}

/* A save killed with SIGKILL leaves NAME.tmp-PID-XXXXXXXX behind; the next
 * write of NAME removes it, and nothing that is not such a leftover. */
START_TEST(test_stale_temporaries)
{
    scratch s;
    scratch_new(&s);
    long dead = dead_pid(), alive = (long)getpid();
    char names[6][128];
    snprintf(names[0], 128, "c.st.tmp-%ld-0123abcd", dead);     /* stale: removed */
    snprintf(names[1], 128, "l.csv.tmp-%ld-89abcdef", dead);    /* stale: removed */
    snprintf(names[2], 128, "c.st.tmp-%ld-0123abcd", alive);    /* its writer still runs */
    snprintf(names[3], 128, "other.st.tmp-%ld-0123abcd", dead); /* another target's */
    snprintf(names[4], 128, "c.st.tmp-%ld-0123abcZ", dead);     /* not the pattern */
    snprintf(names[5], 128, "c.st.tmp-%ld-0123abcd.bak", dead); /* not the pattern */
    for (int k = 0; k < 6; k++)
        file_write(at(&s, names[k]), "x", 1);
    ck_assert_int_eq(mkdir(at(&s, "d.st.tmp-1-00000000"), 0755), 0); /* not a file */
    const char *args[] = {"train", "--steps",       "2", "--quiet", "--save", at(&s, "c.st"),
                          "--log", at(&s, "l.csv"), NULL};
    run_proc p = run_in(&s, args);
    run_assert_status(&p, 0);
    run_free(&p);
    ck_assert_int_ne(access(at(&s, names[0]), F_OK), 0);
    ck_assert_int_ne(access(at(&s, names[1]), F_OK), 0);
    for (int k = 2; k < 6; k++)
        ck_assert_msg(access(at(&s, names[k]), F_OK) == 0, "%s was removed", names[k]);
    ck_assert_int_eq(access(at(&s, "d.st.tmp-1-00000000"), F_OK), 0);
    scratch_free(&s);
}
END_TEST

/* A run killed with SIGKILL in the middle of writing a checkpoint: the
 * next run that saves the same file leaves no temporary file. Which part
 * of the save the kill lands in varies; every outcome must heal. */
START_TEST(test_sigkill_during_save_heals)
{
    scratch s;
    scratch_new(&s);
    const char *ck = at(&s, "c.st");
    /* a model with a big enough checkpoint that the save takes a while */
    const char *args[] = {"train", "--steps", "1", "--dim",  "512", "--seq",
                          "2",     "--batch", "1", "--save", ck,    NULL};
    run_proc p = run_start_args(args, &(run_opts){.path = s.path});
    /* kill it once its temporary file exists (or it has finished) */
    for (int polls = 0; polls < 20000 && !tmp_left(s.dir) && access(ck, F_OK) != 0; polls++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    kill(p.pid, SIGKILL);
    run_wait(&p);
    run_free(&p);
    const char *again[] = {"train", "--steps", "1", "--dim", "8", "--quiet", "--save", ck, NULL};
    p = run_in(&s, again);
    run_assert_status(&p, 0);
    ck_assert(!tmp_left(s.dir));
    run_free(&p);
    scratch_free(&s);
}
END_TEST

/* ---- 9. numbers at the edges ---- */

/* explain softmax at huge logits: the step grows with them; where even
 * that cannot work, every DISAGREE says why on stderr. */
START_TEST(test_explain_huge_logits)
{
    static const char *const agree[] = {"1e6,1e6", "1e6,-1e6,3", "-1e7,-1e7", "5e7,5e7,5e7",
                                        "1e10,1e10"};
    for (size_t k = 0; k < sizeof(agree) / sizeof(agree[0]); k++) {
        run_proc p = run_cmd("explain", "softmax", "--logits", agree[k], NULL);
        ck_assert_msg(p.status == 0, "%s: status %d\n%s%s", agree[k], p.status, p.out, p.err);
        ck_assert_ptr_null(strstr(p.out, "DISAGREE"));
        ck_assert_uint_eq(p.err_len, 0);
        run_free(&p);
    }
    static const char *const undecided[] = {"1e12,1e12", "1e15,-1e15,1e15", "1e300,1e300"};
    for (size_t k = 0; k < sizeof(undecided) / sizeof(undecided[0]); k++) {
        run_proc p = run_cmd("explain", "softmax", "--logits", undecided[k], NULL);
        run_assert_status(&p, 1);
        size_t disagree = 0;
        for (const char *c = p.out; (c = strstr(c, "DISAGREE")); c++)
            disagree++;
        ck_assert_uint_gt(disagree, 0);
        ck_assert_uint_eq(count_lines(p.err), disagree); /* one reason per disagreement */
        run_assert_has(p.err, "the check cannot decide");
        run_free(&p);
    }
}
END_TEST

/* A flag documented as decimal takes no hexadecimal float. */
START_TEST(test_hex_floats)
{
    static const char *const lines[][8] = {
        {"train", "--lr", "0x10"},
        {"train", "--momentum", "0x0.8"},
        {"train", "--clip", "0X1P3"},
        {"train", "--weight-decay", "-0x1p-4"},
        {"gradcheck", "--eps", "0x1p-10"},
        {"explain", "softmax", "--logits", "0x1,2"},
        {"explain", "softmax", "--logits", "1,2", "--upstream", "1,0x0"},
        {"explain", "attention", "--lr", "0x1"},
    };
    for (size_t k = 0; k < sizeof(lines) / sizeof(lines[0]); k++) {
        run_proc p = run_args(lines[k], NULL);
        ck_assert_msg(p.status == 2, "%s %s: status %d", lines[k][0], lines[k][1], p.status);
        run_assert_has(p.err, "is not a number");
        run_free(&p);
    }
    /* decimal with an exponent still is one, and the run takes its value */
    scratch s;
    scratch_new(&s);
    const char *ck = at(&s, "c.st");
    run_proc p = run_cmd("train", "--steps", "1", "--quiet", "--lr", "1E-3", "--clip", "5e0",
                         "--save", ck, NULL);
    run_assert_status(&p, 0);
    run_free(&p);
    ag_train_state st;
    test_checkpoint_state(ck, &st);
    ck_assert_double_eq(st.config.lr, 1e-3);
    ck_assert_double_eq(st.config.clip, 5);
    scratch_free(&s);
}
END_TEST

/* A hex float in a checkpoint's metadata is refused like one on the command line. */
START_TEST(test_hex_in_checkpoint)
{
    scratch s;
    scratch_new(&s);
    run_proc p = run_cmd("train", "--steps", "2", "--quiet", "--save", at(&s, "good.st"), NULL);
    run_assert_status(&p, 0);
    run_free(&p);
    st_edit e = {.key = "lr", .value = "0x1p-8"};
    st_rewrite(at(&s, "good.st"), at(&s, "c.st"), &e);
    p = run_cmd("train", "--load", at(&s, "c.st"), "--steps", "1", NULL);
    run_assert_status(&p, 1);
    run_assert_has(p.err, "metadata lr '0x1p-8' is not a number");
    run_free(&p);
    scratch_free(&s);
}
END_TEST

START_TEST(test_top_level_extra_arguments)
{
    static const char *const lines[][3] = {
        {"--version", "extra"}, {"version", "--help"},     {"--help", "extra"},
        {"help", "bogus"},      {"help", "train", "more"},
    };
    for (size_t k = 0; k < sizeof(lines) / sizeof(lines[0]); k++) {
        run_proc p = run_cmd(lines[k][0], lines[k][1], lines[k][2], NULL);
        ck_assert_msg(p.status == 2, "%s %s: status %d", lines[k][0], lines[k][1], p.status);
        run_assert_has(p.err, lines[k][1]);
        run_assert_has(p.err, "usage: attograd");
        ck_assert_uint_eq(p.out_len, 0);
        run_free(&p);
    }
    run_proc p = run_cmd("help", "grad", NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "usage: attograd grad --model");
    run_free(&p);
    p = run_cmd("--version", NULL);
    run_assert_status(&p, 0);
    run_free(&p);
}
END_TEST

/* A checkpoint whose counts are near the limit: a run that would take one
 * past it is refused before any work; one that stays within it saves a
 * file that loads again. */
START_TEST(test_counts_at_the_limit)
{
    scratch s;
    scratch_new(&s);
    run_proc p = run_cmd("train", "--steps", "2", "--quiet", "--dim", "8", "--save",
                         at(&s, "good.st"), NULL);
    run_assert_status(&p, 0);
    run_free(&p);
    const char *keys[2] = {"optim_steps", "step"};
    for (int k = 0; k < 2; k++) {
        st_edit e = {.key = keys[k], .value = "1999999998"}; /* AG_CLI_MAX_STEP - 2 */
        st_rewrite(at(&s, "good.st"), at(&s, "c.st"), &e);
        p = run_cmd("train", "--load", at(&s, "c.st"), "--steps", "3", "--save", at(&s, "c.st"),
                    NULL);
        run_assert_status(&p, 2);
        run_assert_has(p.err, "--steps 3: ");
        run_assert_has(p.err, "1999999998, and a run stops at 2000000000");
        run_free(&p);
        p = run_cmd("train", "--load", at(&s, "c.st"), "--steps", "2", "--quiet", "--save",
                    at(&s, "c.st"), NULL);
        run_assert_status(&p, 0);
        run_free(&p);
        /* it loads: the next refusal is about the steps, not the file */
        p = run_cmd("train", "--load", at(&s, "c.st"), "--steps", "1", NULL);
        run_assert_status(&p, 2);
        run_assert_has(p.err, "2000000000, and a run stops at 2000000000");
        run_free(&p);
    }
    scratch_free(&s);
}
END_TEST

Suite *suite_robust(void)
{
    Suite *s = suite_create("robust");
    TCase *tc = tcase_create("outputs");
    tcase_set_timeout(tc, 300); /* sanitizer builds are slow; a FIFO that blocks hangs here */
    tcase_add_loop_test(tc, test_output_kinds, 0, N_WRITERS * N_KINDS);
    suite_add_tcase(s, tc);
    tc = tcase_create("same");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_same_file, 0, N_SAME);
    tcase_add_test(tc, test_output_is_stdout);
    suite_add_tcase(s, tc);
    tc = tcase_create("names");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_plot_name_not_in_script, 0, N_HOSTILE);
    tcase_add_test(tc, test_plot_name_real_gnuplot);
    tcase_add_test(tc, test_messages_escaped);
    tcase_add_test(tc, test_stdout_names_escaped);
    suite_add_tcase(s, tc);
    tc = tcase_create("inputs");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_inputs_not_files);
    suite_add_tcase(s, tc);
    tc = tcase_create("finite");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_result_not_finite, 0, N_FINITE);
    tcase_add_test(tc, test_tiny_values_said);
    suite_add_tcase(s, tc);
    tc = tcase_create("early");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_long_names);
    tcase_add_test(tc, test_checked_before_work);
    suite_add_tcase(s, tc);
    tc = tcase_create("plots");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_plot_not_made, 0, N_BAD_GNUPLOT);
    tcase_add_test(tc, test_plot_to_full_device);
    suite_add_tcase(s, tc);
    tc = tcase_create("signals");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_signal_during_gnuplot, 0, 3);
    tcase_add_test(tc, test_ctrl_c_gradcheck_plot);
    tcase_add_test(tc, test_gnuplot_hangs);
    tcase_add_test(tc, test_stale_temporaries);
    tcase_add_test(tc, test_sigkill_during_save_heals);
    suite_add_tcase(s, tc);
    tc = tcase_create("edges");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_explain_huge_logits);
    tcase_add_test(tc, test_hex_floats);
    tcase_add_test(tc, test_hex_in_checkpoint);
    tcase_add_test(tc, test_top_level_extra_arguments);
    tcase_add_test(tc, test_counts_at_the_limit);
    suite_add_tcase(s, tc);
    return s;
}
