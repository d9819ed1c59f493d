#!/usr/bin/env bash
# Screenshot a build report (OUT/report/report.html) with headless Chromium.
#
# Why: the report is meant to be read in a browser; a screenshot shows at a glance that the
# tables are readable and the embedded figures render, and can be attached to a review.
#
# Usage: bench/screenshot_report.sh OUT_OR_HTML [PNG] [WIDTHxHEIGHT]
#   OUT_OR_HTML  an output root (uses OUT/report/report.html) or an HTML file
#   PNG          where to write the screenshot (default: next to the HTML, report.png)
#   WIDTHxHEIGHT window size (default 1280x2000)
# Env: CHROMIUM (default /usr/bin/chromium).
#
# Installs nothing: if Chromium is missing it says so and exits 3 (on Debian/Ubuntu:
# `apt-get install -y chromium`). The browser runs with a throw-away profile and with
# background networking, sync, component updates and QUIC off, so it contacts nothing —
# the report itself is self-contained (inline CSS, base64 figures).
set -euo pipefail

target="${1:?usage: $0 OUT_OR_HTML [PNG] [WIDTHxHEIGHT]}"
if [[ -d "$target" ]]; then html="$target/report/report.html"; else html="$target"; fi
[[ -f "$html" ]] || { echo "no report at $html (run: openmsd-build report OUT)" >&2; exit 2; }
html="$(cd "$(dirname "$html")" && pwd)/$(basename "$html")"
png="${2:-$(dirname "$html")/report.png}"
size="${3:-1280x2000}"
chromium="${CHROMIUM:-/usr/bin/chromium}"
[[ -x "$chromium" ]] || { echo "chromium not found at $chromium (apt-get install -y chromium)" >&2; exit 3; }

profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --hide-scrollbars --window-size="${size/x/,}" \
  --screenshot="$png" "file://$html" >/dev/null 2>&1
[[ -s "$png" ]] || { echo "chromium produced no screenshot" >&2; exit 1; }
echo "$png"
