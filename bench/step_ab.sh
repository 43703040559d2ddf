#!/bin/sh
# step_ab.sh DIR...: the library of each attograd source tree DIR, built by
# its own Makefile (float, position-independent, in DIR/build/ab), as
# DIR/build/libattograd_ab.so, for bench/step_ab.c to load two of them into
# one process; and, with this script's bench/gpt_pair.c linked in, as
# DIR/build/gpt_pair.so, for bench/gpt_ab.c and compare_gpt.py --paired
# (DIR's include/attograd.h must have the GPT functions gpt_pair.c calls).
# Not part of the build.
set -e
bench=$(cd "$(dirname "$0")" && pwd)
for dir in "$@"; do
    make -C "$dir" --no-print-directory BUILDROOT=build/ab CFLAGS='-O3 -g -fPIC' \
        build/ab/float/libattograd.a >/dev/null
    (cd "$dir" && ${CC:-cc} -shared -Wl,--whole-archive build/ab/float/libattograd.a \
        -Wl,--no-whole-archive -lm -lpthread -o build/libattograd_ab.so &&
        ${CC:-cc} -O2 -shared -fPIC -Iinclude "$bench/gpt_pair.c" \
            -Wl,--whole-archive build/ab/float/libattograd.a -Wl,--no-whole-archive \
            -lm -lpthread -o build/gpt_pair.so)
done
