/*
 * test_cli_errors.c - every bad command line, one table row each: the exit
 * status (2 for bad usage, 1 for a failure at run time), a fragment of the
 * message that names the flag and the value, the usage line for status 2,
 * and nothing at all on stdout. The rows run the real command (AG_BIN)
 * with argv passed as is, so tabs, newlines and empty strings arrive intact.
 */
#include "run.h"
#include "test_util.h"

#include <unistd.h>


#define MAX_ARGS 24

typedef struct bad_line {
    const char *argv[MAX_ARGS]; /* after "attograd", NULL-terminated */
    int status;
    const char *message; /* a fragment of stderr */
} bad_line;

static const bad_line bad_lines[] = {
    /* the top level */
    {{NULL}, 2, "usage: attograd <command> [options]"},
    {{"bogus"}, 2, "unknown command 'bogus'"},
    {{"--bogus"}, 2, "unknown command '--bogus'"},
    {{""}, 2, "unknown command ''"},

    /* demo */
    {{"demo", "--bogus"}, 2, "attograd demo: unknown option '--bogus'"},
    {{"demo", "extra"}, 2, "unexpected argument 'extra'"},
    {{"demo", "--decimals"}, 2, "--decimals needs a value"},
    {{"demo", "--decimals", "--bogus"}, 2, "--decimals needs a value, but '--bogus' follows it"},
    {{"demo", "--decimals", "3x"}, 2, "--decimals: '3x' is not an integer"},
    {{"demo", "--decimals", ""}, 2, "--decimals: '' is not an integer"},
    {{"demo", "--decimals="}, 2, "--decimals: '' is not an integer"},
    {{"demo", "--decimals", " 2"}, 2, "--decimals: ' 2' is not an integer"},
    {{"demo", "--decimals", "\t2"}, 2, "--decimals: '\\t2' is not an integer"},
    {{"demo", "--decimals", "\n2"}, 2, "--decimals: '\\n2' is not an integer"},
    {{"demo", "--decimals", "2 "}, 2, "--decimals: '2 ' is not an integer"},
    {{"demo", "--decimals", "2.0"}, 2, "--decimals: '2.0' is not an integer"},
    {{"demo", "--decimals", "0x2"}, 2, "--decimals: '0x2' is not an integer"},
    {{"demo", "--decimals", "10"}, 2, "--decimals: 10 is out of range (0..9)"},
    {{"demo", "--decimals", "-1"}, 2, "--decimals: -1 is out of range (0..9)"},
    {{"demo", "--decimals", "99999999999999999999"},
     2,
     "--decimals: 99999999999999999999 is out of range"},
    {{"demo", "--decimals", "-99999999999999999999"}, 2, "is out of range (0..9)"},

    /* train: numbers */
    {{"train", "--steps", "0"}, 2, "--steps: 0 is out of range (1..100000000)"},
    {{"train", "--steps", "-5"}, 2, "--steps: -5 is out of range"},
    {{"train", "--steps", "5x"}, 2, "--steps: '5x' is not an integer"},
    {{"train", "--steps=5x"}, 2, "--steps: '5x' is not an integer"},
    {{"train", "--steps", "1e3"}, 2, "--steps: '1e3' is not an integer"},
    {{"train", "--steps", "\t5"}, 2, "--steps: '\\t5' is not an integer"},
    {{"train", "--steps", "2147483648"}, 2, "--steps: 2147483648 is out of range"},
    {{"train", "--steps", "9223372036854775808"},
     2,
     "--steps: 9223372036854775808 is out of range"},
    {{"train", "--steps"}, 2, "--steps needs a value"},
    {{"train", "--quiet", "--steps"}, 2, "--steps needs a value"},
    {{"train", "--batch", "0"}, 2, "--batch: 0 is out of range (1..65536)"},
    {{"train", "--batch", "65537"}, 2, "--batch: 65537 is out of range"},
    {{"train", "--dim", "0"}, 2, "--dim: 0 is out of range"},
    {{"train", "--heads", "0"}, 2, "--heads: 0 is out of range"},
    {{"train", "--eval-every", "0"}, 2, "--eval-every: 0 is out of range"},
    {{"train", "--lr", "nan"}, 2, "--lr: 'nan' is not a number"},
    {{"train", "--lr", "NAN"}, 2, "--lr: 'NAN' is not a number"},
    {{"train", "--lr", "inf"}, 2, "--lr: 'inf' is not a number"},
    {{"train", "--lr", "-inf"}, 2, "--lr: '-inf' is not a number"},
    {{"train", "--lr", "infinity"}, 2, "--lr: 'infinity' is not a number"},
    {{"train", "--lr", "1e999"}, 2, "--lr: '1e999' is not a finite number"},
    {{"train", "--lr", "1e-400"}, 2, "--lr: 1e-400 is out of range"},
    {{"train", "--lr", "0"}, 2, "--lr: 0 is out of range (1e-12..1000)"},
    {{"train", "--lr", "-0.1"}, 2, "--lr: -0.1 is out of range"},
    {{"train", "--lr", "1001"}, 2, "--lr: 1001 is out of range"},
    {{"train", "--lr", "0.1x"}, 2, "--lr: '0.1x' is not a number"},
    {{"train", "--lr", " 0.1"}, 2, "--lr: ' 0.1' is not a number"},
    {{"train", "--lr", "\n0.1"}, 2, "--lr: '\\n0.1' is not a number"},
    {{"train", "--lr", ""}, 2, "--lr: '' is not a number"},
    {{"train", "--lr", "."}, 2, "--lr: '.' is not a number"},
    {{"train", "--momentum", "1"}, 2, "--momentum: 1 is out of range"},
    {{"train", "--momentum", "-0.5"}, 2, "--momentum: -0.5 is out of range"},
    {{"train", "--weight-decay", "-1"}, 2, "--weight-decay: -1 is out of range"},
    {{"train", "--clip", "-1"}, 2, "--clip: -1 is out of range"},
    {{"train", "--clip", "nan"}, 2, "--clip: 'nan' is not a number"},
    {{"train", "--seed", "-1"}, 2, "--seed: '-1' is not a non-negative integer"},
    {{"train", "--seed", "+1"}, 2, "--seed: '+1' is not a non-negative integer"},
    {{"train", "--seed", " 1"}, 2, "--seed: ' 1' is not a non-negative integer"},
    {{"train", "--seed", "1.5"}, 2, "--seed: '1.5' is not a non-negative integer"},
    {{"train", "--seed", "18446744073709551616"},
     2,
     "--seed: 18446744073709551616 is out of range"},

    /* train: names and ranges that depend on each other */
    {{"train", "--task", "nope"},
     2,
     "--task: unknown task 'nope' (lookup, lookup2, reverse, text)"},
    {{"train", "--task", "LOOKUP"}, 2, "--task: unknown task 'LOOKUP'"},
    {{"train", "--task", ""}, 2, "--task: unknown task ''"},
    {{"train", "--posenc", "fourier"}, 2, "--posenc: unknown kind 'fourier'"},
    {{"train", "--optimizer", "rmsprop"},
     2,
     "--optimizer: unknown optimizer 'rmsprop' (sgd, adam)"},
    {{"train", "--seq", "1"}, 2, "--seq: 1 is out of range for task lookup (2..9)"},
    {{"train", "--seq", "10"}, 2, "--seq: 10 is out of range for task lookup (2..9)"},
    {{"train", "--task", "lookup2", "--seq", "2"},
     2,
     "--seq: 2 is out of range for task lookup2 (3..9)"},
    {{"train", "--seq", "5000"}, 2, "--seq: 5000 is out of range (1..4096)"},
    {{"train", "--task", "reverse", "--seq", "4096"},
     2,
     "--seq 4096 with --batch 32, --dim 32 and --heads 1 is too large"},
    {{"train", "--dim", "4096", "--batch", "65536"}, 2, "is too large: one step would hold"},
    {{"train", "--heads", "3"}, 2, "--heads: 3 does not divide --dim 32"},
    {{"train", "--dim", "8", "--heads", "16"}, 2, "--heads: 16 does not divide --dim 8"},
    {{"train", "--task", "lookup2", "--dim", "31"}, 2, "--heads: 2 does not divide --dim 31"},

    /* train: flags and file names */
    {{"train", "--stepz", "5"}, 2, "unknown option '--stepz'"},
    {{"train", "--causal=yes"}, 2, "unknown option '--causal=yes'"},
    {{"train", "--quiet=1"}, 2, "unknown option '--quiet=1'"},
    {{"train", "-s", "5"}, 2, "unknown option '-s'"},
    {{"train", "-"}, 2, "unknown option '-'"},
    {{"train", "lookup"}, 2, "unexpected argument 'lookup'"},
    {{"train", "--log", ""}, 2, "--log: the file name is empty"},
    {{"train", "--save="}, 2, "--save: the file name is empty"},
    {{"train", "--plot", ""}, 2, "--plot: the file name is empty"},
    {{"train", "--load", ""}, 2, "--load: the file name is empty"},
    {{"train", "--save", "--quiet"}, 2, "--save needs a value, but '--quiet' follows it"},
    {{"train", "--log"}, 2, "--log needs a value"},
    {{"train", "--log", "a.csv", "--save", "a.csv"}, 2, "--log and --save both name 'a.csv'"},
    {{"train", "--plot", "a", "--log", "a"}, 2, "--log and --plot both name 'a'"},
    {{"train", "--load", "c", "--log", "c"}, 2, "--log 'c' would overwrite the --load file"},
    {{"train", "--plot", "a", "--plot-heads", "a"}, 2, "--plot and --plot-heads both name 'a'"},
    {{"train", "--plot-heads", ""}, 2, "--plot-heads: the file name is empty"},

    /* train: failures at run time, found before any training */
    {{"train", "--load", "/nonexistent/c.safetensors"},
     1,
     "/nonexistent/c.safetensors: cannot open"},
    {{"train", "--load", "/"}, 1, "/: is a directory"},
    {{"train", "--save", "/nonexistent/c.safetensors"},
     1,
     "--save /nonexistent/c.safetensors: cannot write there: directory '/nonexistent'"},
    {{"train", "--log", "/nonexistent/l.csv"}, 1, "--log /nonexistent/l.csv: cannot write there"},
    {{"train", "--plot", "/nonexistent/p.png"}, 1, "--plot /nonexistent/p.png: cannot write there"},
    {{"train", "--plot-heads", "/nonexistent/p.png"},
     1,
     "--plot-heads /nonexistent/p.png: cannot write there"},
    {{"train", "--save", "/"}, 1, "--save /: is a directory"},
    {{"train", "--log", "/tmp/"}, 1, "--log /tmp/: is a directory"},

    /* grad */
    {{"grad"}, 2, "--model is missing (--model, --batch and --out are all required)"},
    {{"grad", "--model", "m", "--batch", "b"}, 2, "--out is missing"},
    {{"grad", "--model", "m", "--out", "o"}, 2, "--batch is missing"},
    {{"grad", "--model", "m", "--batch", "b", "--out", "m"},
     2,
     "--out 'm' would overwrite the --model file"},
    {{"grad", "--model", "m", "--batch", "b", "--out", "b"},
     2,
     "--out 'b' would overwrite the --batch file"},
    {{"grad", "--model", ""}, 2, "--model: the file name is empty"},
    {{"grad", "--model"}, 2, "--model needs a value"},
    {{"grad", "--model", "--batch", "b"}, 2, "--model needs a value, but '--batch' follows it"},
    {{"grad", "--bogus"}, 2, "attograd grad: unknown option '--bogus'"},
    {{"grad", "m.safetensors"}, 2, "unexpected argument 'm.safetensors'"},
    {{"grad", "--model", "/nonexistent/m", "--batch", "/nonexistent/b", "--out", "/nonexistent/o"},
     1,
     "--out /nonexistent/o: cannot write there"},
    {{"grad", "--model", "/nonexistent/m", "--batch", "/nonexistent/b", "--out", "/tmp/"},
     1,
     "--out /tmp/: is a directory"},

    /* explain */
    {{"explain"}, 2, "what should I explain? (softmax, attention, posenc, layernorm, block)"},
    {{"explain", "bogus"},
     2,
     "unknown topic 'bogus' (softmax, attention, posenc, layernorm, block)"},
    {{"explain", "softmax", "--upstream", "1,2"},
     2,
     "--upstream has 2 number(s) but --logits has 3 (the example's)"},
    {{"explain", "layernorm", "--weight", "1"},
     2,
     "--weight has 1 number(s) but --x has 3 (the example's)"},
    {{"explain", "softmax", "--logits"}, 2, "--logits needs a value"},
    {{"explain", "softmax", "--logits", ""}, 2, "--logits: the list is empty"},
    {{"explain", "softmax", "--logits", "1,,2"}, 2, "--logits: '' is not a number (in '1,,2')"},
    {{"explain", "softmax", "--logits", "1,2,"}, 2, "--logits: '' is not a number (in '1,2,')"},
    {{"explain", "softmax", "--logits", "1, 2"}, 2, "--logits: ' 2' is not a number"},
    {{"explain", "softmax", "--logits", "1,\t2"}, 2, "--logits: '\\t2' is not a number"},
    {{"explain", "softmax", "--logits", "1,x"}, 2, "--logits: 'x' is not a number"},
    {{"explain", "softmax", "--logits", "nan,1"}, 2, "--logits: 'nan' is not a number"},
    {{"explain", "softmax", "--logits", "1,1e999"}, 2, "--logits: '1e999' is not a finite number"},
    {{"explain", "softmax", "--logits", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"},
     2,
     "--logits: at most 16 numbers"},
    {{"explain", "softmax", "--logits", "1,2", "--upstream", "1"},
     2,
     "--upstream has 1 number(s) but --logits has 2"},
    {{"explain", "softmax", "--logits", "1,2", "--upstream", "1,inf"},
     2,
     "--upstream: 'inf' is not a number"},
    {{"explain", "softmax", "--logits", "1,2", "--decimals", "3"},
     2,
     "--decimals: 3 is out of range (4..10)"},
    {{"explain", "softmax", "--logits", "1,2", "extra"}, 2, "unexpected argument 'extra'"},
    {{"explain", "softmax", "--bogus"}, 2, "attograd explain softmax: unknown option '--bogus'"},
    {{"explain", "attention", "--inject-bug", "relu"},
     2,
     "--inject-bug: unknown bug 'relu' (softmax)"},
    {{"explain", "attention", "--lr", "0"}, 2, "--lr: 0 is out of range (1e-06..100)"},
    {{"explain", "attention", "--dot", ""}, 2, "--dot: the file name is empty"},
    {{"gradcheck", "--op", "nosuch"}, 2, "--op: unknown op 'nosuch' (all, matmul, matmul_bt,"},
    {{"gradcheck", "--eps", "2"}, 2, "--eps: 2 is out of range (1e-15..1)"},
    {{"gradcheck", "--plot", "p.png"}, 2, "--plot draws the sweep: add --sweep"},
    {{"gradcheck", "softmax"},
     2,
     "attograd gradcheck: unexpected argument 'softmax' (options start with --)"},
    {{"explain", "softmax", "--logits", "1,inf"},
     2,
     "--logits: 'inf' is not allowed; -inf masks an entry"},
    {{"explain", "softmax", "--logits", "1", "--upstream", "-inf"},
     2,
     "--upstream: '-inf' is not a number"},
    {{"explain", "posenc", "--seq", "0"}, 2, "--seq: 0 is out of range (1..1024)"},
    {{"explain", "posenc", "--load", "p", "--dim", "4"},
     2,
     "--load takes --seq and --dim from the file"},
    {{"explain", "posenc", "extra"},
     2,
     "attograd explain posenc: unexpected argument 'extra' (options start with --)"},
    {{"explain", "attention", "--dot", "a", "--png", "a"}, 2, "--dot and --png both name 'a'"},
    {{"explain", "attention", "extra"},
     2,
     "attograd explain attention: unexpected argument 'extra' (options start with --)"},
};
#define N_BAD_LINES ((int)(sizeof(bad_lines) / sizeof(bad_lines[0])))

START_TEST(test_bad_command_line)
{
    const bad_line *b = &bad_lines[_i];
    const char *argv[MAX_ARGS + 2];
    char shown[512] = "attograd";
    argv[0] = run_bin();
    int n = 1;
    for (int k = 0; b->argv[k]; k++) {
        argv[n++] = b->argv[k];
        strncat(shown, " ", sizeof(shown) - strlen(shown) - 1);
        strncat(shown, b->argv[k], sizeof(shown) - strlen(shown) - 1);
    }
    argv[n] = NULL;
    run_proc p = run_exec(argv, NULL);
    ck_assert_msg(p.signal == 0, "row %d (%s): killed by signal %d", _i, shown, p.signal);
    ck_assert_msg(p.status == b->status, "row %d (%s): exit status %d, want %d; stderr:\n%s", _i,
                  shown, p.status, b->status, p.err);
    ck_assert_msg(strstr(p.err, b->message) != NULL, "row %d (%s): '%s' not in stderr:\n%s", _i,
                  shown, b->message, p.err);
    ck_assert_msg(p.out_len == 0, "row %d (%s): stdout is not empty:\n%s", _i, shown, p.out);
    if (b->status == 2)
        ck_assert_msg(strstr(p.err, "usage: attograd") != NULL, "row %d (%s): no usage line:\n%s",
                      _i, shown, p.err);
    else
        ck_assert_msg(strstr(p.err, "usage:") == NULL,
                      "row %d (%s): a usage line for a failure "
                      "at run time:\n%s",
                      _i, shown, p.err);
    /* one clear message: a command's usage error is the message, the usage
     * line and the --help hint; a failure at run time is one line (the top
     * level answers a bad command with the whole help) */
    size_t lines = 0;
    for (const char *c = p.err; *c; c++)
        lines += *c == '\n';
    int command = n > 1 && (strcmp(argv[1], "demo") == 0 || strcmp(argv[1], "train") == 0 ||
                            strcmp(argv[1], "grad") == 0 || strcmp(argv[1], "explain") == 0);
    if (b->status == 1 || command)
        ck_assert_msg(lines == (b->status == 1 ? 1u : 3u), "row %d (%s): %zu lines on stderr:\n%s",
                      _i, shown, lines, p.err);
    run_free(&p);
}
END_TEST

/* A flag given twice counts the last time, like most Unix tools. */
START_TEST(test_repeated_flag_last_wins)
{
    run_proc p = run_cmd("demo", "--decimals", "3", "--decimals", "1", NULL);
    run_assert_status(&p, 0);
    ck_assert_str_eq(p.out, "weights:\n[[0.4 0.2 0.4]\n [0.2 0.4 0.4]\n [0.2 0.2 0.5]]\n"
                            "output:\n[[0.8 0.6]\n [0.6 0.8]\n [0.8 0.8]]\n");
    run_free(&p);
    p = run_cmd("explain", "softmax", "--logits", "5,5,5,5", "--logits", "1,2", NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "  z            [ 1.0000  2.0000]\n");
    run_free(&p);
}
END_TEST

/* Values that look odd but are numbers are accepted (not over-strict), and
 * mean what they say: each row's stdout shows the value the command took.
 * An explicit +, leading zeros (decimal, not octal: 08 is eight), a bare
 * point (.5, 2.), an exponent in either case, a single leading minus. */
#ifdef AG_REAL_DOUBLE
#define DEMO_8_DECIMALS "weights:\n[[0.40111209 0.19777581 0.40111209]\n"
#else
#define DEMO_8_DECIMALS "weights:\n[[0.40111208 0.19777581 0.40111208]\n"
#endif

START_TEST(test_odd_but_valid_numbers)
{
    static const struct {
        const char *args[10];
        const char *shows; /* on stdout */
    } rows[] = {
        {{"demo", "--decimals", "+1"}, "weights:\n[[0.4 0.2 0.4]\n"},
        {{"demo", "--decimals", "08"}, DEMO_8_DECIMALS},
        {{"demo", "--decimals=007"}, "weights:\n[[0.4011121 0.1977758 0.4011121]\n"},
        {{"explain", "softmax", "--logits", "-1,.5,2.,1e0,-0"},
         "\n  z            [-1.0000  0.5000  2.0000  1.0000  0.0000]\n"},
        /* a value may begin with a single dash: it is a negative number */
        {{"explain", "softmax", "--logits", "-1,-2"}, "\n  z            [-1.0000 -2.0000]\n"},
        {{"explain", "softmax", "--logits", "1", "--upstream", "+2.5E0"},
         "\n  g            [ 2.5000]\n"},
        {{"explain", "layernorm", "--x", "1,2", "--decimals", "05"},
         "\n  x            [ 1.00000  2.00000]\n"},
        {{"explain", "posenc", "--seq", "03", "--dim", "004"}, " 3 positions\nof width 4:\n"},
        {{"gradcheck", "--op", "softmax", "--eps", "1.E-2"}, " with eps 0.01, "},
        {{"bench", "matmul", "--n", "017", "--threads", "02", "--reps", "01"},
         "bench: op=matmul n=17 threads=2 gflops="},
    };
    for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
        run_proc p = run_args(rows[k].args, NULL);
        ck_assert_msg(p.status == 0 && p.signal == 0, "row %zu (%s %s): status %d\n%s", k,
                      rows[k].args[0], rows[k].args[1], p.status, p.err);
        ck_assert_msg(strstr(p.out, rows[k].shows), "row %zu (%s %s): '%s' not in:\n%s", k,
                      rows[k].args[0], rows[k].args[1], rows[k].shows, p.out);
        run_free(&p);
    }

    /* train's settings, as the checkpoint records them */
    char dir[256], ck[300];
    file_path(ck, sizeof(ck), file_tmpdir(dir, sizeof(dir)), "c.st");
    run_proc p = run_cmd("train", "--steps", "010", "--seed", "010", "--seq", "+5", "--dim", "016",
                         "--heads", "02", "--batch", "0016", "--optimizer", "sgd", "--lr", "+.5e-1",
                         "--momentum", ".5", "--weight-decay", "1E-2", "--clip", "5e0", "--quiet",
                         "--save", ck, NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "result: task=lookup steps=10 ");
    run_free(&p);
    ag_train_state st;
    test_checkpoint_state(ck, &st);
    ck_assert_int_eq(st.step, 10);
    ck_assert_uint_eq(st.config.seed, 10);
    ck_assert_int_eq(st.config.model.seq, 5);
    ck_assert_int_eq(st.config.model.dim, 16);
    ck_assert_int_eq(st.config.model.heads, 2);
    ck_assert_int_eq(st.config.batch, 16);
    ck_assert_double_eq(st.config.lr, 0.05);
    ck_assert_double_eq(st.config.momentum, 0.5);
    ck_assert_double_eq(st.config.weight_decay, 0.01);
    ck_assert_double_eq(st.config.clip, 5);
    file_rmdir(dir);

    /* --flag=value takes the value literally, even one that starts with -- */
    p = run_cmd("demo", "--decimals=--1", NULL);
    run_assert_status(&p, 2);
    run_assert_has(p.err, "--decimals: '--1' is not an integer");
    run_free(&p);
}
END_TEST

