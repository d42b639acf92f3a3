# Each planner's distance from the ILP's bound, on the benchmark cells where
# the ILP proved its plan optimal (gap 0): the planner's predicted iteration
# time over the ILP's bound (1 = the optimum of the ILP's model; a
# planner below 1 beats the model's optimum in the simulator, which the
# model only approximates).  Reads the results CSV by column name, through
# scripts/csv2tsv (a quoted planner spec may hold commas), from the top of
# the source tree:
#   gnuplot -e "csv='results/bench.csv'; outfile='ilp-gap.png'; term='png'" scripts/ilp_gap.gp
if (!exists('csv')) csv = 'results/bench.csv'
if (!exists('csv2tsv')) csv2tsv = 'scripts/csv2tsv'
if (!exists('term')) term = 'png'
if (!exists('outfile')) outfile = 'results/figures/ilp-gap.'.term
w = 900
h = 480
load 'scripts/style.gp'
set termoption noenhanced
set datafile separator whitespace
# One line per (planner cell, proven ILP cell) of the same model, batch,
# cluster, profile and seed: planner index, ratio, planner name.
pairs = sprintf("< '%s' '%s' | awk -F'\\t' '\
	NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } \
	{ k = $c[\"model\"] SUBSEP $c[\"batch\"] SUBSEP $c[\"cluster\"] SUBSEP $c[\"profile\"] SUBSEP $c[\"seed\"] } \
	$c[\"planner\"] ~ /^ilp/ && $c[\"status\"] == \"ok\" && $c[\"gap\"] != \"\" && $c[\"gap\"] + 0 == 0 \
		{ bound[k] = $c[\"bound_ms\"]; next } \
	$c[\"status\"] == \"ok\" && $c[\"pred_iter_ms\"] != \"\" { t[k, $c[\"planner\"]] = $c[\"pred_iter_ms\"]; \
		if (!($c[\"planner\"] in id)) { id[$c[\"planner\"]] = n++; name[n - 1] = $c[\"planner\"] } } \
	END { for (kp in t) { split(kp, f, SUBSEP); k = f[1] SUBSEP f[2] SUBSEP f[3] SUBSEP f[4] SUBSEP f[5]; \
		if ((k in bound) && bound[k] > 0) print id[f[6]], t[kp] / bound[k], f[6] } }'", csv2tsv, csv)
set title 'Predicted iteration time relative to the ILP bound (cells the ILP proved optimal)'
set ylabel 'iteration time / ILP bound'
set logscale y
set grid ytics
set key off
set xtics rotate by -25
set bmargin 6
set xrange [-0.5:*]
set offsets 0, 0.5, graph 0.05, graph 0.05
plot pairs using ($1 + 0.3 * (rand(0) - 0.5)):2 with points pt 7 ps 0.6, \
     '' using 1:(NaN):xtic(3) notitle, \
     1 with lines dashtype 2 lc rgb 'black' notitle
