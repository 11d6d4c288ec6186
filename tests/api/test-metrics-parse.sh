#!/usr/bin/env bash
# The metrics writer's output, with escapes, special values and a
# histogram, read back by the real Prometheus parser
# (python3-prometheus-client): what we write is what a scraper reads.
set -euo pipefail
PY3=/usr/bin/python3
[ -x "$PY3" ] || { echo "SKIP: needs /usr/bin/python3"; exit 77; }
"$PY3" -c 'import prometheus_client.parser' 2>/dev/null || { echo "SKIP: needs python3-prometheus-client"; exit 77; }
"$1" emit | "$PY3" -c '
import math, sys
from prometheus_client.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(sys.stdin.read())}
ev = fams["layoutd_test_events"]
assert ev.type == "counter" and ev.documentation == "Events with \\ and\nnewline in help.", repr(ev.documentation)
s = [x for x in ev.samples if x.name == "layoutd_test_events_total"]
assert s[0].labels == {"path": "C:\\dir\\\"quoted\"\nline2", "kind": "ünïcödé"} and s[0].value == 42, s[0]
assert s[1].labels == {"path": "", "kind": "empty"} and s[1].value == 0, s[1]
assert fams["layoutd_test_size_bytes"].samples[0].value == 17179869184
r = {x.labels["v"]: x.value for x in fams["layoutd_test_ratio"].samples}
assert math.isnan(r["nan"]) and r["inf"] == math.inf and r["small"] == 1.5e-7, r
h = fams["layoutd_test_latency_seconds"]
assert h.type == "histogram"
b = [(x.labels["le"], x.value) for x in h.samples if x.name.endswith("_bucket")]
assert b == [("0.001", 2), ("0.01", 11), ("0.1", 100), ("1", 100), ("+Inf", 100)], b
cnt = [x.value for x in h.samples if x.name.endswith("_count")][0]
sm = [x.value for x in h.samples if x.name.endswith("_sum")][0]
assert cnt == 100 and abs(sm - 4.95) < 1e-9, (cnt, sm)
print("parsed %d families" % len(fams))
'
