# Search time per planner, every benchmark cell a point, log scale.
# Called by scripts/figures with dat, outfile and term set (and xtics).
if (term eq 'png') set terminal pngcairo size 800,480 font 'sans,10'; \
else set terminal svg size 800,480 font 'sans,10'
set output outfile
set title 'Search time per planner (every benchmark cell)'
set ylabel 'search time (s)'
set logscale y
set format y '10^{%L}'
set grid ytics
set key off
set xrange [-0.5:*]
set offsets 0, 0.5, graph 0.05, graph 0.05
plot dat using ($1 + 0.3 * (rand(0) - 0.5)):2 with points pt 7 ps 0.6
