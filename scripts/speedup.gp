# Throughput normalised to data parallelism, grouped by model, one bar per
# planner, for one cluster.  Called by scripts/figures with dat, outfile,
# term, cluster and ncol (the number of planner columns) set.
if (term eq 'png') set terminal pngcairo size 1100,520 font 'sans,10'; \
else set terminal svg size 1100,520 font 'sans,10'
set output outfile
set termoption noenhanced
set datafile missing '?'
set title sprintf("Predicted throughput relative to data parallelism on %s\n(each device with the model's batch; '(global)': the model's batch shared)", cluster)
set ylabel 'samples/s relative to dp'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key outside right top
set grid ytics
set yrange [0:*]
set xtics rotate by -30 nomirror
plot for [i=2:ncol+1] dat using i:xtic(1) title columnheader(i), \
     1 with lines dashtype 2 lc rgb 'black' notitle
