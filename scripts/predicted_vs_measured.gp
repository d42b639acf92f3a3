# Predicted against measured iteration time of the plans executed on CPU
# ranks (bench/run-small): one point per plan in its planner's colour and
# marker (scripts/style.gp), the bars the measured median's 95% confidence
# interval (docs/runtime.md, "Measured numbers"), the diagonal where
# prediction and measurement agree and the band where they agree within
# 10%.  A key instead of a label per point (labels overprint); the
# searches in a panel of their own so that no panel holds more than 8
# series.  Called with dat (columns: predicted ms, measured ms,
# model/planner, interval low, interval high), outfile and term set.
w = 1000
h = 520
load 'scripts/style.gp'
set termoption noenhanced
set xlabel 'predicted iteration time (ms)'
set ylabel 'measured iteration time, median (ms)'
planner(s) = s[strstrt(s, '/') + 1:]
# the planners of the file, in order of appearance, split in two panels
main = ''
other = ''
stats dat using (p = planner(strcol(3)), windex(main.' '.other, p) ? 0 : \
	(psearch(p) ? other = other.' '.p : main = main.' '.p), 0) nooutput
set logscale xy
set key top left font smallfont title 'plan: median, 95% CI' left
set size ratio -1
stats dat using 1:2 nooutput
lo = (STATS_min_x < STATS_min_y ? STATS_min_x : STATS_min_y) / 1.5
hi = (STATS_max_x > STATS_max_y ? STATS_max_x : STATS_max_y) * 1.5
set xrange [lo:hi]
set yrange [lo:hi]
rows = (words(other) > 0 && words(main) > 0) ? 2 : 1
set multiplot layout 1, rows title 'Simulator against runtime: iteration time of each plan on 2 CPU ranks'
do for [k = 1:rows] {
	ps = (k == 1 && words(main) > 0) ? main : other
	set title (ps eq main ? 'planners' : 'searches')
	plot [lo:hi] '+' using 1:(0.9 * $1):(1.1 * $1) with filledcurves fc rgb '#e4e4e4' \
		title 'within 10%', \
	     x with lines dashtype 2 lc rgb 'black' title 'measured = predicted', \
	     for [j = 1:words(ps)] dat using 1:(planner(strcol(3)) eq word(ps, j) ? $2 : NaN):4:5 \
		with yerrorbars lc rgb pcolour(word(ps, j)) pt ppoint(word(ps, j)) ps 1.1 \
		title word(ps, j)
}
unset multiplot
