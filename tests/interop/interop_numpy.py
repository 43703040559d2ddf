#!/usr/bin/python3
"""interop_numpy.py - checks that attograd's safetensors files and files
written the reference way (numpy + json + struct, as the safetensors library
lays them out) load in each other's tools. Optional: not run by `make check`.
Needs numpy (Debian's python3-numpy: run it with /usr/bin/python3).

    /usr/bin/python3 tests/interop/interop_numpy.py

It builds the library (make) and tests/interop/st_tool.c, then:
  1. writes files by hand with numpy and reads them back with `st_tool dump`;
  2. has `st_tool write` write a file (F32 and F64) and reads it with a
     numpy reader that applies the reference library's checks (header is
     JSON padded with spaces, data contiguous in offset order, no bytes left
     over).
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DTYPES = {"F32": "<f4", "F64": "<f8", "I32": "<i4", "I64": "<i8"}


def build():
    subprocess.run(["make", "-s", "-C", ROOT], check=True)
    tool = os.path.join(ROOT, "build", "interop", "st_tool")
    os.makedirs(os.path.dirname(tool), exist_ok=True)
    subprocess.run(["cc", "-std=c11", "-O2", "-I", os.path.join(ROOT, "include"),
                    os.path.join(ROOT, "tests", "interop", "st_tool.c"),
                    os.path.join(ROOT, "build", "float", "libattograd.a"), "-lm", "-o", tool],
                   check=True)
    return tool


def save_reference(path, tensors, metadata=None):
    """Write like safetensors' save_file: sorted by (alignment desc, name),
    header padded with spaces to 8 bytes, data contiguous."""
    order = sorted(tensors.items(), key=lambda kv: (-kv[1].dtype.itemsize, kv[0]))
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, arr in order:
        dtype = {np.dtype("<f4"): "F32", np.dtype("<f8"): "F64"}[arr.dtype.newbyteorder("<")]
        blob = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def load_reference(path):
    """Read with the reference library's checks; returns (tensors, metadata)."""
    buf = open(path, "rb").read()
    (n,) = struct.unpack("<Q", buf[:8])
    assert n % 8 == 0, "header not padded to 8 bytes"
    text = buf[8:8 + n].decode("utf-8")
    assert text.startswith("{"), "header does not start with '{'"
    header = json.loads(text)
    metadata = header.pop("__metadata__", {})
    assert all(isinstance(v, str) for v in metadata.values())
    data = buf[8 + n:]
    out, end = {}, 0
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
        begin, stop = info["data_offsets"]
        assert begin == end, "tensor %r not contiguous" % name
        dt = np.dtype(DTYPES[info["dtype"]])
        count = int(np.prod(info["shape"], dtype=np.int64))
        assert stop - begin == count * dt.itemsize, "size of %r" % name
        out[name] = np.frombuffer(data[begin:stop], dtype=dt).reshape(info["shape"])
        end = stop
    assert end == len(data), "bytes left over after the last tensor"
    return out, metadata


def dump(tool, path):
    r = subprocess.run([tool, "dump", path], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError("st_tool dump %s: %s" % (path, r.stderr.strip()))
    tensors, metadata = {}, {}
    for line in r.stdout.splitlines():
        kind, rest = line.split(" ", 1)
        if kind == "meta":
            k, v = rest.split("=", 1)
            metadata[k] = v
        else:
            name, dtype, shape, *vals = rest.split(" ")
            shape = [int(s) for s in shape.strip("[]").split(",") if s]
            tensors[name] = (dtype, np.array([float(v) for v in vals]).reshape(shape))
    return tensors, metadata


def main():
    tool = build()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        # 1. numpy writes, attograd reads
        ours = {
            "wq": rng.standard_normal((4, 4)).astype("<f4"),
            "x": rng.standard_normal((2, 3, 4)).astype("<f4"),
            "w64": rng.standard_normal((3,)).astype("<f8"),
            "scalar": np.array(1.25, dtype="<f4"),
            "empty": np.zeros((0, 2), dtype="<f4"),
            "caf\u00e9": np.array([1.0], dtype="<f8"),
        }
        meta = {"n_heads": "2", "causal": "true", "note": "caf\u00e9 \"q\" \\"}
        path = os.path.join(tmp, "numpy.safetensors")
        save_reference(path, ours, meta)
        got, got_meta = dump(tool, path)
        assert got_meta == meta, (got_meta, meta)
        assert sorted(got) == sorted(ours), (sorted(got), sorted(ours))
        for name, arr in ours.items():
            dtype, vals = got[name]
            assert dtype == {4: "F32", 8: "F64"}[arr.dtype.itemsize], (name, dtype)
            assert vals.shape == arr.shape, (name, vals.shape, arr.shape)
            # attograd's default build is float: F64 arrives rounded to float
            want = arr.astype("<f4").astype("<f8")
            assert np.array_equal(vals, want), (name, vals, want)
        print("numpy -> attograd: %d tensors, %d metadata entries: ok" % (len(ours), len(meta)))

        # 2. attograd writes, numpy reads
        for dtype in ("F32", "F64"):
            path = os.path.join(tmp, "attograd-%s.safetensors" % dtype)
            subprocess.run([tool, "write", path, dtype], check=True)
            tensors, metadata = load_reference(path)
            want = {
                "a": np.arange(6).reshape(2, 3) / 4.0 - 1,
                "b": np.array([1e-3, 1, 1000, -1e6]),
                "scalar": np.array(2.5),
                "empty": np.zeros((0, 2)),
                "caf\u00e9": np.array([2.5]),
            }
            assert metadata == {"n_heads": "2", "note": "tab\there \"quoted\" back\\slash"}, metadata
            assert sorted(tensors) == sorted(want), sorted(tensors)
            for name, arr in want.items():
                t = tensors[name]
                assert t.dtype == np.dtype(DTYPES[dtype]), (name, t.dtype)
                assert t.shape == arr.shape, (name, t.shape, arr.shape)
                # values written from attograd's float build
                assert np.array_equal(t, arr.astype("<f4").astype(t.dtype)), (name, t, arr)
            print("attograd -> numpy (%s): %d tensors: ok" % (dtype, len(want)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
