# shellcheck shell=sh
# Alternating timed rounds of autopar and of its PyTorch peer, and when to
# stop them: sourced by bench/torch-peer-cpu and bench/torch-peer, which
# define what one round of each side runs (docs/runtime.md, "Measured
# numbers").
#
#   peer_rounds DIR SIDES
#
# SIDES is "both", or "pytorch" where the runtime refused the model.  Runs
# round_autopar FILE, then round_pytorch FILE (the caller's functions: one
# process each, FILE receiving that round's timed steps as `autopar run
# --times-csv` writes them, step,iter_ms), then again, and pools every
# round's steps of a side into DIR/autopar.txt and DIR/pytorch.txt (one
# time in ms a line).  Alternating puts a slow spell of a shared machine on
# both sides rather than on one; a new process each round lets a round
# that started badly (a page layout, a neighbour) show as a spread of the
# pooled steps instead of deciding the number alone.
#
# Stopping rule: after MIN_ROUNDS rounds a side (default 2), it stops once
# every side's median has a 95% interval (scripts/step-stats) within
# PRECISION of it (default 0.02: the interval inside median -2% to +2%),
# or when another pair of rounds, as long as the last pair, would end past
# BUDGET_S seconds (default 45) since the first round.  Sets
# peer_rounds_n (rounds a side) and peer_rounds_s (seconds taken).
# Expects the caller's working directory at the top of the tree.

# Whether the median of the times in $1 has an interval within PRECISION.
peer_tight() {
	scripts/step-stats "$1" | awk -F, -v p="${PRECISION:-0.02}" \
		'{ exit !($3 != "" && $3 >= $2 * (1 - p) && $4 <= $2 * (1 + p)) }'
}

peer_rounds() {
	_dir=$1 _sides=$2
	_min=${MIN_ROUNDS:-2} _budget=${BUDGET_S:-45}
	case $_min in '' | *[!0-9]* | 0) echo "peer_rounds: MIN_ROUNDS must be a positive integer" >&2; return 2 ;; esac
	case $_budget in '' | *[!0-9]*) echo "peer_rounds: BUDGET_S must be a whole number of seconds" >&2; return 2 ;; esac
	: >"$_dir/autopar.txt"
	: >"$_dir/pytorch.txt"
	_start=$(date +%s) _last=0
	peer_rounds_n=0
	while :; do
		_t0=$(date +%s)
		if [ "$_sides" = both ]; then
			rm -f "$_dir/round.csv"
			round_autopar "$_dir/round.csv" || return 1
			awk -F, 'NR > 1 { print $2 }' "$_dir/round.csv" >>"$_dir/autopar.txt"
		fi
		rm -f "$_dir/round.csv"
		round_pytorch "$_dir/round.csv" || return 1
		awk -F, 'NR > 1 { print $2 }' "$_dir/round.csv" >>"$_dir/pytorch.txt"
		peer_rounds_n=$((peer_rounds_n + 1))
		_now=$(date +%s)
		_last=$((_now - _t0))
		peer_rounds_s=$((_now - _start))
		[ "$peer_rounds_n" -ge "$_min" ] || continue
		if peer_tight "$_dir/pytorch.txt" &&
			{ [ "$_sides" != both ] || peer_tight "$_dir/autopar.txt"; }; then
			break
		fi
		[ $((peer_rounds_s + _last)) -le "$_budget" ] || break
	done
}
