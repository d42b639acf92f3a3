# Peak memory per device by kind, from `autopar sim --memory` (stacked
# bars, GiB).  Called with dat, outfile, term and title set.
w = 900
h = 420
load 'scripts/style.gp'
set termoption noenhanced
set title title
set xlabel 'device'
set ylabel 'peak memory (GiB)'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.7
set key outside right top
set grid ytics
set yrange [0:*]
G = 1024.0**3
plot dat using ($2/G):xtic(1) title 'weights', '' using ($3/G) title 'gradients', \
     '' using ($4/G) title 'optimizer state', '' using ($5/G) title 'stashed weights', \
     '' using ($6/G) title 'activations', '' using ($7/G) title 'workspace'
