#!/usr/bin/env bash
# Screenshots of a run's report for docs/: the first screen and the
# sections docs/reports.md shows, taken by headless Chromium at 1280 px wide.
#
#   scripts/screenshots.sh RUN_DIR [OUT_DIR]     # OUT_DIR defaults to docs/
#
# Each section is shown through a page that frames report.html at the
# section's anchor (a headless screenshot does not follow a URL's fragment).
set -euo pipefail
run=$(cd "${1:?usage: $0 RUN_DIR [OUT_DIR]}" && pwd)
out=${2:-docs}
[ -f "$run/report.html" ] || { echo "$0: no report.html in $run (bin/homatb report $run makes one)" >&2; exit 2; }
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "$0: needs headless Chromium (Debian package chromium)" >&2; exit 2; }
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# shot NAME ANCHOR HEIGHT: OUT/NAME.png of report.html#ANCHOR ("" for the top).
shot() {
	local page="$tmp/$1.html"
	printf '<!doctype html><style>html,body{margin:0}iframe{border:0;width:1280px;height:%spx}</style><iframe src="file://%s/report.html%s"></iframe>\n' \
		"$3" "$run" "${2:+#$2}" >"$page"
	"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$tmp/profile-$1" --hide-scrollbars --allow-file-access-from-files \
		--window-size=1280,"$3" --virtual-time-budget=5000 \
		--screenshot="$out/$1.png" "file://$page" 2>/dev/null
	echo "$out/$1.png"
}

anchor() { grep -o "id=\"$1[^\"]*\"" "$run/report.html" | head -1 | cut -d'"' -f2 || true; }

shot report-screenshot "" 900
shot report-latency "$(anchor group-0)" 900
slow=$(anchor slowdown-pct-)
[ -n "$slow" ] && shot report-slowdown "$slow" 700
queue=$(anchor queue-)
[ -n "$queue" ] && shot report-timeseries "$queue" 700
anat=$(anchor anatomy-)
[ -n "$anat" ] && shot report-anatomy "$anat" 700
exit 0
