/*
 * fuzz_paths.c - libFuzzer target for the handling of file names (the file
 * layer's src/io/files.c and the command's src/cli/outfile.c). Each input
 * is an operation byte and two path strings (separated by NUL bytes), used
 * relative to a scratch tree that holds every kind of file: a regular file,
 * a hard link to it, an empty file, a directory, a FIFO, a socket, a
 * character device (a /dev/null made with mknod, when root), and symbolic
 * links to each, to nothing and to themselves. For each path it checks:
 *
 *   - ag_io_show and ag_quote: within the buffer, valid UTF-8, no
 *     control byte (C0, DEL, C1), whatever the bytes and the buffer size;
 *   - ag_io_output_kind agrees with what lstat and stat say the name is;
 *   - ag_atomic_open + write + commit (or abort): a directory, FIFO,
 *     socket, block device or dangling link is refused; a device stays a
 *     device; a file or new name then holds exactly what was written; the
 *     temporary name fits the directory's name limit; no temporary file
 *     is ever left behind, and no fixture changes kind;
 *   - ag_io_read_file: succeeds exactly for regular files within its limit,
 *     reads their bytes, and never waits (a FIFO) or reads without end;
 *   - ag_cli_check_files on the two names: it calls them one file exactly
 *     when they are (an independent oracle: create one, see if the other
 *     appears with the same inode), a device named twice being allowed.
 *
 * Nothing is done to a path whose directory resolves outside the scratch
 * tree (or that is absolute): the fuzzer cannot reach other files. Build and
 * run with `make fuzz-run-paths` (docs/fuzzing.md); usage messages go to
 * stderr, which the run closes (-close_fd_mask=2).
 */
#define _XOPEN_SOURCE 700 /* realpath, mknod */
#include "cli/cli.h"
#include "io/io.h"

#include <dirent.h>
#include <ftw.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/sysmacros.h>
#endif

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stdout, "fuzz_paths: %s:%d: %s\n", __FILE__, __LINE__, #cond);                 \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* ---- the scratch tree: ROOT/a/b is the working directory ---- */

static char root[PATH_MAX]; /* its real path */
static char work[PATH_MAX]; /* ROOT/a/b */
static int home = -1;       /* the directory libFuzzer runs in (its corpus paths are relative) */
static const char *const dirs[4] = {"../..", "..", ".", "d"}; /* where files may appear */

enum { F_REG, F_DIR, F_FIFO, F_SOCK, F_CHR, F_LNK, F_HARD };

typedef struct fixture {
    const char *name;
    int kind;
    const char *arg; /* a link's target, a regular file's content, a hard link's file */
} fixture;

static const fixture fixtures[] = {
    {"f", F_REG, "F"},   {"e", F_REG, ""},         {"d", F_DIR, NULL},  {"d/g", F_REG, "G"},
    {"p", F_FIFO, NULL}, {"s", F_SOCK, NULL},      {"c", F_CHR, NULL},  {"h", F_HARD, "f"},
    {"lf", F_LNK, "f"},  {"ld", F_LNK, "d"},       {"lp", F_LNK, "p"},  {"ls", F_LNK, "s"},
    {"lc", F_LNK, "c"},  {"ln", F_LNK, "nowhere"}, {"ll", F_LNK, "ll"}, {"lg", F_LNK, "d/g"},
};
#define N_FIXTURES (sizeof(fixtures) / sizeof(fixtures[0]))
static int have_device; /* mknod worked (root) */

static mode_t lkind(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0 ? sb.st_mode & S_IFMT : 0;
}

static mode_t want_kind(const fixture *x)
{
    static const mode_t k[] = {S_IFREG, S_IFDIR, S_IFIFO, S_IFSOCK, S_IFCHR, S_IFLNK, S_IFREG};
    return k[x->kind];
}

static void write_all(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
}

