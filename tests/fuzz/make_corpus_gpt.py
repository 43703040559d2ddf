#!/usr/bin/python3
"""make_corpus_gpt.py - writes the seed corpus for fuzz_gpt_file into
tests/fuzz/corpus_gpt/ (no .safetensors suffix: .gitignore ignores that):
small valid GPT checkpoints in attograd's layout (a model's, a trainer's,
with biases, with each ablation, without blocks, without the tied head, in
F64, at the step limit, with weights so large the logits overflow) and
variants that disagree with themselves (a block missing or left over, a
shape or the vocabulary changed, a tensor added, a NaN). Standard library
only; the layout is docs/cli.md's "GPT checkpoints".

    /usr/bin/python3 tests/fuzz/make_corpus_gpt.py
"""
import json
import os
import random
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus_gpt")


def pack(items, meta, dtype="F32"):
    """items: (name, shape, values) -> a safetensors file, names in order."""
    header, data = {"__metadata__": meta}, b""
    for name, shape, values in sorted(items):
        fmt = {"F32": "<%df", "F64": "<%dd"}[dtype] % len(values)
        blob = struct.pack(fmt, *values)
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def model(vocab="\nabcd", seq=4, dim=4, heads=2, layers=1, bias=False, mlp=True,
          layernorm=True, posenc=True, trainer=False, step=3, seed=1, scale=0.1):
    """A checkpoint's tensors and metadata for these settings."""
    rng = random.Random(seed)
    V, T, C = len(vocab), seq, dim

    def rand(n):
        return [rng.gauss(0, scale) for _ in range(n)]

    items = []

    def add(name, shape, values=None):
        n = 1
        for d in shape:
            n *= d
        items.append((name, shape, values if values is not None else rand(n)))

    add("transformer.wte.weight", [V, C])
    if posenc:
        add("transformer.wpe.weight", [T, C])
    for i in range(layers):
        p = "transformer.h.%d." % i
        if layernorm:
            add(p + "ln_1.weight", [C], [1.0] * C)
            if bias:
                add(p + "ln_1.bias", [C], [0.0] * C)
        add(p + "attn.c_attn.weight", [3 * C, C])
        if bias:
            add(p + "attn.c_attn.bias", [3 * C])
        add(p + "attn.c_proj.weight", [C, C])
        if bias:
            add(p + "attn.c_proj.bias", [C])
        if mlp:
            if layernorm:
                add(p + "ln_2.weight", [C], [1.0] * C)
                if bias:
                    add(p + "ln_2.bias", [C], [0.0] * C)
            add(p + "mlp.c_fc.weight", [4 * C, C])
            if bias:
                add(p + "mlp.c_fc.bias", [4 * C])
            add(p + "mlp.c_proj.weight", [C, 4 * C])
            if bias:
                add(p + "mlp.c_proj.bias", [C])
    if layernorm:
        add("transformer.ln_f.weight", [C], [1.0] * C)
        if bias:
            add("transformer.ln_f.bias", [C], [0.0] * C)
    items.append(("lm_head.weight", [V, C], items[0][2]))
    tf = {True: "true", False: "false"}
    meta = {"format": "attograd-gpt", "version": "1", "vocab": vocab,
            "vocab_size": str(V), "block_size": str(T), "n_layer": str(layers),
            "n_head": str(heads), "n_embd": str(C), "bias": tf[bias], "dropout": "0",
            "residual": "true", "layernorm": tf[layernorm], "mlp": tf[mlp],
            "posenc": "learned" if posenc else "none"}
    if trainer:
        weights = [t for t in items if t[0] != "lm_head.weight"]
        for name, shape, values in weights:
            items.append(("optim.%s.m" % name, shape, rand(len(values))))
            items.append(("optim.%s.v" % name, shape, [abs(x) for x in rand(len(values))]))
        meta.update({"batch": "2", "lr": "0.001", "min_lr": "0.0001", "warmup": "2",
                     "decay_steps": "10", "beta1": "0.9", "beta2": "0.99", "eps": "1e-08",
                     "weight_decay": "0.1", "clip": "1", "seed": "1", "step": str(step),
                     "optim_steps": str(step), "data_rng": "12345", "dropout_rng": "678"})
    return items, meta


def edit(items, drop=None, extra=None, nan=None):
    out = [t for t in items if t[0] != drop]
    if extra:
        out.append(extra)
    if nan:
        out = [(n, s, [float("nan")] + v[1:] if n == nan else v) for n, s, v in out]
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    seeds = {}
    items, meta = model()
    seeds["valid_model"] = pack(items, meta)
    items, meta = model(trainer=True)
    seeds["valid_trainer"] = pack(items, meta)
    seeds["valid_trainer_f64"] = pack(items, meta, "F64")
    items, meta = model(bias=True, trainer=True, seed=2)
    seeds["valid_bias"] = pack(items, meta)
    items, meta = model(mlp=False, layernorm=False, posenc=False, layers=2, seed=3)
    seeds["valid_ablations"] = pack(items, meta)
    items, meta = model(layers=0, seed=4)
    seeds["valid_no_blocks"] = pack(items, meta)
    items, meta = model(layers=2, vocab="\n !.abc\u00e9\u4e2d", seq=6, dim=6, heads=3, seed=5)
    seeds["valid_no_head"] = pack(edit(items, drop="lm_head.weight"), meta)
    items, meta = model(trainer=True, step=2000000000, seed=6)
    seeds["valid_at_the_limit"] = pack(items, meta)
    items, meta = model(scale=1e30, seed=7)
    seeds["valid_huge_weights"] = pack(items, meta)
    # disagreeing with themselves
    items, meta = model(layers=2, seed=8)
    seeds["bad_block_missing"] = pack(edit(items, drop="transformer.h.1.attn.c_proj.weight"), meta)
    seeds["bad_block_left_over"] = pack(items, dict(meta, n_layer="1"))
    seeds["bad_mlp_off"] = pack(items, dict(meta, mlp="false"))
    seeds["bad_n_embd"] = pack(items, dict(meta, n_embd="4096"))
    seeds["bad_vocab"] = pack(items, dict(meta, vocab="\nabc"))
    seeds["bad_extra"] = pack(edit(items, extra=("other", [3], [0.0, 1.0, 2.0])), meta)
    seeds["bad_nan"] = pack(edit(items, nan="transformer.h.0.mlp.c_fc.weight"), meta)
    items, meta = model(trainer=True, seed=9)
    seeds["bad_no_step"] = pack(items, {k: v for k, v in meta.items() if k != "step"})
    seeds["bad_min_lr"] = pack(items, dict(meta, min_lr="0.5"))
    for name, blob in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(blob)
    print("%d seeds in %s" % (len(seeds), OUT))


if __name__ == "__main__":
    main()
