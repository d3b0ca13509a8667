#!/bin/bash
# The most `--jobs 2` can gain on this machine: the twin's benchmark
# (BenchmarkPaperFabric, one simulation on one core) run alone, then two
# copies at once, alternately, ROUNDS times each. Two copies that each took
# as long as one alone would be a ceiling of 2.0; the vCPUs' shared caches,
# memory bandwidth or hypervisor threads make it lower. Prints each run's
# wall and CPU seconds and events per CPU second, then the ceiling:
# 2 x (mean wall alone) / (mean wall of a copy beside another).
#
#   scripts/parallel_ceiling.sh [ROUNDS [OUT]]
#
# Run it on a quiet machine: anything else running lowers both.
set -euo pipefail
rounds=${1:-2} out=${2:-$(mktemp -d)}
cd "$(dirname "$0")/.."
mkdir -p "$out"
bin=$out/simulate.test
go test -c -o "$bin" ./testbed/simulate
cd testbed/simulate # the benchmark reads ../../scenarios

# one TAG: a benchmark run; its wall and CPU seconds and the benchmark's
# line go to OUT/TAG.
one() {
	/usr/bin/time -f "%e %U %S" -o "$out/$1.time" "$bin" -test.run '^$' \
		-test.bench '^BenchmarkPaperFabric$' -test.benchtime 1x >"$out/$1.out" 2>&1
}

# report TAG MODE: a line for one run.
report() {
	local wall cpu evcpu
	read -r wall u s <"$out/$1.time"
	cpu=$(awk -v u="$u" -v s="$s" 'BEGIN{printf "%.1f", u+s}')
	evcpu=$(grep -o '[0-9.e+]* events/cpu-s' "$out/$1.out" | awk '{print $1}')
	printf "%-8s %-10s %8.1f %8.1f %14s\n" "$2" "$1" "$wall" "$cpu" "${evcpu:-?}"
	echo "$2 $wall" >>"$out/walls"
}

rm -f "$out/walls"
printf "%-8s %-10s %8s %8s %14s\n" mode run wall_s cpu_s events/cpu-s
for r in $(seq "$rounds"); do
	one "alone$r"
	report "alone$r" alone
	one "pairA$r" &
	a=$!
	one "pairB$r" &
	b=$!
	wait "$a" "$b"
	report "pairA$r" together
	report "pairB$r" together
done
awk '{n[$1]++; w[$1]+=$2} END {
	a = w["alone"]/n["alone"]; t = w["together"]/n["together"]
	printf "mean wall: alone %.1f s, beside another %.1f s; ceiling of --jobs 2: %.2f\n", a, t, 2*a/t
}' "$out/walls"
