# Simulated async-predict against 1f1b-async on the same straight stages
# (pipedream-a): throughput and peak memory per device as ratios to
# 1f1b-async, one pair of bars per model.  Called with dat (a whitespace
# table: model throughput_ratio memory_ratio), outfile and term set.
w = 900
h = 480
load 'scripts/style.gp'
set termoption noenhanced
set title 'async-predict vs 1f1b-async on pipedream-a (simulated, same stages)'
set ylabel 'ratio to 1f1b-async'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set xtics rotate by -30
set grid ytics
set key top left
set yrange [0:*]
plot dat using 2:xtic(1) title 'throughput', '' using 3 title 'peak memory per device'