static void make_fixture(const fixture *x)
{
    switch (x->kind) {
    case F_REG: write_all(x->name, x->arg); break;
    case F_DIR: CHECK(mkdir(x->name, 0755) == 0); break;
    case F_FIFO: CHECK(mkfifo(x->name, 0644) == 0); break;
    case F_SOCK: {
        struct sockaddr_un a;
        memset(&a, 0, sizeof(a));
        a.sun_family = AF_UNIX;
        strcpy(a.sun_path, x->name);
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
        close(fd);
        break;
    }
    case F_CHR:
#ifdef __linux__
        have_device = mknod(x->name, S_IFCHR | 0666, makedev(1, 3)) == 0;
#endif
        break;
    case F_LNK: CHECK(symlink(x->arg, x->name) == 0); break;
    case F_HARD: CHECK(link(x->arg, x->name) == 0); break;
    }
}

static const fixture *find_fixture(const char *path)
{
    for (size_t i = 0; i < N_FIXTURES; i++)
        if (strcmp(fixtures[i].name, path) == 0)
            return &fixtures[i];
    return NULL;
}

static int is_tree_dir(const char *dir, const char *name)
{
    return (strcmp(dir, "../..") == 0 && strcmp(name, "a") == 0) ||
           (strcmp(dir, "..") == 0 && strcmp(name, "b") == 0);
}

static const char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* No temporary file anywhere (but a file the input itself named a and b,
 * which may look like one); then everything not a fixture removed, and
 * every fixture as it was made. */
static void check_and_reset(const char *a, const char *b)
{
    for (int k = 0; k < 4; k++) {
        DIR *d = opendir(dirs[k]);
        if (!d)
            continue;
        struct dirent *e;
        char path[PATH_MAX];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            /* nothing left behind, ever */
            CHECK(!ag_io_is_tmp_name(e->d_name) || strcmp(e->d_name, base_of(a)) == 0 ||
                  strcmp(e->d_name, base_of(b)) == 0);
            snprintf(path, sizeof(path), "%s%s%s", strcmp(dirs[k], ".") == 0 ? "" : dirs[k],
                     strcmp(dirs[k], ".") == 0 ? "" : "/", e->d_name);
            if (!is_tree_dir(dirs[k], e->d_name) && !find_fixture(path))
                CHECK(unlink(path) == 0);
        }
        closedir(d);
    }
    struct stat f, h;
    for (size_t i = 0; i < N_FIXTURES; i++) {
        const fixture *x = &fixtures[i];
        if (x->kind == F_CHR && !have_device)
            continue;
        mode_t k = lkind(x->name);
        /* the kinds that are never replaced are still what they were */
        if (x->kind == F_DIR || x->kind == F_FIFO || x->kind == F_SOCK || x->kind == F_CHR)
            CHECK(k == want_kind(x));
        int ok = k == want_kind(x);
        if (ok && x->kind == F_LNK) {
            char t[64];
            ssize_t n = readlink(x->name, t, sizeof(t) - 1);
            ok = n == (ssize_t)strlen(x->arg) && memcmp(t, x->arg, (size_t)n) == 0;
            CHECK(ok); /* a link is followed, never replaced */
        }
        if (ok && x->kind == F_REG) {
            char t[8] = "";
            int fd = open(x->name, O_RDONLY);
            ssize_t n = fd >= 0 ? read(fd, t, sizeof(t) - 1) : -1;
            if (fd >= 0)
                close(fd);
            ok = n == (ssize_t)strlen(x->arg) && memcmp(t, x->arg, (size_t)n) == 0;
        }
        if (ok && x->kind == F_HARD)
            ok = stat("f", &f) == 0 && stat("h", &h) == 0 && f.st_ino == h.st_ino;
        if (!ok) {
            if (k)
                CHECK(unlink(x->name) == 0);
            make_fixture(x);
        }
    }
}

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* At a normal exit the tree goes; after a crash it stays, to be looked at. */
static void remove_tree(void)
{
    if (home >= 0 && fchdir(home) == 0)
        nftw(root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void setup(void)
{
    /* tmpfs where there is one: a commit's fsync costs nothing there, and
     * the target runs thousands of them a second */
    char tmpl[64];
    snprintf(tmpl, sizeof(tmpl), "%s/attograd-fuzz-paths-XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    CHECK(mkdtemp(tmpl) != NULL);
    CHECK(realpath(tmpl, root) != NULL);
    home = open(".", O_RDONLY | O_DIRECTORY);
    CHECK(home >= 0);
    CHECK(chdir(root) == 0 && mkdir("a", 0755) == 0 && chdir("a") == 0 && mkdir("b", 0755) == 0 &&
          chdir("b") == 0);
    snprintf(work, sizeof(work), "%s/a/b", root);
    for (size_t i = 0; i < N_FIXTURES; i++)
        if (fixtures[i].kind == F_DIR)
            make_fixture(&fixtures[i]);
    for (size_t i = 0; i < N_FIXTURES; i++)
        if (fixtures[i].kind != F_DIR)
            make_fixture(&fixtures[i]);
    atexit(remove_tree);
}

/* Whether what may be done to path stays in the tree: a relative name
 * whose directory, if it exists, resolves inside root. (The fixtures'
 * links all lead inside.) */
static int inside(const char *path)
{
    if (!*path || path[0] == '/')
        return 0;
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX];
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else if ((size_t)(slash - path) < sizeof(dir))
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    else
        return 0;
    if (!*dir)
        return 0;
    char *real = realpath(dir, NULL);
    if (!real)
        return errno == ENOENT || errno == ENOTDIR; /* no such directory: nothing can be made */
    size_t n = strlen(root);
    int ok = strncmp(real, root, n) == 0 && (real[n] == '/' || real[n] == '\0');
    free(real);
    return ok;
}

/* ---- the checks ---- */

static void check_shown(const char *s)
{
    static const size_t lens[] = {1, 2, 9, 49, 64, 200, AG_IO_SHOW_LEN};
    char buf[AG_IO_SHOW_LEN];
    for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
        const char *out = k == 5 ? ag_quote(s, buf, lens[k]) : ag_io_show(s, buf, lens[k]);
        size_t n = strlen(out);
        CHECK(n < lens[k]);
        CHECK(ag_utf8_valid((const unsigned char *)out, n));
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)out[i];
            CHECK(c >= 0x20 && c != 0x7f);
            CHECK(!(c == 0xc2 && (unsigned char)out[i + 1] >= 0x80 &&
                    (unsigned char)out[i + 1] <= 0x9f));
        }
    }
}

