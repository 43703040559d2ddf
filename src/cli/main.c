/*
 * main.c - `attograd <command> [options]`: finds the command and runs it.
 * Exit status: 0 ok, 1 failure at run time, 2 bad usage.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const ag_command *const commands[] = {
    &ag_cmd_train_info,   &ag_cmd_sample_info,    &ag_cmd_eval_info,
    &ag_cmd_attend_info,  &ag_cmd_demo_info,      &ag_cmd_grad_info,
    &ag_cmd_explain_info, &ag_cmd_gradcheck_info, &ag_cmd_bench_info,
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void print_help(FILE *f)
{
    fprintf(f, "usage: attograd <command> [options]\n"
               "       attograd <command> --help\n"
               "       attograd --version\n\n"
               "attograd: automatic differentiation in C, centered on attention.\n\n"
               "commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
}

/* A bad top-level command line: one message (its quoted parts escaped, as
 * every message is), then the whole help; status 2. */
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static int
top_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ag_cli_verror(NULL, fmt, ap);
    va_end(ap);
    print_help(stderr);
    return AG_EXIT_USAGE;
}

/* Output that could not be written (a full disk, a closed pipe) is a
 * failure, said once on stderr, not a silent success. */
static int finish(int status)
{
    int flushed = fflush(stdout) == 0;
    int e = errno;
    if (!flushed || ferror(stdout)) {
        /* errno is only known when the last write is the one that failed */
        ag_cli_error(NULL, "cannot write the output%s%s", flushed ? "" : ": ",
                     flushed ? "" : strerror(e));
        return status == AG_EXIT_OK ? AG_EXIT_FAIL : status;
    }
    return status;
}

/* A standard stream the caller closed (`attograd train 2>&-`) would be the
 * number the next open gets: a checkpoint, a log or a graph would also take
 * what is printed there. Each closed one is held by /dev/null opened the
 * wrong way round, so that its reads and writes still fail as on a closed
 * stream (EBADF): a closed stdout is still "cannot write the output". The
 * holds are inherited, so Graphviz's dot, started with our streams, is
 * safe from the same mistake. Streams are taken in order, so open() gives
 * each the number it holds (the lower ones are open or held by then). */
static void hold_closed_streams(void)
{
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) == -1 && errno == EBADF)
            open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY); /* returns fd */
}

int main(int argc, char **argv)
{
    hold_closed_streams();
    /* A reader that goes away (`attograd train | head`) makes writes fail
     * with EPIPE instead of killing the process mid-run, so temporary
     * files are still removed and checkpoints still saved. */
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2) {
        print_help(stderr);
        return AG_EXIT_USAGE;
    }
    const char *name = argv[1];
    const ag_command *cmd = NULL;
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(name, commands[i]->name) == 0)
            cmd = commands[i];
    if (ag_cli_is_help(name) || strcmp(name, "help") == 0) {
        /* `attograd help train` is `attograd train --help` */
        const ag_command *topic = NULL;
        for (size_t i = 0; argc == 3 && i < N_COMMANDS; i++)
            if (strcmp(argv[2], commands[i]->name) == 0)
                topic = commands[i];
        if (topic) {
            char *help_argv[] = {argv[2], "--help", NULL};
            return finish(topic->run(2, help_argv));
        }
        if (argc > 2)
            return top_usage_error("%s: unexpected argument '%s' (a command's help is "
                                   "attograd COMMAND --help)",
                                   name, argv[2]);
        print_help(stdout);
        return finish(AG_EXIT_OK);
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
        if (argc > 2)
            return top_usage_error("%s takes no arguments, but '%s' follows it", name, argv[2]);
        printf("attograd %s (ag_real = %s)\n", AG_VERSION, AG_REAL_NAME);
        return finish(AG_EXIT_OK);
    }
    if (cmd)
        return finish(cmd->run(argc - 1, argv + 1));
    return top_usage_error("unknown command '%s'", name);
}
