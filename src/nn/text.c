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

/* The vocabulary of s, checked already (check_utf8): one bit per code
 * point marks the characters present. */
static ag_vocab *vocab_of(const char *s, size_t len, const char *name, char *err, size_t errlen)
{
    uint64_t *seen = ag_calloc((MAX_CODE_POINT + 64) / 64, sizeof(uint64_t));
    uint32_t *cp = NULL;
    ag_vocab *v = NULL;
    if (!seen)
        goto nomem;
    const unsigned char *u = (const unsigned char *)s;
    unsigned char ascii[128] = {0}; /* stores that wait on nothing, unlike setting bits */
    size_t i = 0;
    uint32_t c;
    while (i < len) {
        /* a piece at a time, so that a long text shows its progress and stops when asked */
        size_t end = len - i > PIECE_MASK ? i + PIECE_MASK + 1 : len;
        while (i < end) {
            if (u[i] < 0x80) { /* most text: one byte, one character */
                ascii[u[i++]] = 1;
            } else if (utf8_next(u, len, &i, &c)) {
                seen[c / 64] |= (uint64_t)1 << (c % 64);
            } else {
                break; /* not reached: checked */
            }
        }
        if (i < len && stopped(name, i / 2, len, err, errlen)) {
            free(seen); /* the first half of tokenizing: finding the characters */
            return NULL;
        }
        if (i < end)
            break;
    }
    for (c = 0; c < 128; c++)
        seen[c / 64] |= (uint64_t)ascii[c] << (c % 64);
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
    return check_utf8(s, len, "text", err, errlen) ? vocab_of(s, len, "text", err, errlen) : NULL;
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

#if defined(__GNUC__)
#define ENCODE_INLINE static inline __attribute__((always_inline))
#else
#define ENCODE_INLINE static inline
#endif

/* Characters of u from byte *i on, up to character `stop`, as ids of size
 * bytes each (1, 2, or 4: int) from id *k on, counting lines in *line.
 * Returns the code point of the first character outside v from character
 * strict_from on (*i past it), or UINT32_MAX when there is none. Inlined
 * with a constant size, so that the store is one instruction. */
ENCODE_INLINE uint32_t encode_run(const ag_vocab *v, const int *ascii, const unsigned char *u,
                                  size_t len, size_t *i, void *ids, size_t *k, size_t stop,
                                  size_t strict_from, size_t *line, const int size)
{
    size_t at = *i, n = *k, lines = *line;
    uint32_t c = 0, missing = UINT32_MAX;
    while (at < len && n < stop) {
        int id;
        if (u[at] < 0x80) { /* most text: one byte, one character, a table */
            c = u[at++];
            id = ascii[c];
        } else if (utf8_next(u, len, &at, &c)) {
            id = ag_vocab_id(v, c);
        } else {
            break; /* not reached: checked */
        }
        if (id < 0) {
            if (n >= strict_from) {
                missing = c;
                break;
            }
            id = 0; /* not evaluated: any id will do */
        }
        lines += c == '\n';
        if (size == 1)
            ((unsigned char *)ids)[n++] = (unsigned char)id;
        else if (size == 2)
            ((uint16_t *)ids)[n++] = (uint16_t)id;
        else
            ((int *)ids)[n++] = id;
    }
    *i = at;
    *k = n;
    *line = lines;
    return missing;
}

/* Encode s into ids of size bytes each, naming s in messages (NULL: no
 * name). checked: s is known to be UTF-8. A character outside v is an
 * error from character number `strict_from` on; before it, id 0. half: the
 * second half of tokenizing (vocab_of was the first), for the progress
 * shown. ids may be s itself when size is 1: id k is written after
 * character k's bytes are read, and they start at byte k or later. */
static ag_status encode(const ag_vocab *v, const char *s, size_t len, void *ids, int size,
                        size_t *n, const char *name, size_t strict_from, int half, int checked,
                        char *err, size_t errlen)
{
    const unsigned char *u = (const unsigned char *)s;
    const char *sep = name ? ": " : "";
    name = name ? name : "";
    if (!checked && !ag_utf8_valid(u, len)) {
        size_t line, off;
        find_invalid(u, len, &line, &off);
        return ag_err(AG_ERR_FORMAT, err, errlen,
                      "%s%snot UTF-8 text: invalid byte 0x%02x on line %zu (byte %zu)", name, sep,
                      u[off], line, off);
    }
    int ascii[128]; /* the ids of one-byte characters, -1 when not in v */
    for (uint32_t c = 0; c < 128; c++)
        ascii[c] = ag_vocab_id(v, c);
    size_t i = 0, k = 0, line = 1;
    while (i < len) {
        /* a piece at a time, so that a long text shows its progress and stops when asked */
        if (k > 0 && stopped(name, half ? len / 2 + i / 2 : i, len, err, errlen))
            return AG_ERR_STOPPED;
        size_t stop = k + PIECE_MASK + 1, k0 = k;
        uint32_t c;
        if (size == 1)
            c = encode_run(v, ascii, u, len, &i, ids, &k, stop, strict_from, &line, 1);
        else if (size == 2)
            c = encode_run(v, ascii, u, len, &i, ids, &k, stop, strict_from, &line, 2);
        else
            c = encode_run(v, ascii, u, len, &i, ids, &k, stop, strict_from, &line, 4);
        if (c != UINT32_MAX) {
            char label[32];
            return ag_err(AG_ERR_ARG, err, errlen,
                          "%s%scharacter %s on line %zu%s is not in the vocabulary", name, sep,
                          char_label(c, label, sizeof(label)), line,
                          strict_from ? " (in the validation part, the last 10%)" : "");
        }
        if (k == k0)
            break; /* not reached: checked */
    }
    *n = k;
    return AG_OK;
}

ag_status ag_vocab_encode(const ag_vocab *v, const char *s, size_t len, int *ids, size_t *n,
                          char *err, size_t errlen)
{
    if (!v || (!s && len) || !ids || !n)
        return ag_err(AG_ERR_ARG, err, errlen, "vocabulary: encode: a NULL argument");
    return encode(v, s, len, ids, (int)sizeof(int), n, NULL, 0, 0, 0, err, errlen);
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
        st = encode(v, s, len, out, (int)sizeof(int), n, NULL, 0, 0, 0, err, errlen);
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

int ag_text_id_size(int n)
{
    return n <= 256 ? 1 : 2; /* a vocabulary holds at most AG_VOCAB_MAX = 65536: 4 never */
}

/* ag_text_parse, and with val_only the training part's characters need
 * not be in vocab (ag_text_load_eval). own: s's buffer when the caller
 * gives it up (ag_text_load), to hold one-byte ids in place, shrunk to
 * them; parse frees it in every case. */
static ag_status parse(const char *s, size_t len, const char *name, const ag_vocab *vocab,
                       int val_only, unsigned char *own, ag_text **out, char *err, size_t errlen)
{
    ag_status st = AG_ERR_NOMEM;
    ag_text *t = NULL;
    if (!out) {
        st = ag_err(AG_ERR_ARG, err, errlen, "text: out is NULL");
        goto fail;
    }
    *out = NULL;
    name = name ? name : "<text>";
    if (!s && len) {
        st = ag_err(AG_ERR_ARG, err, errlen, "%s: the text is NULL", name);
        goto fail;
    }
    if (len > AG_TEXT_MAX_BYTES) {
        st =
            ag_err(AG_ERR_FORMAT, err, errlen, "%s: larger than %u bytes", name, AG_TEXT_MAX_BYTES);
        goto fail;
    }
    if (!check_utf8(s, len, name, err, errlen)) {
        st = AG_ERR_FORMAT;
        goto fail;
    }
    t = ag_calloc(1, sizeof(*t));
    if (!t)
        goto nomem;
    if (vocab) {
        t->vocab = vocab_make(vocab->cp, vocab->n);
        if (!t->vocab)
            goto nomem;
    } else if (!(t->vocab = vocab_of(s, len, name, err, errlen))) {
        /* too many characters, interrupted (or out of memory), said in err */
        st = ag_interrupted() ? AG_ERR_STOPPED : AG_ERR_FORMAT;
        goto fail;
    }
    t->id_size = ag_text_id_size(t->vocab->n);
    /* a character is at least one byte: len ids are room enough */
    t->ids = own && t->id_size == 1 ? own : ag_malloc(len * (size_t)t->id_size);
    if (!t->ids)
        goto nomem;
    size_t strict_from = 0;
    if (val_only && vocab) { /* the characters before the validation part */
        size_t chars = 0;
        for (size_t i = 0; i < len; i++)
            chars += ((unsigned char)s[i] & 0xC0) != 0x80;
        strict_from = chars * 9 / 10;
    }
    st = encode(t->vocab, s, len, t->ids, t->id_size, &t->len, name, strict_from, !vocab, 1, err,
                errlen);
    if (t->ids == own) {
        own = NULL; /* the text's now */
        void *fit = st == AG_OK && t->len < len ? realloc(t->ids, t->len ? t->len : 1) : NULL;
        t->ids = fit ? fit : t->ids;
    }
    if (st != AG_OK)
        goto fail;
    if (len > PIECE_MASK)
        ag_progress_report("tokenizing", (double)len, (double)len);
    t->n_train = t->len * 9 / 10; /* len <= AG_TEXT_MAX_BYTES: no overflow */
    *out = t;
    free(own);
    return AG_OK;
nomem:
    ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", name);
fail:
    ag_text_free(t);
    free(own);
    return st;
}

ag_status ag_text_parse(const char *s, size_t len, const char *name, const ag_vocab *vocab,
                        ag_text **out, char *err, size_t errlen)
{
    return parse(s, len, name, vocab, 0, NULL, out, err, errlen);
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
    /* the bytes are given up: one-byte ids replace them, and the raw text is not kept */
    return parse((const char *)buf, len, path, vocab, val_only, buf, out, err, errlen);
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

int ag_text_id(const ag_text *t, size_t i)
{
    return t->id_size == 1 ? ((const unsigned char *)t->ids)[i] : ((const uint16_t *)t->ids)[i];
}

void ag_text_ids(const ag_text *t, size_t from, size_t n, int *out)
{
    if (t->id_size == 1) {
        const unsigned char *p = (const unsigned char *)t->ids + from;
        for (size_t i = 0; i < n; i++)
            out[i] = p[i];
    } else {
        const uint16_t *p = (const uint16_t *)t->ids + from;
        for (size_t i = 0; i < n; i++)
            out[i] = p[i];
    }
}

void ag_text_batch(const ag_text *t, int split, int batch, int seq, ag_rng *rng, int *x, int *y)
{
    size_t start = split == AG_SPLIT_VAL ? t->n_train : 0;
    size_t len = split == AG_SPLIT_VAL ? t->len - t->n_train : t->n_train;
    size_t T = (size_t)seq;
    for (int b = 0; b < batch; b++) {
        size_t i = ag_rng_below(rng, (uint32_t)(len - T)); /* len <= 2^30, see ag_text_parse */
        ag_text_ids(t, start + i, T, x + (size_t)b * T);
        ag_text_ids(t, start + i + 1, T, y + (size_t)b * T);
    }
}

size_t ag_text_windows(const ag_text *t, int seq)
{
    if (!t)
        return 0;
    size_t val = t->len - t->n_train;
    return seq < 1 || val < 1 ? 0 : (val - 1) / (size_t)seq;
}
