#!/usr/bin/env bash
# relacy.sh: build and run every Relacy model in internal/relacy (what each
# models is in internal/relacy/README.md). Each model checks the protocol
# with the memory orders the code uses (it must be clean) and a few broken
# variants (each must be reported by Relacy, with the error named), so the
# checker is shown able to fail. One line per model and variant; the exit
# status is non-zero on any mismatch, a build failure or a crash.
#
# Needs g++ and Relacy's headers (Debian: the relacy-dev package).
#   RELACY_INCLUDE  the directory holding relacy/relacy.hpp (default /usr/include)
#   RELACY_OUT      where binaries and Relacy's reports go (default .relacy)
#   CXX             the C++ compiler (default g++)
# A model is rebuilt only when its source or model.hpp is newer than it.
set -u
cd "$(dirname "$0")/.."

src=internal/relacy
inc=${RELACY_INCLUDE:-/usr/include}
out=${RELACY_OUT:-.relacy}
cxx=${CXX:-g++}

if [ ! -f "$inc/relacy/relacy.hpp" ]; then
  echo "relacy: $inc/relacy/relacy.hpp not found." >&2
  echo "relacy: install Relacy's headers: apt-get install -y relacy-dev (Debian/Ubuntu)," >&2
  echo "relacy: or set RELACY_INCLUDE to the directory that holds relacy/relacy.hpp." >&2
  exit 1
fi
command -v "$cxx" >/dev/null || { echo "relacy: the C++ compiler $cxx was not found (install g++)" >&2; exit 1; }

mkdir -p "$out/logs" || exit 1
rm -f "$out"/logs/*

# Build the stale models in parallel. -Og: compiles in half the time of
# -O1, and the models run nearly as fast.
models=()
pids=()
for f in "$src"/*.cpp; do
  m=$(basename "$f" .cpp)
  models+=("$m")
  bin="$out/$m"
  if [ ! -x "$bin" ] || [ "$f" -nt "$bin" ] || [ "$src/model.hpp" -nt "$bin" ]; then
    "$cxx" -std=c++14 -Og -w -I"$inc" -I"$src" -o "$bin.tmp" "$f" >"$out/logs/$m.build" 2>&1 &&
      mv "$bin.tmp" "$bin" &
    pids+=("$!:$m")
  fi
done
fail=0
for p in ${pids[@]+"${pids[@]}"}; do
  if ! wait "${p%%:*}"; then
    echo "relacy: building model ${p#*:} failed:" >&2
    cat "$out/logs/${p#*:}.build" >&2
    fail=1
  fi
done
[ "$fail" = 0 ] || exit 1

# Run them, in parallel; each prints its lines (shown in order) and exits 1
# on a mismatch.
pids=()
for m in "${models[@]}"; do
  RELACY_LOG_DIR="$out/logs" "$out/$m" >"$out/logs/$m.out" 2>&1 &
  pids+=("$!:$m")
done
for p in "${pids[@]}"; do
  m=${p#*:}
  wait "${p%%:*}"
  rc=$?
  cat "$out/logs/$m.out"
  if [ "$rc" != 0 ]; then
    [ "$rc" = 1 ] || echo "relacy: model $m exited with status $rc (a crash?)" >&2
    fail=1
  fi
done
if [ "$fail" != 0 ]; then
  echo "relacy: FAIL (Relacy's report of each mismatch is in $out/logs/)" >&2
  exit 1
fi
echo "relacy: ok (${#models[@]} models)"