static void check_kind(const char *path)
{
    ag_out_kind kind;
    char err[AG_CLI_ERR_LEN];
    struct stat sb, lb;
    int st = stat(path, &sb), e = errno, lt = lstat(path, &lb);
    ag_status r = ag_io_output_kind(path, &kind, err, sizeof(err));
    if (st == 0 && (S_ISDIR(sb.st_mode) || S_ISFIFO(sb.st_mode) || S_ISSOCK(sb.st_mode) ||
                    S_ISBLK(sb.st_mode)))
        CHECK(r != AG_OK);
    if (st != 0 && lt == 0)
        CHECK(r != AG_OK); /* a link to nothing */
    if (r == AG_OK) {
        CHECK(st == 0 || (e == ENOENT && lt != 0)); /* new: nothing there, not even a link */
        CHECK(kind == (st != 0 ? AG_OUT_NEW : S_ISREG(sb.st_mode) ? AG_OUT_FILE : AG_OUT_DEVICE));
        CHECK(st != 0 || S_ISREG(sb.st_mode) || S_ISCHR(sb.st_mode));
    } else {
        CHECK(err[0] != '\0');
    }
}

static void check_write(const char *path, int commit)
{
    ag_atomic a;
    ag_out_kind kind;
    char err[AG_CLI_ERR_LEN];
    struct stat before;
    int existed = stat(path, &before) == 0;
    int allowed = ag_io_output_kind(path, &kind, err, sizeof(err)) == AG_OK;
    if (ag_atomic_open(&a, path, err, sizeof(err)) != AG_OK) {
        CHECK(err[0] != '\0');
        return;
    }
    CHECK(allowed); /* what the rule refuses is never opened */
    if (a.tmp) {
        const char *base = strrchr(a.tmp, '/');
        base = base ? base + 1 : a.tmp;
        CHECK(strlen(base) <= 255 && ag_io_is_tmp_name(base));
        CHECK(kind != AG_OUT_DEVICE);
    } else {
        CHECK(kind == AG_OUT_DEVICE);
    }
    fputs("X", a.f);
    if (!commit) {
        ag_atomic_abort(&a);
        return;
    }
    if (ag_atomic_commit(&a, err, sizeof(err)) != AG_OK)
        return;
    struct stat after;
    CHECK(stat(path, &after) == 0);
    if (kind == AG_OUT_DEVICE) {
        CHECK(S_ISCHR(after.st_mode) && existed && after.st_rdev == before.st_rdev);
    } else {
        /* the name (through its links) now leads to exactly what was written */
        char t[4] = "";
        int fd = open(path, O_RDONLY | O_NONBLOCK);
        CHECK(fd >= 0);
        CHECK(read(fd, t, sizeof(t)) == 1 && t[0] == 'X');
        close(fd);
    }
}

