# multi-worker training: P processes follow the one-process trajectory (the
# plan's global batch holds), workers may hold different device counts, and a
# worker that dies makes the others fail within the collective timeout.
. "$(dirname "$0")/lib.sh"
mpi="mpirun --allow-run-as-root --oversubscribe -x OPENBLAS_NUM_THREADS -x OMP_NUM_THREADS -x MGC_STDLIB"
"$MGC" compile "$SRC/examples/mnist_cnn.mg" --devices cpu:0 --global-batch 96 -o "$tmp/one.mgx"
"$MGC" compile "$SRC/examples/mnist_cnn.mg" --devices cpu:0,cpu:1 --global-batch 96 -o "$tmp/two.mgx"
"$MGC" run "$tmp/one.mgx" --steps 20 --seed 5 --save "$tmp/ref.safetensors" > /dev/null
$mpi -np 2 "$MGC" run "$tmp/one.mgx" --steps 20 --seed 5 --save "$tmp/p2.safetensors" > "$tmp/log2" 2>&1 ||
  fail "mpirun -np 2: $(cat "$tmp/log2")"
# MPMD: one worker with 2 devices, two with 1: 4 replicas of 24 examples
$mpi -np 1 "$MGC" run "$tmp/two.mgx" --steps 20 --seed 5 --save "$tmp/p3.safetensors" : \
     -np 2 "$MGC" run "$tmp/one.mgx" --steps 20 --seed 5 > "$tmp/log3" 2>&1 ||
  fail "mpirun -np 3: $(cat "$tmp/log3")"
grep -c "^Epoch 1/1" "$tmp/log3" | grep -qx 1 || fail "more than rank 0 printed progress: $(cat "$tmp/log3")"
"$PY" - "$tmp/ref.safetensors" "$tmp/p2.safetensors" "$tmp/p3.safetensors" <<'PY'
import json, struct, sys
import numpy as np
def load(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n]); data = raw[8 + n:]
    return {k: np.frombuffer(data[v["data_offsets"][0]:v["data_offsets"][1]], np.float32)
            for k, v in head.items() if k != "__metadata__" and "/" in k and k.count("/") == 1}
ref = load(sys.argv[1])
for path in sys.argv[2:]:
    got = load(path)
    for k, a in ref.items():
        rel = np.linalg.norm(a - got[k]) / max(np.linalg.norm(a), 1e-30)
        assert rel < 1e-5, (path, k, rel)
print("ok: params within 1e-5 of the one-process run")
PY
# a worker that dies: the other exits 1 with the collective error within the timeout
start=$(date +%s)
status=0
MGC_FAULT_EXIT_RANK=1 $mpi -x MGC_FAULT_EXIT_RANK -np 2 "$MGC" run "$tmp/one.mgx" --steps 200 --collective-timeout 3 \
  > "$tmp/log4" 2>&1 || status=$?
[ "$status" != 0 ] || fail "a run with a dead worker succeeded"
[ $(( $(date +%s) - start )) -lt 60 ] || fail "a dead worker took more than 60 s to notice"
echo ok