/* Help goes to stdout with status 0, for every command. */
START_TEST(test_help_everywhere)
{
    static const char *const cmds[][3] = {
        {"--help", NULL, NULL},      {"help", NULL, NULL},
        {"-h", NULL, NULL},          {"demo", "--help", NULL},
        {"train", "--help", NULL},   {"grad", "-h", NULL},
        {"explain", "--help", NULL}, {"explain", "softmax", "--help"},
    };
    for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++) {
        run_proc p = run_cmd(cmds[k][0], cmds[k][1], cmds[k][2], NULL);
        run_assert_status(&p, 0);
        run_assert_has(p.out, "usage: ");
        ck_assert_msg(p.err_len == 0, "%s %s: stderr:\n%s", cmds[k][0],
                      cmds[k][1] ? cmds[k][1] : "", p.err);
        run_free(&p);
    }
}
END_TEST

/* Output that cannot be written (a full disk) is a failure, exit 1, not a
 * silent success. */
START_TEST(test_stdout_full)
{
    if (access("/dev/full", W_OK) != 0)
        return; /* not on this system */
    const char *args[] = {"demo", NULL};
    run_proc p = run_args(args, &(run_opts){.out_file = "/dev/full"});
    run_assert_status(&p, 1);
    /* one line, the reason named */
    ck_assert_str_eq(p.err, "attograd: cannot write the output: No space left on device\n");
    run_free(&p);
}
END_TEST

Suite *suite_cli_errors(void)
{
    Suite *s = suite_create("cli_errors");
    TCase *tc = tcase_create("errors");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_bad_command_line, 0, N_BAD_LINES);
    tcase_add_test(tc, test_repeated_flag_last_wins);
    tcase_add_test(tc, test_odd_but_valid_numbers);
    tcase_add_test(tc, test_help_everywhere);
    tcase_add_test(tc, test_stdout_full);
    suite_add_tcase(s, tc);
    return s;
}
