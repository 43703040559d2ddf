/*
 * attend.c - `attograd attend`: where each head of a trained GPT looks. One
 * forward pass of the prompt (ag_gpt_attention) gives every block's
 * softmax weights; stdout gets one summary row per head (how far back it
 * looks, how much weight goes to the position itself, the previous
 * character, the current word, the last newline, the first character), then
 * a text heatmap per chosen head with the prompt's characters as labels.
 * --png draws every head in one grid, --out writes the weights as they are.
 */
#include "limits.h"
#include "opts.h"
#include "plot.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Up to this many positions a heatmap shows every weight as a percentage;
 * beyond, one shade per weight, and only the last rows. */
enum { SHORT_T = 16, LONG_ROWS = 16 };

static const ag_option options[] = {
    AG_PATH(ag_attend_opts, "--load", load_path, "CKPT", "the GPT checkpoint (required)"),
    AG_STRING(ag_attend_opts, "--prompt", prompt, "TEXT",
              "the text to run (required); every character must be in\n"
              "the checkpoint's vocabulary; beyond its context, the first\n"
              "context characters"),
    AG_INT(ag_attend_opts, "--layer", layer, 0, AG_ATTEND_MAX, -1, "L",
           "show only block L's heads (0 is the first; default all)"),
    AG_INT(ag_attend_opts, "--head", head, 0, AG_ATTEND_MAX, -1, "H",
           "show only head H of each block (0 is the first; default all)"),
    AG_PATH(ag_attend_opts, "--png", png, "FILE.png",
            "draw every head in one grid with gnuplot (blocks as rows,\n"
            "heads as columns; exit 1 when gnuplot is not installed)"),
    AG_PATH(ag_attend_opts, "--out", out, "FILE",
            "write the weights: safetensors with attn (layers, heads, T, T)\n"
            "float32 and ids (T) int64"),
};

const ag_command ag_cmd_attend_info = {
    .name = "attend",
    .run = ag_cmd_attend,
    .usage = "attograd attend --load CKPT --prompt TEXT [--layer L] [--head H] [--png FILE] "
             "[--out FILE]",
    .summary = "where each head of a trained GPT looks, for a prompt",
    .options = options,
    .n_options = AG_CLI_COUNT(options),
    .help_width = 20,
};

static int print_help(void)
{
    printf(
        "usage: %s\n\n"
        "Run a GPT checkpoint (attograd train --task text --save) on the prompt and show\n"
        "every head's attention weights: row i of a head is how much position i takes\n"
        "from each position j <= i (the causal mask keeps it from later ones). First a\n"
        "row per head that tells heads apart: the mean distance it looks back, and its\n"
        "weight on the position itself, the previous character, the current word (back\n"
        "to the last space or newline), the last newline before it and the first\n"
        "character, each averaged over the positions. Then a heatmap per head: the\n"
        "weights in percent for a prompt of up to %d characters; beyond, one shade per\n"
        "weight (' .:-=+*#%%@', a step per tenth) for the last %d rows. A newline shows as\n"
        "\u21b5, a space as \u2423, a tab as \u21e5, another control character as its picture.\n\n"
        "options:\n",
        ag_cmd_attend_info.usage, SHORT_T, LONG_ROWS);
    ag_cli_print_options(&ag_cmd_attend_info);
    return AG_EXIT_OK;
}

int ag_cli_attend_parse(int argc, char **argv, ag_attend_opts *o)
{
    const ag_command *cmd = &ag_cmd_attend_info;
    int r = ag_cli_parse(cmd, argc, argv, o, NULL);
    if (r != AG_CLI_GO)
        return r;
    if (!o->load_path)
        return ag_cli_usage_error(cmd, "--load CKPT is required: the model to look into");
    if (!o->prompt)
        return ag_cli_usage_error(cmd, "--prompt TEXT is required: the text to run");
    if (!*o->prompt)
        return ag_cli_usage_error(cmd, "--prompt is empty: give the text to run");
    return AG_CLI_GO;
}

/* ---- showing characters ---- */

