#!/usr/bin/env bash
# The screenshots of docs/trace_overhead.md: a merged trace (TESSERA_TRACE) opened offline in speedscope, a
# trace viewer that reads Chrome's trace-event JSON (npm package `speedscope`; the Perfetto UI has no
# offline package), rendered by headless Chromium (Debian package `chromium`). Neither is a dependency of
# the build or the tests: install them by hand (`apt-get install chromium`, `npm pack speedscope`).
#   scripts/trace_screenshot.sh <trace.json> <speedscope package dir> <out-prefix>
# Writes <out-prefix>_main.png (PE 0's main thread, speedscope's first track) and <out-prefix>_stream.png
# (PE 0's comm stream 0, from a copy of the trace holding that track only: a headless screenshot cannot
# switch tracks).
set -euo pipefail
trace=${1:?usage: $0 <trace.json> <speedscope package dir> <out-prefix>}
viewer=${2:?speedscope package dir (npm pack speedscope; tar xzf)}
out=${3:?out-prefix}
www=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$www"' EXIT
cp -r "$viewer/dist/release/." "$www/"
cp "$trace" "$www/main.json"
/usr/bin/python3 - "$trace" "$www/stream.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
tid = next(e["tid"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == 0
           and e["args"]["name"] == "comm stream 0")
keep = [e for e in ev if e.get("pid") == 0 and ((e["ph"] == "M" and e["name"] != "thread_name") or e.get("tid") == tid)]
json.dump({"traceEvents": keep}, open(sys.argv[2], "w"))
PY
port=$((20000 + RANDOM % 20000))
(cd "$www" && exec /usr/bin/python3 -m http.server "$port" --bind 127.0.0.1 >/dev/null 2>&1) &
server=$!
sleep 1
for which in main stream; do
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1600,900 --virtual-time-budget=10000 \
    --screenshot="$(realpath -m "${out}_$which.png")" \
    "http://127.0.0.1:$port/index.html#profileURL=http://127.0.0.1:$port/$which.json" >/dev/null 2>&1
done
ls -l "${out}_main.png" "${out}_stream.png"
