# Anytime curves of the searching planners (mcmc): the best predicted
# iteration time found against search time, one line per model and
# cluster, from results/anytime.csv.  Called with dat, outfile, term and
# titles set; dat holds one block per curve (blocks separated by two blank
# lines, columns search_s best_iter_ms) and titles their names, e.g. made
# from anytime.csv (through scripts/csv2tsv: a quoted planner spec may
# hold commas) by
#   scripts/csv2tsv results/anytime.csv model cluster planner search_s best_iter_ms |
#   awk -F'\t' 'NR > 1 && $3 ~ /^mcmc/ { k = $1 "/" $2; if (k != last) {
#            if (last != "") printf "\n\n"; last = k; t = t " " k }
#            print $4, $5 } END { print t > "titles" }'
w = 800
h = 720
load 'scripts/style.gp'
set termoption noenhanced
set title 'mcmc on flexflow-p100: best simulated iteration time over search time'
set xlabel 'search time (s)'
set ylabel 'best iteration time (ms)'
set logscale x
set logscale y
set grid
set key outside right top font smallfont
# at most 8 models a panel
n = words(titles)
panels = (n + 7) / 8
set multiplot layout panels, 1
do for [k = 1:panels] {
	first = 8 * (k - 1) + 1
	last = (8 * k < n ? 8 * k : n)
	plot for [i = first:last] dat index (i - 1) using 1:2 with steps lw 1.5 title word(titles, i)
	unset title
}
unset multiplot