const char *ag_cli_show_char(uint32_t c, char *buf)
{
    uint32_t shown = c == '\n'               ? 0x21B5
                     : c == ' '              ? 0x2423
                     : c == '\t'             ? 0x21E5
                     : c < 0x20              ? 0x2400 + c
                     : c == 0x7f             ? 0x2421
                     : c >= 0x80 && c < 0xa0 ? 0xB7
                                             : c;
    int n = 0;
    if (shown < 0x80) {
        buf[n++] = (char)shown;
    } else if (shown < 0x800) {
        buf[n++] = (char)(0xC0 | shown >> 6);
        buf[n++] = (char)(0x80 | (shown & 0x3F));
    } else if (shown < 0x10000) {
        buf[n++] = (char)(0xE0 | shown >> 12);
        buf[n++] = (char)(0x80 | (shown >> 6 & 0x3F));
        buf[n++] = (char)(0x80 | (shown & 0x3F));
    } else {
        buf[n++] = (char)(0xF0 | shown >> 18);
        buf[n++] = (char)(0x80 | (shown >> 12 & 0x3F));
        buf[n++] = (char)(0x80 | (shown >> 6 & 0x3F));
        buf[n++] = (char)(0x80 | (shown & 0x3F));
    }
    buf[n] = '\0';
    return buf;
}

/* ---- one run ---- */

typedef struct attend_run {
    const ag_attend_opts *o;
    ag_gpt_file *file;
    ag_gpt *g;
    int L, H, T;
    int *ids;        /* (T) the prompt's ids, the first T */
    uint32_t *chars; /* (T) their characters */
    char (*labels)[8];
    double *attn; /* (L, H, T, T) the weights, in double */
} attend_run;

