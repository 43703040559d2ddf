/*
 * text.c - characters as tokens. The vocabulary is the sorted set of
 * distinct Unicode code points of a UTF-8 text, so token ids follow the
 * characters' order and any text (a play, a program, Chinese) works without
 * a trained tokenizer. A text is split by characters: the first 90% train,
 * the last 10% validate. Training draws random windows; the validation loss
 * walks every non-overlapping window, so that it is one deterministic number.
 */
#include "../io/io.h"
#include "nn.h"

#include <stdlib.h>
#include <string.h>

struct ag_vocab {
    int n;        /* V */
    uint32_t *cp; /* (n) code points, strictly increasing */
    char *chars;  /* all of them as one UTF-8 string */
};

#define MAX_CODE_POINT 0x10FFFFu

/* The code point at s[*i] (valid UTF-8 of len bytes), advancing *i; returns
 * 0 with *i unchanged at an invalid sequence. */
static int utf8_next(const unsigned char *s, size_t len, size_t *i, uint32_t *cp)
{
    size_t k = *i;
    size_t n = s[k] < 0x80 ? 1 : (s[k] & 0xE0) == 0xC0 ? 2 : (s[k] & 0xF0) == 0xE0 ? 3 : 4;
    if (len - k < n || !ag_utf8_valid(s + k, n))
        return 0;
    uint32_t c = n == 1 ? s[k] : n == 2 ? s[k] & 0x1Fu : n == 3 ? s[k] & 0x0Fu : s[k] & 0x07u;
    for (size_t j = 1; j < n; j++)
        c = (c << 6) | (s[k + j] & 0x3Fu);
    *cp = c;
    *i = k + n;
    return 1;
}

