# The figure style every scripts/*.gp loads (load 'scripts/style.gp' from
# the top of the source tree, after setting term, outfile and, for another
# size than one paper column's 640x400, w and h in pixels): the terminal,
# fonts that read at 100% once the figure is scaled to a column, and the
# Okabe-Ito colour-blind-safe palette.  The one place a planner gets its
# colour and marker, the same in every figure: the planner table below,
# which scripts/check-figures reads too.  A spec of a planner
# (pipedream:cost=paper) keeps its planner's hue; a spec in the variant
# table is told apart by its dash (lines), fill pattern (bars) or open
# marker (points).
if (!exists('w')) w = 640
if (!exists('h')) h = 400
if (!exists('fontsize')) fontsize = 11
smallfont = sprintf('sans,%d', fontsize - 1)
if (term eq 'png') \
	set terminal pngcairo size w,h font sprintf('sans,%d', fontsize) linewidth 1.3 dashlength 1.5; \
else \
	set terminal svg size w,h font sprintf('sans,%d', fontsize) linewidth 1.3 dashlength 1.5 background '#ffffff'
set output outfile
set border 3 lc rgb '#404040'
set tics nomirror
set grid lc rgb '#d8d8d8' lw 0.8
unset grid
set key noopaque samplen 2.5 spacing 1.1

# Okabe-Ito, in its published order: the default series colours.
okabe_ito = '#000000 #E69F00 #56B4E9 #009E73 #F0E442 #0072B2 #D55E00 #CC79A7'
do for [i = 1:8] { set linetype i lc rgb word(okabe_ito, i) lw 1.5 pt (i == 1 ? 7 : 3 + 2 * i) ps 1 }
set linetype cycle 8

# Planner -> colour and filled marker.  Okabe-Ito's eight, then grey and
# a wine red (both told apart from the eight under the common colour
# vision deficiencies) for the two searches that share panels with the
# rest only beside ilp.
planners = "single dp owt megatron pipedream piper graphpipe exhaustive ilp mcmc"
planner_colours = "#000000 #0072B2 #56B4E9 #009E73 #E69F00 #D55E00 #CC79A7 #999999 #F0E442 #882255"
planner_marks = "7 5 9 11 13 15 7 5 9 11"
# The searches, drawn in a panel of their own where planners are split.
searches = "exhaustive ilp mcmc"
# Specs drawn apart from their planner (dash 2.., pattern 4.., open marks).
variants = "pipedream:cost=paper pipedream:schedule=async-predict pipedream:schedule=1f1b-flush"

pbase(p) = strstrt(p, ':') ? p[1:strstrt(p, ':') - 1] : p
# the position of a word in a list, 0 where it is not there
windex(list, x) = strstrt(' '.list.' ', ' '.x.' ') ? \
	words((' '.list.' ')[1:strstrt(' '.list.' ', ' '.x.' ')]) + 1 : 0
pidx(p) = windex(planners, pbase(p))
pvar(p) = windex(variants, p)
psearch(p) = windex(searches, pbase(p)) > 0
pcolour(p) = pidx(p) ? word(planner_colours, pidx(p)) : '#606060'
pdash(p) = pvar(p) + 1
ppattern(p) = pvar(p) ? 3 + pvar(p) : 3
ppoint(p) = pvar(p) ? int(word('6 4 8 10 12', pvar(p))) : (pidx(p) ? int(word(planner_marks, pidx(p))) : 1)
# Where planners are split in two panels: the planners, and the searches
# and variants with the planner of a variant beside them.
pmain(p) = !psearch(p) && !pvar(p)
pother(p) = psearch(p) || pvar(p) || strstrt(' '.variants, ' '.p.':') > 0
