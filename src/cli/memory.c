/*
 * memory.c - the memory a run may use and the check of its estimate
 * (limits.h): a run that cannot fit is refused before it allocates
 * anything, with what would need how much, instead of growing until the
 * kernel kills it. The same for the disk its checkpoint will take. And the
 * counters a checkpoint keeps, one rule for both trainers.
 */
#include "limits.h"
#include "signals.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

const char *ag_cli_bytes(double bytes, char *buf, size_t len)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    while (bytes >= 1024 && u < 6)
        bytes /= 1024, u++;
    if (u == 0)
        snprintf(buf, len, "%.0f bytes", bytes);
    else if (bytes >= 1e6) /* beyond EiB */
        snprintf(buf, len, "%.3g %s", bytes, units[u]);
    else
        snprintf(buf, len, "%.1f %s", bytes, units[u]);
    return buf;
}

/* "8G", "1.5g", "512M", "64K", "123" (bytes) into *bytes; 0 when it is not
 * a size of at least one byte ("1e3", "-1", "0x10", "0.5" are not). */
static int parse_size(const char *s, double *bytes)
{
    size_t n = strlen(s);
    double mult = 1;
    char num[64];
    if (n == 0 || n >= sizeof(num))
        return 0;
    memcpy(num, s, n + 1);
    switch (num[n - 1]) {
    case 'k':
    case 'K': mult = 1024.0; break;
    case 'm':
    case 'M': mult = 1024.0 * 1024; break;
    case 'g':
    case 'G': mult = 1024.0 * 1024 * 1024; break;
    case 't':
    case 'T': mult = 1024.0 * 1024 * 1024 * 1024; break;
    default: break;
    }
    if (mult > 1)
        num[n - 1] = '\0';
    /* plain decimals only, as the flags' numbers: no exponent, sign or hex */
    int digits = 0, dots = 0;
    for (const char *c = num; *c; c++) {
        digits += *c >= '0' && *c <= '9';
        dots += *c == '.';
        if ((*c < '0' || *c > '9') && *c != '.')
            return 0;
    }
    double v;
    if (!digits || dots > 1 || ag_parse_double(num, &v) != AG_PARSE_OK || !(v * mult >= 1))
        return 0;
    *bytes = v * mult;
    return 1;
}

