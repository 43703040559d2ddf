#!/bin/sh
# layers.sh - check that no call runs up the layers (docs/architecture.md):
#
#   core < kernels < ops < check < optim < io < nn < cli
#
# A file may call into its own folder and into the folders before it, never
# into one after it; and no two files of the library call each other. It reads
# what each object file needs and defines (nm), so a call counts whatever
# header declared it. Usage: layers.sh BUILD_DIR (e.g. build/float).
set -eu
build=${1:?usage: layers.sh BUILD_DIR}
order="core kernels ops check optim io nn cli"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rank() { i=0; for d in $order; do [ "$d" = "$1" ] && { echo $i; return; }; i=$((i + 1)); done; echo 99; }
for o in "$build"/src/*/*.o; do
    dir=$(basename "$(dirname "$o")")
    file=src/$dir/$(basename "$o" .o).c
    [ -f "$file" ] || continue # an object left from a file since moved
    nm --defined-only "$o" | awk -v f="$file" -v r="$(rank "$dir")" '$2 ~ /^[TDRB]$/ {print $3, f, r}' >>"$tmp/defs"
    nm -u "$o" | awk -v f="$file" -v r="$(rank "$dir")" '{print $2, f, r}' >>"$tmp/uses"
done
sort -k1,1 "$tmp/defs" >"$tmp/defs.s"
sort -k1,1 "$tmp/uses" >"$tmp/uses.s"
# symbol user user_rank definer definer_rank
join "$tmp/uses.s" "$tmp/defs.s" >"$tmp/calls"
status=0
awk '$3 < $5 { print "layers: " $2 " calls " $1 " in " $4 ", a layer above it"; bad = 1 }
     END { exit bad }' "$tmp/calls" || status=1
# the library's files (the command's are one program, above everything)
awk '$2 != $4 && $2 !~ /^src[/]cli[/]/ { print $2, $4 }' "$tmp/calls" | sort -u >"$tmp/edges"
awk 'NR == FNR { e[$1 " " $2] = 1; next }
     ($2 " " $1) in e && $1 < $2 { print "layers: " $1 " and " $2 " call each other"; bad = 1 }
     END { exit bad }' "$tmp/edges" "$tmp/edges" || status=1
[ $status -eq 0 ] && echo "layers: no call runs up ($order), no two files call each other"
exit $status
