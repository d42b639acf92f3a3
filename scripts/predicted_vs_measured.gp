# Predicted against measured iteration time of the plans executed on CPU
# ranks (bench/run-small): one point per plan, labelled model/planner, and
# the diagonal where prediction and measurement agree; the bars are the
# measured median's 95% confidence interval (docs/runtime.md, "Measured
# numbers").  Called with dat (columns: predicted ms, measured ms, label,
# interval low, interval high), outfile and term set.
if (term eq 'png') set terminal pngcairo size 760,640 font 'sans,10'; \
else set terminal svg size 760,640 font 'sans,10'
set output outfile
set termoption noenhanced
set title 'Simulator against runtime: iteration time on 2 CPU ranks'
set xlabel 'predicted iteration time (ms)'
set ylabel 'measured iteration time, median (ms)'
set logscale xy
set grid
set key top left
stats dat using 1:2 nooutput
lo = (STATS_min_x < STATS_min_y ? STATS_min_x : STATS_min_y) / 1.5
hi = (STATS_max_x > STATS_max_y ? STATS_max_x : STATS_max_y) * 1.5
set xrange [lo:hi]
set yrange [lo:hi]
plot dat using 1:2:4:5 with yerrorbars pt 7 ps 1.2 title 'plan (median, 95% CI)', \
     '' using 1:2:3 with labels offset 0.8,0.6 left font 'sans,8' notitle, \
     x with lines dashtype 2 lc rgb 'black' title 'measured = predicted'