int ag_cli_memory_limit(const ag_command *cmd, double *bytes, const char **source)
{
    const char *env = getenv("AG_MAX_MEMORY");
    if (env) {
        if (!parse_size(env, bytes))
            return ag_cli_usage_error(cmd,
                                      "AG_MAX_MEMORY: '%s' is not a size (such as 8G, 1.5G, "
                                      "512M or a number of bytes)",
                                      env);
        *source = "AG_MAX_MEMORY";
        return AG_EXIT_OK;
    }
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    *bytes = pages > 0 && page > 0 ? (double)pages * (double)page : 1e18;
    *source = "this machine's memory";
    static const struct {
        int res;
        const char *name;
    } lims[] = {{RLIMIT_AS, "ulimit -v"}, {RLIMIT_DATA, "ulimit -d"}};
    for (size_t k = 0; k < sizeof(lims) / sizeof(lims[0]); k++) {
        struct rlimit rl;
        if (getrlimit(lims[k].res, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
            (double)rl.rlim_cur < *bytes) {
            *bytes = (double)rl.rlim_cur;
            *source = lims[k].name;
        }
    }
    return AG_EXIT_OK;
}

int ag_cli_memory_check(const ag_command *cmd, const ag_memory *m, const char *file)
{
    double limit = 0;
    const char *source = "";
    int st = ag_cli_memory_limit(cmd, &limit, &source);
    if (st != AG_EXIT_OK)
        return st;
    if (m->total <= limit)
        return AG_EXIT_OK;
    /* the parts, largest first, the first four named */
    int order[AG_MEMORY_PARTS];
    for (int i = 0; i < m->n; i++) {
        int j = i;
        while (j > 0 && m->part[order[j - 1]].bytes < m->part[i].bytes) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    char parts[512] = "", a[32], b[32];
    size_t k = 0;
    for (int i = 0; i < m->n && i < 4 && k < sizeof(parts); i++)
        k += (size_t)snprintf(parts + k, sizeof(parts) - k, "%s%s %s", i ? ", " : "",
                              m->part[order[i]].what, ag_cli_bytes(m->part[order[i]].bytes, a, 32));
    if (m->n > 4 && k < sizeof(parts))
        snprintf(parts + k, sizeof(parts) - k, ", and %d more", m->n - 4);
    char why[160];
    if (strcmp(source, "AG_MAX_MEMORY") == 0)
        snprintf(why, sizeof(why), "set by AG_MAX_MEMORY");
    else
        snprintf(why, sizeof(why), "%s; AG_MAX_MEMORY=SIZE sets another, such as 64G", source);
    if (file)
        return ag_cli_error(
            cmd, "%s: the run would need about %s (%s): more than the %s it may use (%s)", file,
            ag_cli_bytes(m->total, a, 32), parts, ag_cli_bytes(limit, b, 32), why);
    return ag_cli_usage_error(cmd,
                              "the run would need about %s (%s): more than the %s it may use "
                              "(%s); try a smaller model or batch",
                              ag_cli_bytes(m->total, a, 32), parts, ag_cli_bytes(limit, b, 32),
                              why);
}

int ag_cli_gpt_memory_check(const ag_command *cmd, const ag_gpt_config *c, const ag_gpt_run *run,
                            const char *file)
{
    ag_memory m;
    ag_gpt_memory(c, run, &m);
    return ag_cli_memory_check(cmd, &m, file);
}

/* Whether s ends in tail. */
static int ends_in(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

const char *ag_cli_format_hint(const char *err)
{
    if (ends_in(err, ": not an attograd checkpoint (format 'attograd-gpt')"))
        return "; it is a GPT's (train --task text, sample, eval and attend read it)";
    if (ends_in(err, ": not an attograd GPT checkpoint (format 'attograd-checkpoint')"))
        return "; it is a toy task's (train --load reads it, without --task text)";
    return "";
}

int ag_cli_gpt_load(const ag_command *cmd, const char *path, ag_gpt_run run, const char *nothing,
                    ag_gpt_file **f, ag_gpt **g)
{
    char err[AG_CLI_ERR_LEN];
    ag_status st = ag_gpt_file_load(path, f, err, sizeof(err));
    if (st == AG_OK) {
        run.file_bytes = ag_cli_file_bytes(path);
        int mem = ag_cli_gpt_memory_check(cmd, ag_gpt_file_config(*f), &run, path);
        if (mem != AG_EXIT_OK)
            return mem;
        if (!(*g = ag_gpt_file_model(*f, err, sizeof(err))))
            st = ag_interrupted() ? AG_ERR_STOPPED : AG_ERR_FORMAT;
    }
    int sig = ag_cli_stop_requested();
    if (st == AG_ERR_STOPPED && sig) {
        ag_cli_error(cmd, "%s; %s", ag_cli_stop_reason(sig), nothing);
        return 128 + sig;
    }
    return st == AG_OK ? AG_EXIT_OK : ag_cli_error(cmd, "%s%s", err, ag_cli_format_hint(err));
}

int ag_cli_check_space(const ag_command *cmd, const char *flag, const char *path, double bytes)
{
    double room = ag_atomic_room(path);
    if (room < 0 || bytes <= room)
        return AG_EXIT_OK;
    char a[32], b[32];
    return ag_cli_error(cmd, "%s %s: the file will take about %s, and only %s is free there", flag,
                        path, ag_cli_bytes(bytes, a, sizeof(a)), ag_cli_bytes(room, b, sizeof(b)));
}

double ag_cli_file_bytes(const char *path)
{
    struct stat sb;
    return path && stat(path, &sb) == 0 ? (double)sb.st_size : 0;
}

int ag_cli_check_counts(const ag_command *cmd, const char *path, long steps, int steps_given,
                        long step, long optim_steps)
{
    long most = step > optim_steps ? step : optim_steps;
    if (most <= AG_TRAIN_MAX_STEP - steps)
        return AG_EXIT_OK;
    int opt = optim_steps > step;
    const char *what = opt ? "optimizer step" : "step";
    if (steps_given)
        return ag_cli_usage_error(cmd, "--steps %ld: %s is at %s %ld, and a run stops at %ld",
                                  steps, path, what, most, AG_TRAIN_MAX_STEP);
    if (most >= AG_TRAIN_MAX_STEP)
        return ag_cli_error(cmd,
                            "%s is at %s %ld, the most a checkpoint holds: it cannot train "
                            "further",
                            path, what, most);
    return ag_cli_error(cmd,
                        "%s is at %s %ld: the default --steps %ld would take it past %ld, the "
                        "most a checkpoint holds; give --steps %ld or fewer",
                        path, what, most, steps, AG_TRAIN_MAX_STEP, AG_TRAIN_MAX_STEP - most);
}