static void check_read(const char *path)
{
    unsigned char *buf;
    size_t len;
    char err[AG_CLI_ERR_LEN];
    struct stat sb;
    int regular = stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
    ag_status r = ag_io_read_file(path, 64, &buf, &len, err, sizeof(err));
    if (r == AG_OK) {
        CHECK(regular && len == (size_t)sb.st_size && len <= 64 && buf[len] == '\0');
        free(buf);
    } else {
        CHECK(buf == NULL && err[0] != '\0');
        CHECK(!regular || sb.st_size > 64 || access(path, R_OK) != 0);
    }
}

/* The oracle: whether a and b are one file, found by making a and looking
 * for it at b; -1 when it cannot be told that way. */
static int same_file_oracle(const char *a, const char *b)
{
    struct stat sa, sb;
    int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea && eb)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ea != eb) {
        struct stat l;
        /* a name that does not exist, but as a link: writing through it is refused anyway */
        if (lstat(ea ? b : a, &l) == 0)
            return -1;
        return 0;
    }
    if (lstat(a, &sa) == 0 || lstat(b, &sb) == 0)
        return -1;
    int fd = open(a, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
    if (fd < 0)
        return -1;
    close(fd);
    int same =
        stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev;
    unlink(a);
    return same;
}

static const ag_command fuzz_cmd = {"fuzz", NULL, "fuzz_paths", "the fuzz target's command", NULL,
                                    0,      0};

static void check_same(const char *a, const char *b, int b_output)
{
    int oracle = same_file_oracle(a, b);
    struct stat sa;
    int device = stat(a, &sa) == 0 && S_ISCHR(sa.st_mode);
    const ag_cli_file files[2] = {{"--one", a, 1, NULL}, {"--two", b, b_output, NULL}};
    int r = ag_cli_check_files(&fuzz_cmd, files, 2);
    CHECK(r == AG_EXIT_OK || r == AG_EXIT_FAIL || r == AG_EXIT_USAGE);
    if (oracle == 1 && !device)
        CHECK(r == AG_EXIT_USAGE);
    if (oracle == 0 || (oracle == 1 && device))
        CHECK(r != AG_EXIT_USAGE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (size == 0)
        return 0;
    if (!ready) {
        setup();
        ready = 1;
    } else {
        CHECK(chdir(work) == 0);
    }
    unsigned op = data[0];
    /* two NUL-terminated names from the rest */
    char *buf = malloc(size + 1);
    CHECK(buf);
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = '\0';
    buf[size] = '\0';
    const char *a = buf, *b = buf + strlen(buf) + 1;
    if (b > buf + size - 1)
        b = buf + size; /* "" */
    check_shown(a);
    check_shown(b);
    int ia = inside(a), ib = inside(b);
    if (ia) {
        check_kind(a);
        if (op & 4)
            check_read(a);
        check_write(a, op & 1);
    }
    if (ib && (op & 8))
        check_read(b);
    if (ia && ib && *a && *b)
        check_same(a, b, (op & 2) != 0);
    if (ia || ib)
        check_and_reset(a, b); /* once: the checks above agree with any state of the tree */
    free(buf);
    CHECK(fchdir(home) == 0);
    return 0;
}
