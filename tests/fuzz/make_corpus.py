#!/usr/bin/python3
"""make_corpus.py - writes the seed corpus for fuzz_safetensors into
tests/fuzz/corpus_safetensors/ (no .safetensors suffix: .gitignore
ignores that): a few small valid files in the reference
layout and one invalid file per common mistake. Standard library only.

    /usr/bin/python3 tests/fuzz/make_corpus.py
"""
import json
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus_safetensors")


def pack(header, data=b"", pad=True, raw=None):
    """8-byte little-endian length, the JSON header (spaces to 8 bytes), data."""
    text = raw if raw is not None else json.dumps(header, separators=(",", ":"))
    h = text.encode("utf-8")
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def tensors(items, meta=None):
    """items: (name, dtype, shape, values) -> header and data, contiguous."""
    header, data = {}, b""
    if meta is not None:
        header["__metadata__"] = meta
    for name, dtype, shape, values in items:
        fmt = {"F32": "<%df", "F64": "<%dd"}[dtype] % len(values)
        blob = struct.pack(fmt, *values)
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    return header, data


def main():
    os.makedirs(OUT, exist_ok=True)
    files = {}
    h, d = tensors([("wq", "F32", [2, 2], [1, 0, 0, 1]), ("x", "F32", [1, 2], [0.5, -2])],
                   {"n_heads": "1", "causal": "false"})
    files["valid_model"] = pack(h, d)
    h, d = tensors([("loss", "F64", [1], [0.25]), ("s", "F64", [], [3.0]),
                    ("e", "F32", [0, 3], [])])
    files["valid_f64_scalar_empty"] = pack(h, d)
    files["valid_empty"] = pack({})
    files["valid_escapes"] = pack(None, struct.pack("<f", 1.0), raw=(
        ' {"caf\\u00e9\\ud83d\\ude00\\n": {"shape": [1], "dtype": "F32",'
        ' "data_offsets": [0, 4]}, "__metadata__": {"k\\"": "v\\\\"}} '))
    h, d = tensors([("a", "F32", [1, 1, 1, 1, 2], [1, 2])])
    files["valid_5d"] = pack(h, d)
    files["bad_truncated"] = b"\x10\x00\x00"
    files["bad_length"] = struct.pack("<Q", 1000) + b"{}"
    h, d = tensors([("w", "F32", [2], [1, 2])])
    h["w"]["dtype"] = "F16"
    files["bad_dtype"] = pack(h, d)
    h, d = tensors([("a", "F32", [2], [1, 2]), ("b", "F32", [2], [3, 4])])
    h["b"]["data_offsets"] = [4, 12]
    files["bad_overlap"] = pack(h, d)
    h["b"]["data_offsets"] = [8, 12]
    files["bad_size"] = pack(h, d)
    files["bad_json"] = pack(None, raw='{"w": {"dtype": "F32", "shape": [1,], }}')
    files["bad_meta"] = pack({"__metadata__": {"n_heads": 2}})
    files["bad_number"] = pack(None, raw='{"w":{"dtype":"F32","shape":[18446744073709551616],'
                                         '"data_offsets":[0,4]}}')
    for name, blob in sorted(files.items()):
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(blob)
    print("wrote %d files to %s" % (len(files), OUT))


if __name__ == "__main__":
    main()
