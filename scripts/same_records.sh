#!/bin/bash
# Checks two run directories hold the same records: every file of A is in
# B with the same content and B has none A lacks, leaving out what differs
# between two runs of the same records (manifest.json's wall times, the
# report, the logs, a split run's dispatch.json and tasks/); compressed
# records are compared decompressed. Prints each difference, then
# "N files identical" when there is none; exits 1 if any.
#
#   scripts/same_records.sh A B
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: $0 RUN_DIR_A RUN_DIR_B" >&2; exit 2; }
a=$1 b=$2 n=0 bad=0

# skip F: whether file F (relative, ./...) is not a record.
skip() {
	case $1 in ./manifest.json | ./report.html | ./dispatch.json | ./logs/* | ./tasks/*) return 0 ;; esac
	return 1
}

while IFS= read -r f; do
	skip "$f" && continue
	n=$((n + 1))
	if [ ! -e "$b/$f" ]; then
		echo "$f missing from $b"
		bad=1
		continue
	fi
	case $f in
	*.zst) cmp -s <(zstd -dcq "$a/$f") <(zstd -dcq "$b/$f") ;;
	*) cmp -s "$a/$f" "$b/$f" ;;
	esac || { echo "$f differs"; bad=1; }
done < <(cd "$a" && find . -type f | sort)
while IFS= read -r f; do
	skip "$f" && continue
	[ -e "$a/$f" ] || { echo "$f only in $b"; bad=1; }
done < <(cd "$b" && find . -type f | sort)
[ $bad = 0 ] && echo "$n files identical"
exit $bad
