# Throughput normalised to data parallelism, grouped by model, one bar per
# planner, for one cluster: the planners in one panel, the searches and
# the specs of a planner (with that planner) in a second, so that no panel
# holds more than 8 series (scripts/style.gp's tables say which is which,
# and each planner's colour).  Called by scripts/figures with dat,
# outfile, term, cluster and names (the planner columns, in order) set.
w = 1000
h = 860
load 'scripts/style.gp'
set termoption noenhanced
set datafile missing '?'
set style data histograms
set style histogram clustered gap 1
set boxwidth 0.9
set key below horizontal maxcols 4 width 1
set datafile columnheaders
set grid noxtics ytics
set logscale y
set yrange [*:*]
set ytics format '%g'
set xtics rotate by -40 scale 0 font smallfont
set ylabel 'samples/s relative to dp (log scale)'

# the column numbers of each panel's planners: a search or a variant goes
# to the second, and so does the planner of a variant
main = ''
other = ''
do for [i = 1:words(names)] {
	p = word(names, i)
	if (pother(p)) { other = other.' '.(i + 1) }
	if (pmain(p)) { main = main.' '.(i + 1) }
}
panels = (words(other) > 0 && words(main) > 0) ? 2 : 1
set multiplot layout panels, 1 title sprintf("Predicted throughput relative to data parallelism on %s\n(each device with the model's batch; '(global)': the model's batch shared)", cluster)
do for [k = 1:panels] {
	cols = (k == 1 && words(main) > 0) ? main : other
	set title (cols eq main ? 'planners' : 'searches, and a planner beside its variants')
	plot for [j = 1:words(cols)] dat using (column(int(word(cols, j)))):xtic(1) \
		title word(names, int(word(cols, j)) - 1) lc rgb pcolour(word(names, int(word(cols, j)) - 1)) \
		fs pattern ppattern(word(names, int(word(cols, j)) - 1)) border lc rgb '#303030', \
	     1 with lines dashtype 2 lc rgb 'black' notitle
}
unset multiplot
