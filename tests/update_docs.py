#!/usr/bin/env python3
"""update_docs.py - rewrite the expected output of the docs' commands.

After a change that alters what a documented command prints, run

    make && python3 tests/update_docs.py            # every docs/*.md
    python3 tests/update_docs.py docs/tutorial.md   # one file

then read `git diff docs/` before committing: the diff is exactly what the
change did to the documented output. A block is rewritten only where the
doc shows the whole output; an excerpt (a block with a `...` line) is left
alone and reported when it no longer matches, for you to edit by hand.
The doc-test convention itself is in docs/README.md and tests/test_docs.c,
which `make check` runs.

Commands run as in the test: /bin/sh in a temporary directory that holds
only a link `examples` to the repository's examples/, the
float build's attograd first on PATH, stdout and stderr together.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

BIN = os.environ.get("AG_BIN", "build/float/attograd")


def run(cmd):
    bindir = os.path.dirname(os.path.abspath(BIN))
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    with tempfile.TemporaryDirectory(prefix="ag_doc_") as tmp:
        os.symlink(os.path.abspath("examples"), os.path.join(tmp, "examples"))
        p = subprocess.run(["/bin/sh", "-c", "{ %s\n} 2>&1" % cmd], cwd=tmp, env=env,
                           stdout=subprocess.PIPE, check=False)
    out = p.stdout.decode()
    lines = [l.rstrip() for l in out.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    return p.returncode, lines


def timings(line):
    line = re.sub(r"seconds=[0-9.]+", "seconds=#", line)
    line = re.sub(r"steps/s [0-9.]+", "steps/s #", line)
    return re.sub(r"[0-9.]+s left", "#s left", line)


def matches(want, got):
    """The `...` wildcard match of tests/test_docs.c (without masking)."""
    if not want:
        return not got
    if want[0] == "...":
        return any(matches(want[1:], got[k:]) for k in range(len(got) + 1))
    return bool(got) and timings(want[0]) == timings(got[0]) and matches(want[1:], got[1:])


def update(path):
    with open(path) as f:
        lines = f.read().split("\n")
    out, i, changed = [], 0, 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if not line.startswith("```console") or i >= len(lines) or \
                not lines[i].startswith("$ attograd"):
            continue
        needs = re.search(r"needs-(\S+)", line)
        if needs and not shutil.which(needs.group(1)):
            print("%s: skipped a block that needs %s (not installed)" % (path, needs.group(1)))
            continue
        while i < len(lines) and not lines[i].startswith("```"):
            cmd = lines[i][2:]
            out.append(lines[i])
            i += 1
            want = []
            while i < len(lines) and not lines[i].startswith("```") and \
                    not lines[i].startswith("$ "):
                want.append(lines[i])
                i += 1
            status, got = run(cmd)
            where = "%s: `%s`" % (path, cmd)
            if status != 0:
                print("%s exited with status %d" % (where, status))
            if "..." in want:
                if not matches(want, got):
                    print("%s: the excerpt no longer matches; edit it by hand. Output:\n  %s"
                          % (where, "\n  ".join(got)))
                out.extend(want)
            else:
                if [timings(l) for l in want] != [timings(l) for l in got]:
                    changed += 1
                    print("%s: updated" % where)
                out.extend(got)
    if changed:
        with open(path, "w") as f:
            f.write("\n".join(out))
    return changed


def main():
    files = sys.argv[1:] or sorted(glob.glob("docs/*.md"))
    if not os.access(BIN, os.X_OK):
        sys.exit("%s is missing: run make first (or set AG_BIN)" % BIN)
    total = sum(update(p) for p in files)
    print("%d command output(s) updated" % total)


if __name__ == "__main__":
    main()
