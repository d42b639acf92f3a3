# autopar's CPU runtime beside PyTorch on the same cores
# (bench/torch-peer-cpu): autopar's samples/s over PyTorch's, one bar per
# model and rank count, with the ratio's interval from both medians' 95%
# intervals as an error bar (docs/runtime.md, "Measured numbers") and the
# line of parity; a label
# ending in "(within noise)" is a ratio whose two sides' intervals
# overlap.
# Called with dat (a whitespace table: "label" ratio lo hi, a missing
# ratio as NaN; lo = hi = ratio where the file has no interval), outfile
# and term set.
w = 900
h = 480
load 'scripts/style.gp'
set termoption noenhanced
set title "autopar over PyTorch, training samples/s on the same CPU cores (one thread per rank)\nratio of the median steps; error bars from both medians' 95% intervals"
set ylabel 'autopar / PyTorch'
set style data histograms
set style histogram errorbars gap 1 lw 1
set style fill solid 0.8 border -1
set xtics rotate by -30
set grid ytics
set key top right
set yrange [0:*]
plot dat using 2:3:4:xtic(1) title 'samples/s ratio', 1 with lines dashtype 2 lc rgb 'black' title 'parity'