static size_t utf8_put(uint32_t c, char *o)
{
    if (c < 0x80) {
        o[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (char)(0xC0 | (c >> 6));
        o[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (char)(0xE0 | (c >> 12));
        o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (c >> 18));
    o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3F));
    o[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* Where the first invalid byte of s is, for a message: its line (1-based)
 * and byte offset. */
static void find_invalid(const unsigned char *s, size_t len, size_t *line, size_t *offset)
{
    size_t i = 0;
    uint32_t c;
    *line = 1;
    while (i < len && utf8_next(s, len, &i, &c))
        *line += c == '\n';
    *offset = i;
}

/* A message's view of a character: "'z' (U+007A)", or just "U+000A" for a
 * control character. */
static const char *char_label(uint32_t c, char *buf, size_t len)
{
    char u[5] = {0};
    if (c < 0x20 || c == 0x7F || (c >= 0x80 && c < 0xA0))
        snprintf(buf, len, "U+%04X", (unsigned)c);
    else {
        utf8_put(c, u);
        snprintf(buf, len, "'%s' (U+%04X)", u, (unsigned)c);
    }
    return buf;
}

/* Make a vocabulary from n strictly increasing code points (copied). */
static ag_vocab *vocab_make(const uint32_t *cp, int n)
{
    ag_vocab *v = ag_calloc(1, sizeof(*v));
    if (!v)
        return NULL;
    v->n = n;
    v->cp = ag_malloc((size_t)n * sizeof(uint32_t));
    v->chars = ag_malloc((size_t)n * 4 + 1);
    if (!v->cp || !v->chars) {
        ag_vocab_free(v);
        return NULL;
    }
    memcpy(v->cp, cp, (size_t)n * sizeof(uint32_t));
    size_t k = 0;
    for (int i = 0; i < n; i++)
        k += utf8_put(cp[i], v->chars + k);
    v->chars[k] = '\0';
    return v;
}

/* Check that s is UTF-8 text: not empty, valid, no NUL. */
static int check_utf8(const char *s, size_t len, const char *name, char *err, size_t errlen)
{
    const unsigned char *u = (const unsigned char *)s;
    if (len == 0) {
        ag_err(AG_ERR_ARG, err, errlen, "%s: the text is empty", name);
        return 0;
    }
    if (!ag_utf8_valid(u, len)) {
        size_t line, off;
        find_invalid(u, len, &line, &off);
        ag_err(AG_ERR_ARG, err, errlen,
               "%s: not UTF-8 text: invalid byte 0x%02x on line %zu (byte %zu)", name, u[off], line,
               off);
        return 0;
    }
    const char *nul = memchr(s, '\0', len);
    if (nul) {
        ag_err(AG_ERR_ARG, err, errlen, "%s: a NUL byte at byte %zu: not text", name,
               (size_t)(nul - s));
        return 0;
    }
    return 1;
}

/* Every PIECE_MASK + 1 characters, a long text's reading shows its
 * progress (bytes done of len) and stops when interrupted: 1 with the
 * message, or 0 to go on. */
#define PIECE_MASK ((1u << 20) - 1)
static int stopped(const char *name, size_t done, size_t len, char *err, size_t errlen)
{
    if (ag_progress_report("tokenizing", (double)done, (double)len) == AG_OK)
        return 0;
    ag_err(AG_ERR_STOPPED, err, errlen, "%s: stopped while tokenizing (interrupted)",
           name ? name : "text");
    return 1;
}

static ag_vocab *vocab_of(const char *s, size_t len, const char *name, char *err, size_t errlen)
{
    if (!check_utf8(s, len, name, err, errlen))
        return NULL;
    /* one bit per code point marks the characters present */
    uint64_t *seen = ag_calloc((MAX_CODE_POINT + 64) / 64, sizeof(uint64_t));
    uint32_t *cp = NULL;
    ag_vocab *v = NULL;
    if (!seen)
        goto nomem;
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    uint32_t c;
    for (size_t k = 0; i < len && utf8_next(u, len, &i, &c); k++) {
        seen[c / 64] |= (uint64_t)1 << (c % 64);
        if ((k & PIECE_MASK) == PIECE_MASK && stopped(name, i / 2, len, err, errlen)) {
            free(seen); /* the first half of tokenizing: finding the characters */
            return NULL;
        }
    }
    size_t n = 0;
    for (c = 0; c <= MAX_CODE_POINT; c++)
        n += seen[c / 64] >> (c % 64) & 1;
    if (n > AG_VOCAB_MAX) {
        ag_err(AG_ERR_ARG, err, errlen,
               "%s: %zu distinct characters; a vocabulary holds at most %d", name, n, AG_VOCAB_MAX);
        free(seen);
        return NULL;
    }
    cp = ag_malloc(n * sizeof(uint32_t));
    if (!cp)
        goto nomem;
    n = 0;
    for (c = 0; c <= MAX_CODE_POINT; c++)
        if (seen[c / 64] >> (c % 64) & 1)
            cp[n++] = c;
    v = vocab_make(cp, (int)n);
    free(seen);
    free(cp);
    if (!v)
        ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", name);
    return v;
nomem:
    free(seen);
    ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", name);
    return NULL;
}

ag_vocab *ag_vocab_from_utf8(const char *s, size_t len, char *err, size_t errlen)
{
    if (!s) {
        ag_err(AG_ERR_ARG, err, errlen, "vocabulary: the text is NULL");
        return NULL;
    }
    return vocab_of(s, len, "text", err, errlen);
}

ag_vocab *ag_vocab_from_chars(const char *chars, char *err, size_t errlen)
{
    if (!chars) {
        ag_err(AG_ERR_ARG, err, errlen, "vocabulary: the characters are NULL");
        return NULL;
    }
    size_t len = strlen(chars);
    if (!check_utf8(chars, len, "vocabulary", err, errlen))
        return NULL;
    uint32_t *cp = ag_malloc(len * sizeof(uint32_t));
    if (!cp) {
        ag_err(AG_ERR_NOMEM, err, errlen, "vocabulary: out of memory");
        return NULL;
    }
    const unsigned char *u = (const unsigned char *)chars;
    size_t i = 0, n = 0;
    while (i < len && utf8_next(u, len, &i, &cp[n])) {
        if (n > 0 && cp[n] <= cp[n - 1]) {
            char a[32], b[32];
            ag_err(AG_ERR_ARG, err, errlen,
                   "vocabulary: %s follows %s: the characters must be distinct "
                   "and in increasing order",
                   char_label(cp[n], a, sizeof(a)), char_label(cp[n - 1], b, sizeof(b)));
            free(cp);
            return NULL;
        }
        n++;
    }
    ag_vocab *v = NULL;
    if (n > AG_VOCAB_MAX)
        ag_err(AG_ERR_ARG, err, errlen, "vocabulary: %zu characters; at most %d", n, AG_VOCAB_MAX);
    else if (!(v = vocab_make(cp, (int)n)))
        ag_err(AG_ERR_NOMEM, err, errlen, "vocabulary: out of memory");
    free(cp);
    return v;
}

void ag_vocab_free(ag_vocab *v)
{
    if (!v)
        return;
    free(v->cp);
    free(v->chars);
    free(v);
}

int ag_vocab_size(const ag_vocab *v)
{
    return v ? v->n : 0;
}

uint32_t ag_vocab_char(const ag_vocab *v, int id)
{
    return v && id >= 0 && id < v->n ? v->cp[id] : 0;
}

int ag_vocab_id(const ag_vocab *v, uint32_t c)
{
    if (!v)
        return -1;
    int lo = 0, hi = v->n; /* binary search over the sorted code points */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (v->cp[mid] < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < v->n && v->cp[lo] == c ? lo : -1;
}

const char *ag_vocab_chars(const ag_vocab *v)
{
    return v ? v->chars : "";
}

size_t ag_vocab_utf8(const ag_vocab *v, int id, char *buf)
{
    if (!v || id < 0 || id >= v->n) {
        buf[0] = '\0';
        return 0;
    }
    size_t n = utf8_put(v->cp[id], buf);
    buf[n] = '\0';
    return n;
}

/* Encode s, naming it in messages (NULL: no name). A character outside v
 * is an error from character number `strict_from` on; before it, id 0.
 * half: the second half of tokenizing (vocab_of was the first), for the
 * progress shown. */
static ag_status encode(const ag_vocab *v, const char *s, size_t len, int *ids, size_t *n,
                        const char *name, size_t strict_from, int half, char *err, size_t errlen)
{
    const unsigned char *u = (const unsigned char *)s;
    const char *sep = name ? ": " : "";
    name = name ? name : "";
    if (!ag_utf8_valid(u, len)) {
        size_t line, off;
        find_invalid(u, len, &line, &off);
        return ag_err(AG_ERR_FORMAT, err, errlen,
                      "%s%snot UTF-8 text: invalid byte 0x%02x on line %zu (byte %zu)", name, sep,
                      u[off], line, off);
    }
    size_t i = 0, k = 0, line = 1;
    uint32_t c;
    while (i < len && utf8_next(u, len, &i, &c)) {
        if ((k & PIECE_MASK) == PIECE_MASK &&
            stopped(name, half ? len / 2 + i / 2 : i, len, err, errlen))
            return AG_ERR_STOPPED;
        int id = ag_vocab_id(v, c);
        if (id < 0 && k < strict_from) {
            id = 0; /* not evaluated: any id will do */
        } else if (id < 0) {
            char label[32];
            return ag_err(AG_ERR_ARG, err, errlen,
                          "%s%scharacter %s on line %zu%s is not in the vocabulary", name, sep,
                          char_label(c, label, sizeof(label)), line,
                          strict_from ? " (in the validation part, the last 10%)" : "");
        }
        line += c == '\n';
        ids[k++] = id;
    }
    *n = k;
    return AG_OK;
}

ag_status ag_vocab_encode(const ag_vocab *v, const char *s, size_t len, int *ids, size_t *n,
                          char *err, size_t errlen)
{
    if (!v || (!s && len) || !ids || !n)
        return ag_err(AG_ERR_ARG, err, errlen, "vocabulary: encode: a NULL argument");
    return encode(v, s, len, ids, n, NULL, 0, 0, err, errlen);
}

ag_status ag_vocab_prompt(const ag_vocab *v, const char *s, size_t len, int **ids, size_t *n,
                          char *err, size_t errlen)
{
    if (!v || (!s && len) || !ids || !n)
        return ag_err(AG_ERR_ARG, err, errlen, "vocabulary: prompt: a NULL argument");
    *ids = NULL;
    *n = 0;
    int *out = ag_malloc((len ? len : 1) * sizeof(int));
    if (!out)
        return ag_err(AG_ERR_NOMEM, err, errlen, "vocabulary: prompt: out of memory");
    ag_status st = AG_OK;
    if (len == 0) { /* start where a text starts anew, after a newline */
        int nl = ag_vocab_id(v, '\n');
        out[0] = nl >= 0 ? nl : 0;
        *n = 1;
    } else {
        st = encode(v, s, len, out, n, NULL, 0, 0, err, errlen);
    }
    if (st != AG_OK) {
        free(out);
        *n = 0;
        return st;
    }
    *ids = out;
    return AG_OK;
}

/* ---- texts ---- */

/* ag_text_parse, and with val_only the training part's characters need
 * not be in vocab (ag_text_load_eval). */
static ag_status parse(const char *s, size_t len, const char *name, const ag_vocab *vocab,
                       int val_only, ag_text **out, char *err, size_t errlen)
{
    if (!out)
        return ag_err(AG_ERR_ARG, err, errlen, "text: out is NULL");
    *out = NULL;
    name = name ? name : "<text>";
    if (!s && len)
        return ag_err(AG_ERR_ARG, err, errlen, "%s: the text is NULL", name);
    if (len > AG_TEXT_MAX_BYTES)
        return ag_err(AG_ERR_FORMAT, err, errlen, "%s: larger than %u bytes", name,
                      AG_TEXT_MAX_BYTES);
    if (!check_utf8(s, len, name, err, errlen))
        return AG_ERR_FORMAT;
    ag_text *t = ag_calloc(1, sizeof(*t));
    if (!t)
        return ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", name);
    ag_status st = AG_ERR_NOMEM;
    if (vocab) {
        t->vocab = vocab_make(vocab->cp, vocab->n);
        if (!t->vocab)
            goto nomem;
    } else if (!(t->vocab = vocab_of(s, len, name, err, errlen))) {
        /* too many characters, interrupted (or out of memory), said in err */
        st = ag_interrupted() ? AG_ERR_STOPPED : AG_ERR_FORMAT;
        goto fail;
    }
    t->ids = ag_malloc(len * sizeof(int)); /* a character is at least one byte */
    if (!t->ids)
        goto nomem;
    size_t strict_from = 0;
    if (val_only && vocab) { /* the characters before the validation part */
        size_t chars = 0;
        for (size_t i = 0; i < len; i++)
            chars += ((unsigned char)s[i] & 0xC0) != 0x80;
        strict_from = chars * 9 / 10;
    }
    st = encode(t->vocab, s, len, t->ids, &t->len, name, strict_from, !vocab, err, errlen);
    if (st != AG_OK)
        goto fail;
    if (len > PIECE_MASK)
        ag_progress_report("tokenizing", (double)len, (double)len);
    t->n_train = t->len * 9 / 10; /* len <= AG_TEXT_MAX_BYTES: no overflow */
    *out = t;
    return AG_OK;
nomem:
    ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", name);
fail:
    ag_text_free(t);
    return st;
}

ag_status ag_text_parse(const char *s, size_t len, const char *name, const ag_vocab *vocab,
                        ag_text **out, char *err, size_t errlen)
{
    return parse(s, len, name, vocab, 0, out, err, errlen);
}

static ag_status load(const char *path, const ag_vocab *vocab, int val_only, ag_text **out,
                      char *err, size_t errlen)
{
    if (!out || !path)
        return ag_err(AG_ERR_ARG, err, errlen, "text: %s is NULL", out ? "path" : "out");
    *out = NULL;
    unsigned char *buf;
    size_t len;
    ag_status st = ag_io_read_file(path, AG_TEXT_MAX_BYTES, &buf, &len, err, errlen);
    if (st != AG_OK)
        return st;
    st = parse((const char *)buf, len, path, vocab, val_only, out, err, errlen);
    free(buf);
    return st;
}

ag_status ag_text_load(const char *path, const ag_vocab *vocab, ag_text **out, char *err,
                       size_t errlen)
{
    return load(path, vocab, 0, out, err, errlen);
}

ag_status ag_text_load_eval(const char *path, const ag_vocab *vocab, ag_text **out, char *err,
                            size_t errlen)
{
    if (!vocab)
        return ag_err(AG_ERR_ARG, err, errlen, "text: the vocabulary is NULL");
    return load(path, vocab, 1, out, err, errlen);
}

void ag_text_free(ag_text *t)
{
    if (!t)
        return;
    ag_vocab_free(t->vocab);
    free(t->ids);
    free(t);
}

ag_status ag_text_check_seq(const ag_text *t, int seq, char *err, size_t errlen)
{
    if (!t || seq < 1)
        return ag_err(AG_ERR_ARG, err, errlen, "text: a window of %d characters", seq);
    size_t need = (size_t)seq + 1, val = t->len - t->n_train;
    if (t->n_train < need || val < need)
        return ag_err(AG_ERR_ARG, err, errlen,
                      "a text of %zu characters is too short for windows of %d: its training "
                      "part (90%%) has %zu and its validation part (10%%) %zu, each needs %zu",
                      t->len, seq, t->n_train, val, need);
    return AG_OK;
}

void ag_text_batch(const ag_text *t, int split, int batch, int seq, ag_rng *rng, int *x, int *y)
{
    const int *part = split == AG_SPLIT_VAL ? t->ids + t->n_train : t->ids;
    size_t len = split == AG_SPLIT_VAL ? t->len - t->n_train : t->n_train;
    size_t T = (size_t)seq;
    for (int b = 0; b < batch; b++) {
        size_t i = ag_rng_below(rng, (uint32_t)(len - T)); /* len <= 2^30, see ag_text_parse */
        memcpy(x + (size_t)b * T, part + i, T * sizeof(int));
        memcpy(y + (size_t)b * T, part + i + 1, T * sizeof(int));
    }
}

size_t ag_text_windows(const ag_text *t, int seq)
{
    size_t val = t->len - t->n_train;
    return seq < 1 || val < 1 ? 0 : (val - 1) / (size_t)seq;
}
