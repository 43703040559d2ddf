#!/bin/sh
# step_ab.sh DIR...: the library of each attograd source tree DIR (float, as
# `make` builds it, position-independent) as DIR/build/libattograd_ab.so, for
# bench/step_ab.c to load two of them into one process. Not part of the build.
set -e
for dir in "$@"; do
    (cd "$dir" && mkdir -p build &&
        ${CC:-cc} -shared -fPIC -std=c11 -D_POSIX_C_SOURCE=200809L -O3 -g -fno-math-errno \
            -Iinclude src/core/*.c src/ops/*.c src/nn/*.c src/optim/*.c src/io/*.c src/check/*.c \
            -lm -lpthread -o build/libattograd_ab.so)
done
