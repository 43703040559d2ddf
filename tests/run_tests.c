/*
 * run_tests.c - runs every Check suite (the list is generated from the
 * suite_NAME functions in the tests directory) and fails when any test fails.
 */
#include <check.h>
#include <stdlib.h>

#define AG_SUITE(name) Suite *name(void);
#include "suites.h"
#undef AG_SUITE

int main(void)
{
    SRunner *runner = srunner_create(NULL);
#define AG_SUITE(name) srunner_add_suite(runner, name());
#include "suites.h"
#undef AG_SUITE
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
