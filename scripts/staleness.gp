# Loss against step for each way of handling weight staleness (sync,
# flush, stash, predict, naive), one panel per model and rank count.
# Called with dat (results/staleness.csv through scripts/csv2tsv: the
# columns model, ranks, variant, step, loss, tab-separated), outfile and
# term set.
w = 1200
h = 720
fontsize = 9
load 'scripts/style.gp'
set termoption noenhanced
set datafile separator '\t'
set multiplot layout 2,3 title 'Training loss: synchronous, weight stashing, weight prediction, naive asynchronous'
set grid
set xlabel 'step'
set ylabel 'loss (log scale)'
set logscale y
set key top right
models = 'mlp cnn_small transformer_tiny'
variants = 'sync flush stash predict naive'
do for [r in '2 4'] {
	do for [m in models] {
		set title sprintf('%s, %s ranks', m, r)
		plot for [v in variants] dat using \
			(strcol(1) eq m && strcol(2) eq r && strcol(3) eq v ? $4 : NaN):5 \
			with lines lw 1.5 title v
	}
}
unset multiplot
