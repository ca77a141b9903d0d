# mgc run --trace / --trace-steps / --profile through the CLI: a valid trace of
# the chosen steps on both devices' tracks, the profile's header and rows, and
# the exact errors of bad options.
. "$(dirname "$0")/lib.sh"
"$MGC" compile "$SRC/examples/mlp.mg" --devices cpu:0,cpu:1 -o "$tmp/m.mgx"
# the kernel the tuner chose, here forced (MGC_KERNELS), names each GEMM's
# events and fills the profile's kernel column; untuned ops have none
MGC_KERNELS=openblas "$MGC" run "$tmp/m.mgx" --steps 6 --trace "$tmp/t.json" --trace-steps 3:4 --profile > "$tmp/log"
expect_line "$tmp/log" '^profile: 5 steps, 2 devices, step [0-9.]+ ms \(mean wall time, first op start to last op end\)$'
expect_line "$tmp/log" '^comm: [0-9.]+ ms per step per device, [0-9.]+% of it overlapped by compute on the same device$'
expect_line "$tmp/log" '^op +stream +count +total ms +% step +mean us +kernel$'
expect_line "$tmp/log" '^matmul +compute +[0-9]+ +[0-9.]+ +[0-9.]+% +[0-9.]+ +openblas$'
expect_line "$tmp/log" '^all_reduce +comm +20 +[0-9.]+ +[0-9.]+% +[0-9.]+ *$'
"$PY" - "$tmp/t.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
x = [e for e in ev if e["ph"] == "X"]
gemm = [e for e in x if e["args"]["op"] in ("matmul", "matmul_epilogue")]
assert gemm and all(e["args"].get("kernel") == "openblas" for e in gemm), gemm[:2]
assert all("kernel" not in e["args"] for e in x if e["args"]["op"] in ("all_reduce", "relu_grad", "adam_update"))
assert {e["args"]["step"] for e in x} == {3, 4}, {e["args"]["step"] for e in x}
assert {(e["pid"], e["tid"]) for e in x} == {(0, 0), (0, 1), (1, 0), (1, 1)}
names = {(e["pid"], e["tid"], e["name"], e["args"]["name"]) for e in ev if e["ph"] == "M"}
assert (0, 0, "process_name", "cpu:0") in names and (1, 1, "thread_name", "comm") in names, names
ar = [e for e in x if e["args"]["op"] == "all_reduce"]
assert ar and all("bucket" in e["args"] and e["args"]["bytes"] > 0 for e in ar), ar[:2]
PY
# with train steps in flight (mgc run's default; docs/runtime.md) each span is
# its own step's: every traced step holds each (replica, node) once, the same
# set in every step, where spans taken by the wrong step would double some
# nodes in one step and miss them in the next
"$MGC" run "$tmp/m.mgx" --steps 14 --trace "$tmp/f.json" --trace-steps 3:12 > /dev/null
"$PY" - "$tmp/f.json" <<'PY'
import collections, json, sys
x = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "X"]
per = collections.defaultdict(collections.Counter)
for e in x:
    per[e["args"]["step"]][(e["pid"], e["args"]["node"])] += 1
assert sorted(per) == list(range(3, 13)), sorted(per)
first = per[3]
assert first and set(first.values()) == {1}, first
for k, c in per.items():
    assert c == first, (k, c - first, first - c)
PY
# a kernel measured in the first traced step is named there too
MGC_CACHE_DIR="$tmp/fresh" "$MGC" run "$tmp/m.mgx" --steps 2 --trace "$tmp/k.json" --trace-steps 1:2 > /dev/null
"$PY" - "$tmp/k.json" <<'PY'
import json, sys
x = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "X" and e["args"]["op"] == "matmul"]
assert x and all(e["args"].get("kernel") for e in x), x[:2]
PY
# the default steps 2:4; a run shorter than them writes a trace without events, and says so
"$MGC" run "$tmp/m.mgx" --steps 4 --trace "$tmp/d.json" > /dev/null
"$PY" -c "import json,sys; s={e['args']['step'] for e in json.load(open(sys.argv[1]))['traceEvents'] if e['ph']=='X'}; assert s=={2,3,4}, s" "$tmp/d.json"
"$MGC" run "$tmp/m.mgx" --steps 1 --trace "$tmp/e.json" --profile > "$tmp/log" 2> "$tmp/err"
grep -qxF "mgc: --trace: no step of this run is in 2:4; $tmp/e.json holds no events" "$tmp/err" || fail "no note: $(cat "$tmp/err")"
expect_line "$tmp/log" "^profile: no step was profiled \(--profile counts the steps after the run's first\)$"
# bad options
for bad in 0:3 3:2 2 a:b 2:x 1:1001 :4 2:; do
  expect_fail "mgc: --trace-steps: '$bad' is not A:B with 1 <= A <= B and at most 1000 steps" \
    "$MGC" run "$tmp/m.mgx" --trace "$tmp/t.json" --trace-steps "$bad"
done
expect_fail "mgc: --trace-steps needs --trace FILE.json" "$MGC" run "$tmp/m.mgx" --trace-steps 2:3
mkdir "$tmp/dir"
expect_fail "mgc: $tmp/dir: not a regular file (a directory); mgc writes only regular files" \
  "$MGC" run "$tmp/m.mgx" --steps 1 --trace "$tmp/dir"
echo ok