static int is_space(uint32_t c)
{
    return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

/* What tells heads apart, for head (l, h): averages over the positions. */
typedef struct head_summary {
    double back;              /* sum_j P[i][j] (i - j): how far back */
    double self, prev, first; /* P[i][i], P[i][i-1], P[i][0] */
    double word;              /* weight on the current word: back to the last space */
    double newline;           /* P[i][n] for the last newline n < i; NAN when there is none */
} head_summary;

static head_summary summarise(const attend_run *r, const double *p)
{
    int T = r->T;
    head_summary s = {0, 0, 0, 0, 0, 0};
    int n_prev = 0, n_word = 0, n_newline = 0, last_newline = -1, word_start = 0;
    for (int i = 0; i < T; i++) {
        const double *row = p + (size_t)i * T;
        for (int j = 0; j <= i; j++)
            s.back += row[j] * (i - j) / T;
        s.self += row[i] / T;
        s.first += row[0] / T;
        if (i > 0) {
            s.prev += row[i - 1];
            n_prev++;
        }
        if (last_newline >= 0) {
            s.newline += row[last_newline];
            n_newline++;
        }
        if (is_space(r->chars[i])) {
            word_start = i + 1;
        } else {
            for (int j = word_start; j <= i; j++)
                s.word += row[j];
            n_word++;
        }
        if (r->chars[i] == '\n')
            last_newline = i;
    }
    s.prev = n_prev ? s.prev / n_prev : NAN;
    s.word = n_word ? s.word / n_word : NAN;
    s.newline = n_newline ? s.newline / n_newline : NAN;
    return s;
}

static void print_share(double v)
{
    if (isnan(v))
        printf(" %8s", "-");
    else
        printf(" %8.2f", v + 0.0);
}

static int chosen(const ag_attend_opts *o, int l, int h)
{
    return (o->layer < 0 || o->layer == l) && (o->head < 0 || o->head == h);
}

static void print_summaries(const attend_run *r)
{
    printf("\nEach head, averaged over the positions: the distance it looks back, and its\n"
           "weight on the position itself, the previous character, the current word, the\n"
           "last newline and the first character (- where the prompt has none).\n\n");
    printf("%-14s %8s %8s %8s %8s %8s %8s\n", "", "back", "self", "previous", "word", "newline",
           "first");
    for (int l = 0; l < r->L; l++)
        for (int h = 0; h < r->H; h++) {
            if (!chosen(r->o, l, h))
                continue;
            head_summary s = summarise(r, r->attn + ((size_t)l * r->H + h) * r->T * r->T);
            char name[48];
            snprintf(name, sizeof(name), "layer %d head %d", l, h);
            printf("%-14s %8.2f", name, s.back + 0.0);
            print_share(s.self);
            print_share(s.prev);
            print_share(s.word);
            print_share(s.newline);
            print_share(s.first);
            printf("\n");
        }
}

/* The shade of a weight as printed with two decimals: a step per tenth. */
static char shade(double p)
{
    static const char shades[] = " .:-=+*#%@";
    long cents = lround(p * 100);
    long k = cents / 10;
    return shades[k < 0 ? 0 : k > 9 ? 9 : k];
}

static void print_heatmap(const attend_run *r, int l, int h)
{
    int T = r->T;
    const double *p = r->attn + ((size_t)l * r->H + h) * T * T;
    int first_row = T <= SHORT_T ? 0 : T - LONG_ROWS;
    printf("\nlayer %d head %d ", l, h);
    if (T <= SHORT_T)
        printf("(row: the position that looks; column: where, in percent):\n");
    else
        printf("(the last %d of %d rows; ' .:-=+*#%%@' a step per tenth):\n", LONG_ROWS, T);
    int cell = T <= SHORT_T ? 4 : 1;
    printf("     ");
    for (int j = 0; j < T; j++)
        printf("%*s%s", cell - 1, "", r->labels[j]);
    printf("\n");
    for (int i = first_row; i < T; i++) {
        printf("  %s  ", r->labels[i]);
        for (int j = 0; j <= i; j++) {
            double w = p[(size_t)i * T + j];
            if (T <= SHORT_T) {
                long pct = lround(w * 100);
                if (pct == 0)
                    printf("%4s", ".");
                else
                    printf("%4ld", pct);
            } else {
                putchar(shade(w));
            }
        }
        printf("\n");
    }
}

/* --png: every head in a grid. Returns 1, or 0 after saying why (and *sig). */
static int draw(const attend_run *r, int *sig)
{
    char title[600], err[AG_CLI_ERR_LEN], shown[AG_QUOTE_LEN];
    snprintf(title, sizeof(title), "attention of %s: %d characters", r->o->load_path, r->T);
    const char **labels = malloc((size_t)r->T * sizeof(*labels));
    if (!labels)
        return !ag_cli_error(&ag_cmd_attend_info, "out of memory");
    for (int t = 0; t < r->T; t++)
        labels[t] = r->labels[t];
    int ok = ag_cli_plot_gpt_heads(r->o->png, title, r->L, r->H, r->T, r->attn, labels, sig, err,
                                   sizeof(err));
    free(labels);
    if (!ok)
        return !ag_cli_error(&ag_cmd_attend_info, "%s", err);
    printf("plot: %s\n", ag_quote(r->o->png, shown, sizeof(shown)));
    return 1;
}

/* --out: attn as float32 and ids as int64, and the prompt used. */
static int write_out(const attend_run *r)
{
    char err[AG_CLI_ERR_LEN], shown[AG_QUOTE_LEN];
    size_t n = (size_t)r->L * r->H * r->T * r->T;
    float *f = malloc((n ? n : 1) * sizeof(*f));
    int64_t *ids = malloc((size_t)r->T * sizeof(*ids));
    char *text = malloc((size_t)r->T * 4 + 1);
    ag_st_writer *w = ag_st_writer_new(AG_ST_F32);
    int ok = f && ids && text && w;
    if (ok) {
        for (size_t i = 0; i < n; i++)
            f[i] = (float)r->attn[i];
        size_t len = 0;
        for (int t = 0; t < r->T; t++) {
            ids[t] = r->ids[t];
            len += ag_vocab_utf8(ag_gpt_file_vocab(r->file), r->ids[t], text + len);
        }
        text[len] = '\0';
        ag_st_add_typed(w, "attn", AG_ST_F32, 4, (int[]){r->L, r->H, r->T, r->T}, f);
        ag_st_add_typed(w, "ids", AG_ST_I64, 1, &r->T, ids);
        ag_st_add_meta(w, "prompt", text);
        ok = ag_st_save(w, r->o->out, err, sizeof(err)) == AG_OK;
        if (!ok)
            ag_cli_error(&ag_cmd_attend_info, "%s", err);
    } else {
        ag_cli_error(&ag_cmd_attend_info, "out of memory");
    }
    if (ok)
        printf("saved: %s (attn %dx%dx%dx%d, ids %d)\n", ag_quote(r->o->out, shown, sizeof(shown)),
               r->L, r->H, r->T, r->T, r->T);
    ag_st_writer_free(w);
    free(text);
    free(ids);
    free(f);
    return ok;
}

/* The model, the prompt's ids and the weights. Returns AG_CLI_GO or a status. */
static int setup(attend_run *r)
{
    const ag_attend_opts *o = r->o;
    const ag_command *cmd = &ag_cmd_attend_info;
    char err[AG_CLI_ERR_LEN];
    /* one window on a tape, its attention kept: within a training step's bound */
    int loaded = ag_cli_gpt_load(cmd, o->load_path, (ag_gpt_run){.batch = 1}, "nothing was shown",
                                 &r->file, &r->g);
    if (loaded != AG_EXIT_OK)
        return loaded;
    const ag_gpt_config *c = ag_gpt_get_config(r->g);
    r->L = c->layers, r->H = c->heads;
    if (o->layer >= r->L)
        return ag_cli_usage_error(cmd, "--layer %d: %s has %d block%s (0..%d)", o->layer,
                                  o->load_path, r->L, r->L == 1 ? "" : "s", r->L - 1);
    if (o->head >= r->H)
        return ag_cli_usage_error(cmd, "--head %d: %s has %d head%s per block (0..%d)", o->head,
                                  o->load_path, r->H, r->H == 1 ? "" : "s", r->H - 1);
    size_t len = strlen(o->prompt), n = 0;
    r->ids = malloc(len * sizeof(int));
    if (!r->ids)
        return ag_cli_error(cmd, "out of memory");
    ag_status st =
        ag_vocab_encode(ag_gpt_file_vocab(r->file), o->prompt, len, r->ids, &n, err, sizeof(err));
    if (st != AG_OK)
        return ag_cli_error(cmd, "--prompt: %s of %s", err, o->load_path);
    if (n > (size_t)c->seq)
        fprintf(stderr,
                "attograd attend: note: the prompt has %zu characters, the model's context "
                "%d: the first %d are run\n",
                n, c->seq, c->seq);
    r->T = n > (size_t)c->seq ? c->seq : (int)n;
    size_t cells = (size_t)r->L * r->H * r->T * r->T;
    /* zeroed: nothing is read that the pass did not write */
    ag_real *p = calloc(cells ? cells : 1, sizeof(*p));
    r->attn = calloc(cells ? cells : 1, sizeof(*r->attn));
    r->chars = calloc((size_t)r->T, sizeof(*r->chars));
    r->labels = calloc((size_t)r->T, sizeof(*r->labels));
    if (!p || !r->attn || !r->chars || !r->labels) {
        free(p);
        return ag_cli_error(cmd, "out of memory");
    }
    for (int t = 0; t < r->T; t++) {
        r->chars[t] = ag_vocab_char(ag_gpt_file_vocab(r->file), r->ids[t]);
        ag_cli_show_char(r->chars[t], r->labels[t]);
    }
    st = ag_gpt_attention(r->g, r->ids, r->T, p, err, sizeof(err));
    for (size_t i = 0; st == AG_OK && i < cells; i++)
        r->attn[i] = (double)p[i];
    free(p);
    if (st != AG_OK)
        return ag_cli_error(cmd, "%s", err);
    return AG_CLI_GO;
}

int ag_cli_attend_run(const ag_attend_opts *o)
{
    const ag_command *cmd = &ag_cmd_attend_info;
    if (o->png && !ag_cli_have_program("gnuplot")) /* before any work */
        return ag_cli_error(cmd, "gnuplot is not installed, so no plot "
                                 "(apt-get install gnuplot-nox)");
    const ag_cli_file files[] = {
        {"--png", o->png, 1, NULL}, {"--out", o->out, 1, NULL}, {"--load", o->load_path, 0, NULL}};
    int status = ag_cli_check_files(cmd, files, AG_CLI_COUNT(files));
    if (status != AG_EXIT_OK)
        return status;
    attend_run r;
    memset(&r, 0, sizeof(r));
    r.o = o;
    status = setup(&r);
    if (status == AG_CLI_GO) {
        const ag_gpt_config *c = ag_gpt_get_config(r.g);
        printf("%s: %d block%s of %d head%s, dim %d, context %d; the prompt's %d character%s:\n  ",
               o->load_path, r.L, r.L == 1 ? "" : "s", r.H, r.H == 1 ? "" : "s", c->dim, c->seq,
               r.T, r.T == 1 ? "" : "s");
        for (int t = 0; t < r.T; t++)
            printf("%s", r.labels[t]);
        printf("\n");
        print_summaries(&r);
        for (int l = 0; l < r.L; l++)
            for (int h = 0; h < r.H; h++)
                if (chosen(o, l, h))
                    print_heatmap(&r, l, h);
        status = AG_EXIT_OK;
        int sig = 0;
        if (o->png || o->out)
            printf("\n");
        if (o->png && !draw(&r, &sig))
            status = sig ? 128 + sig : AG_EXIT_FAIL;
        if (status == AG_EXIT_OK && o->out && !write_out(&r))
            status = AG_EXIT_FAIL;
    }
    free(r.labels);
    free(r.chars);
    free(r.attn);
    free(r.ids);
    ag_gpt_free(r.g);
    ag_gpt_file_free(r.file);
    return status;
}

int ag_cmd_attend(int argc, char **argv)
{
    ag_attend_opts o;
    int r = ag_cli_attend_parse(argc, argv, &o);
    if (r == AG_CLI_HELP)
        return print_help();
    if (r != AG_CLI_GO)
        return r;
    return ag_cli_attend_run(&o);
}
