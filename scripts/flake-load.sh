#!/usr/bin/env bash
# flake-load.sh: `make flake` beside a heavy, realistic load, to find the
# tests that fail only on a busy machine (a deadline a loaded host misses,
# a sleep that hoped for a scheduler).
#
# The load, each job in a session (process group) of its own:
#   - a loop of `go build -a -race ./...` of this tree into a scratch
#     GOCACHE (mktemp -d), so every round compiles everything again;
#   - LOAD_SPINNERS busy threads (`yes > /dev/null`), default 2.
# All of it is killed, and the scratch directory removed, when the flake
# run ends, whether it passed, failed or was interrupted (trap on EXIT).
#
# Usage: scripts/flake-load.sh [make variables...]
#   FLAKE_N=3 scripts/flake-load.sh               # -count=3 (default 10)
#   make flake-load FLAKE_N=3 PKGS=./p2pqueue     # the same through make
# Arguments are passed to `make flake` (e.g. PKGS=./runtime EMU_PKGS=./runtime).
# The exit status is make flake's.
set -u

GO=${GO:-go}
MAKE=${MAKE:-make}
FLAKE_N=${FLAKE_N:-10}
LOAD_SPINNERS=${LOAD_SPINNERS:-2}
cd "$(dirname "$0")/.."

scratch=$(mktemp -d "${TMPDIR:-/tmp}/ringactor-flake-load.XXXXXX") || exit 1
load=() # process group ids of the load jobs

cleanup() {
	local pg left=0
	for pg in "${load[@]}"; do
		kill -TERM -- "-$pg" 2>/dev/null
	done
	for pg in "${load[@]}"; do
		# Wait, bounded, for each group to go; KILL what is left.
		for _ in $(seq 50); do
			kill -0 -- "-$pg" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 -- "-$pg" 2>/dev/null; then
			kill -KILL -- "-$pg" 2>/dev/null
		fi
		wait "$pg" 2>/dev/null
		if kill -0 -- "-$pg" 2>/dev/null; then
			left=$((left + 1))
		fi
	done
	rm -rf "$scratch"
	if [ "$left" -ne 0 ]; then
		echo "flake-load: $left load job(s) would not end" >&2
	else
		echo "flake-load: load stopped (${#load[@]} job(s)), $scratch removed" >&2
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# setsid: each job leads a process group, so killing the group ends the
# compilers and the yes it started too.
setsid bash -c '
	while :; do
		GOCACHE="$1/gocache" "$2" build -a -race ./... >/dev/null 2>&1
	done' flake-load-build "$scratch" "$GO" </dev/null &
load+=($!)
for _ in $(seq "$LOAD_SPINNERS"); do
	setsid yes >/dev/null </dev/null &
	load+=($!)
done
echo "flake-load: load started (go build -a -race loop in $scratch, $LOAD_SPINNERS busy threads): groups ${load[*]}" >&2

"$MAKE" flake FLAKE_N="$FLAKE_N" "$@"
