# long_context.gp - draws bench/long_context.png from bench/long_context.tsv
# (written by bench/compare_long.py): time and memory of a causal training
# step of the attention layer at B=1, d=256, H=8, one thread, against the
# sequence length T, attograd and PyTorch, log-log. Run from anywhere:
#     gnuplot bench/long_context.gp
dir = system("dirname '" . ARG0 . "'")
data = dir . "/long_context.tsv"
set terminal pngcairo size 1100,460 font ",11"
set output dir . "/long_context.png"
set datafile separator "\t"
set datafile missing "NaN"
set logscale xy 2
set xrange [192:21845]
set xtics (256, 512, 1024, 2048, 4096, 8192, 16384)
set grid
set key top left
set multiplot layout 1,2 title "causal attention training step, B=1 d=256 H=8, one thread"

set title "CPU time per step"
set ylabel "ms"
set xlabel "sequence length T"
set format y "%g"
plot data using 1:($3/1e3) with linespoints lw 2 pt 7 lc rgb "#7030a0" title "attograd", \
     data using 1:($8/1e3) with linespoints lw 2 pt 5 lc rgb "#009e73" title "PyTorch 1.13"

set title "memory of the step"
set ylabel "MB"
set key bottom right
plot data using 1:($5/1e6) with linespoints lw 2 pt 7 lc rgb "#7030a0" title "attograd (peak\\_bytes)", \
     data using 1:($6/1e6) with linespoints lw 2 pt 6 dt 3 lc rgb "#7030a0" title "attograd (process RSS)", \
     data using 1:($9/1e6) with linespoints lw 2 pt 5 lc rgb "#009e73" title "PyTorch 1.13 (process RSS)"
unset multiplot
