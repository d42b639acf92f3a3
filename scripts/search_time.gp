# Search time against the model's size (operators) and the cluster's
# (devices), log-log, every benchmark cell a point, one colour and marker
# per planner (scripts/style.gp); the planners in the top row, the
# searches with a planner beside its variants in the bottom one, so that
# no panel holds more than 8 series; the key beside the right panel
# names the row's planners.  Called by scripts/figures with dat
# (columns: planner, operators, devices, search seconds), names (the
# planners, in order), outfile and term set.
w = 1150
h = 800
load 'scripts/style.gp'
set termoption enhanced
set logscale xy
set format y '10^{%L}'
set grid xtics ytics
set key outside right top font smallfont noenhanced
main = ''
other = ''
do for [i = 1:words(names)] {
	p = word(names, i)
	if (pother(p)) { other = other.' '.p }
	if (pmain(p)) { main = main.' '.p }
}
rows = (words(other) > 0 && words(main) > 0) ? 2 : 1
set multiplot layout rows, 2 title 'Search time of each planner, every benchmark cell (log-log)'
do for [k = 1:rows] {
	ps = (k == 1 && words(main) > 0) ? main : other
	set title (ps eq main ? 'planners' : 'searches and variants') . ': by model size'
	set xlabel 'model size (operators)'
	set ylabel 'search time (s)'
	plot for [j = 1:words(ps)] dat using (strcol(1) eq word(ps, j) ? $2 * (1 + 0.08 * (rand(0) - 0.5)) : NaN):4 \
		with points notitle lc rgb pcolour(word(ps, j)) pt ppoint(word(ps, j)) ps 0.8
	set title (ps eq main ? 'planners' : 'searches and variants') . ': by cluster size'
	set xlabel 'cluster size (devices)'
	set ylabel ''
	plot for [j = 1:words(ps)] dat using (strcol(1) eq word(ps, j) ? $3 * (1 + 0.3 * (rand(0) - 0.5)) : NaN):4 \
		with points title word(ps, j) lc rgb pcolour(word(ps, j)) pt ppoint(word(ps, j)) ps 0.8
}
unset multiplot
