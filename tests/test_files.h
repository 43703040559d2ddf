/*
 * test_files.h - scratch directories for the file-layer tests: make one,
 * count what is in it (to prove no temporary file was left behind), and
 * remove it with its files.
 */
#ifndef AG_TEST_FILES_H
#define AG_TEST_FILES_H

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A new empty directory under /tmp; its path in buf (at least 32 bytes). */
static inline char *test_mkdir(char *buf)
{
    strcpy(buf, "/tmp/attograd-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(buf));
    return buf;
}

/* How many entries dir holds, other than . and .. */
static inline int test_count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

/* Remove dir, its files and its empty subdirectories; assert it is gone. */
static inline void test_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        struct stat sb;
        if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
            rmdir(path);
        else
            unlink(path);
    }
    closedir(d);
    ck_assert_int_eq(rmdir(dir), 0);
}

#endif /* AG_TEST_FILES_H */
