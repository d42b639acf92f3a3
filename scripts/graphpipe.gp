# GraphPipe's comparison (bench/graphpipe-compare): throughput of graphpipe
# and piper over PipeDream-Flush, and the search time of the three, per
# model and cluster.  Called with dat (model-cluster label, graphpipe and
# piper speedups, pipedream, graphpipe and piper search seconds; NaN where
# a planner found no plan), outfile and term set.
w = 1200
h = 480
fontsize = 9
load 'scripts/style.gp'
set termoption noenhanced
set multiplot layout 1,2 title 'GraphPipe against PipeDream-Flush and Piper (predicted, strong scaling)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set grid ytics
set xtics rotate by -45 scale 0
set key top left
set title 'throughput over PipeDream-Flush'
set ylabel 'speedup (x)'
set yrange [0:*]
plot dat using 2:xtic(1) title 'graphpipe' lc rgb pcolour('graphpipe'), \
	'' using 3 title 'piper' lc rgb pcolour('piper'), \
	1 with lines dt 2 lc rgb 'black' notitle
set title 'search time'
set key top right
set ylabel 'seconds (log scale)'
set logscale y
set yrange [*:*]
plot dat using 4:xtic(1) title 'pipedream' lc rgb pcolour('pipedream'), \
	'' using 5 title 'graphpipe' lc rgb pcolour('graphpipe'), \
	'' using 6 title 'piper' lc rgb pcolour('piper')
unset multiplot
