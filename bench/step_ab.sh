#!/bin/sh
# step_ab.sh DIR...: the library of each attograd source tree DIR, built by
# its own Makefile (float, position-independent, in DIR/build/ab), as
# DIR/build/libattograd_ab.so, for bench/step_ab.c or bench/gpt_ab.c to load
# two of them into one process. Not part of the build.
set -e
for dir in "$@"; do
    make -C "$dir" --no-print-directory BUILDROOT=build/ab CFLAGS='-O3 -g -fPIC' \
        build/ab/float/libattograd.a >/dev/null
    (cd "$dir" && ${CC:-cc} -shared -Wl,--whole-archive build/ab/float/libattograd.a \
        -Wl,--no-whole-archive -lm -lpthread -o build/libattograd_ab.so)
done
