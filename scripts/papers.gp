# The seed papers' headline numbers beside autopar's (bench/papers): per row
# of results/papers.csv three bars on a log scale, the paper's value,
# autopar's with the paper's own baseline (its synchronisation and its
# system's plan, where the CSV has one) and autopar's with its own model
# (overlapped hierarchical all-reduces); the configurations (PipeDream's
# stage sizes, Krizhevsky's batches) above the bars where the paper gives
# one, "no plan" where the planner found none.  Called by scripts/figures
# with dat (columns: x, label, paper value, autopar value or '?', paper
# config, autopar config, 'no plan'; '-' for none, autopar value with the
# paper's baseline or '?'), groups (gnuplot commands marking each paper's
# rows), nrows, outfile and term set.
w = 1900
h = 760
fontsize = 10
load 'scripts/style.gp'
set termoption noenhanced
set datafile missing '?'
set title "The papers' headline numbers and autopar's predictions (bench/papers; ratios: speedups over each paper's baseline, final-loss ratio for the last)"
set ylabel 'ratio (log scale)'
set logscale y
set yrange [0.3:300]
set xrange [-0.8:nrows - 0.2]
set grid ytics
set key at graph 0.4, graph 0.9 center horizontal box opaque
set style fill solid 0.85 border -1
set boxwidth 0.27
set xtics rotate by 90 right nomirror font ',8'
set bmargin 13
load groups
cfg(s) = (s eq '-') ? '' : s
plot dat using ($1 - 0.27):3:xtic(2) with boxes lc rgb '#9a9a9a' title 'paper', \
     dat using 1:8 with boxes lc rgb '#dd8452' title "autopar, the paper's baseline", \
     dat using ($1 + 0.27):4 with boxes lc rgb '#2b6cb0' title 'autopar, its own model (predicted)', \
     dat using ($1 - 0.27):($3 * 1.12):(cfg(strcol(5))) with labels rotate by 90 left font ',7' notitle, \
     dat using ($1 + 0.27):($4 * 1.12):(cfg(strcol(6))) with labels rotate by 90 left font ',7' notitle, \
     dat using ($1 + 0.27):(0.33):(cfg(strcol(7))) with labels rotate by 90 left font ',7' notitle, \
     1 with lines dashtype 2 lc rgb 'black' notitle
