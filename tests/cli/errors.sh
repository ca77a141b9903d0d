# command-line errors: exact messages, exit status 1, nothing written.
. "$(dirname "$0")/lib.sh"
cnn=$SRC/examples/mnist_cnn.mg
expect_fail "$cnn:17:1: error: global batch 100 is not divisible by 3 replicas" \
  "$MGC" compile "$cnn" --devices cpu:0,cpu:1,cpu:2 --global-batch 100 -o "$tmp/x.mgx"
[ ! -e "$tmp/x.mgx" ] || fail "a failed compile wrote a plan"
expect_fail "mgc: --devices: 'tpu:0' is not a device (expected cpu:N or gpu:N)" "$MGC" compile "$cnn" --devices tpu:0
expect_fail "mgc: --devices: cpu:1 is listed twice" "$MGC" compile "$cnn" --devices cpu:1,cpu:1
expect_fail "mgc: --cross-device-ops: 'tree' is not one of ring, one-device, hierarchical" \
  "$MGC" compile "$cnn" --cross-device-ops tree
expect_fail "mgc: --dump-after: no pass named 'magic'" "$MGC" compile "$cnn" --dump-after magic
expect_fail "mgc: unknown command 'fly'" "$MGC" fly
expect_fail "mgc: $tmp/none.mgx: cannot read: No such file or directory" "$MGC" inspect "$tmp/none.mgx"
echo "not a plan" > "$tmp/bad.mgx"
"$MGC" inspect "$tmp/bad.mgx" 2>"$tmp/err" && fail "inspect accepted garbage"
grep -q "^mgc: $tmp/bad.mgx: " "$tmp/err" || fail "no file-named error: $(cat "$tmp/err")"
# gpu requested on a machine without one: one line, then CPU devices
"$MGC" compile "$SRC/examples/mlp.mg" --devices gpu:0,gpu:1 -o "$tmp/g.mgx" 2>"$tmp/err"
expect_line "$tmp/err" '^mgc: gpu:[01] is not available: .+; using 2 CPU devices instead$'
[ "$(wc -l < "$tmp/err")" = 1 ] || fail "the fallback takes more than one line: $(cat "$tmp/err")"
"$MGC" inspect "$tmp/g.mgx" | grep -q 'cpu:0 cpu:1' || fail "fallback plan is not on cpu:0 cpu:1"
why=$(sed -n 's/^mgc: gpu:[01] is not available: \(.*\); using 2 CPU devices instead$/\1/p' "$tmp/err")
expect_fail "mgc: gpu:1 is not available: $why" \
  "$MGC" compile "$SRC/examples/mlp.mg" --devices gpu:0,gpu:1 --strict-devices -o "$tmp/g2.mgx"
echo ok
