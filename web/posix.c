/*
 * posix.c - what the command calls that emscripten's C library lacks. The
 * browser runs no other program: posix_spawnp (Graphviz's dot, dot.c) fails
 * with ENOSYS, though the command never gets that far, as it looks for dot
 * on PATH first and says it is not installed.
 */
#include <errno.h>
#include <spawn.h>

int posix_spawnp(pid_t *restrict pid, const char *restrict file,
                 const posix_spawn_file_actions_t *actions, const posix_spawnattr_t *restrict attr,
                 char *const argv[restrict], char *const envp[restrict])
{
    (void)pid;
    (void)file;
    (void)actions;
    (void)attr;
    (void)argv;
    (void)envp;
    return ENOSYS;
}
