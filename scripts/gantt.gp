# A pipeline schedule as a Gantt chart, from `autopar sim --timeline`:
# one row per device, forward and backward tasks as bars, the micro-batch
# number on each.  Called with dat, outfile, term and title set.
w = 1200
h = 420
fontsize = 10
load 'scripts/style.gp'
set termoption noenhanced
set title title
set xlabel 'time (ms)'
set ylabel 'device'
set yrange [*:*] reverse
set ytics 1
set style fill solid 0.9 border lc rgb 'white'
set grid xtics
set key outside right top
set datafile separator '\t'
is_dev(c) = strstrt(strcol(c), 'device') == 1
y(c) = is_dev(c) ? int(strcol(c)[8:]) : NaN
stats dat using 4 nooutput
tmax = STATS_max
sel(k) = (is_dev(2) && strcol(5) eq k) ? 1 : NaN
plot dat using (0.5*($3+$4)):(y(2)*sel('fwd')):(0.5*($4-$3)):(0.38) \
	with boxxyerror lc rgb '#4e79a7' title 'forward', \
     dat using (0.5*($3+$4)):(y(2)*sel('bwd')):(0.5*($4-$3)):(0.38) \
	with boxxyerror lc rgb '#f28e2b' title 'backward', \
     dat using (0.5*($3+$4)):(y(2)*sel('update')):(0.5*($4-$3)):(0.38) \
	with boxxyerror lc rgb '#59a14f' title 'update', \
     dat using (0.5*($3+$4)):(y(2)*sel('fwd')):(($4-$3) > 0.012*tmax ? sprintf('%d', int($6)) : '') \
	with labels tc rgb 'white' font 'sans,8' notitle
