#!/usr/bin/env bash
# text_classifier.sh - issue 13's text classifier at 10,000 x 64 (tokens
# i32[32 per replica, 64] -> embedding 64 -> mean over the tokens -> dense 64
# relu -> dense 2, sparse cross-entropy, Adam) in two forms: bench/text_embedding.mg
# (embedding: gather, its gradient scatter_add) and bench/text_onehot.mg (the
# workaround: one_hot(tokens, 10000) times the table). Prints the time per step
# of each on 1 device (one core) and on 2 logical devices (cpu:0,cpu:1, 32 per
# replica), the ratio, the planned memory per device (mgc inspect) and
# PyTorch's time per step for both forms on one thread (bench/torch_text.py).
# Synthetic data: 2,048 examples of uniform tokens, label = more than half the
# tokens below 5,000, written as NPY with Debian's python3-numpy.
#   bench/text_classifier.sh [STEPS] [ONEHOT_STEPS]   (default 300 and 30; needs build/mgc)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-300}; onehot_steps=${2:-30}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1

/usr/bin/python3 - "$tmp" <<'PY'
import sys
import numpy as np
r = np.random.default_rng(1)
t = r.integers(0, 10000, size=(2048, 64), dtype=np.int32)
np.save(f"{sys.argv[1]}/tokens.npy", t)
np.save(f"{sys.argv[1]}/label.npy", ((t < 5000).sum(axis=1) > 32).astype(np.int32))
PY

# model devices -> plan path (compiled once)
plan() {
  local p="$tmp/$1-${2//[:,]/_}.mgx"
  [ -f "$p" ] || build/mgc compile "bench/text_$1.mg" --devices "$2" -o "$p" 2>/dev/null
  echo "$p"
}
# model devices steps -> milliseconds per step (the history's seconds over its steps)
ms_per_step() {
  local p; p=$(plan "$1" "$2")
  build/mgc run "$p" --steps "$3" --input tokens="$tmp/tokens.npy" --input label="$tmp/label.npy" \
    --history "$tmp/h.jsonl" > /dev/null
  /usr/bin/python3 -c "import json,sys; h=[json.loads(l) for l in open(sys.argv[1])]
print(f'{1000 * sum(e[\"seconds\"] for e in h) / h[-1][\"step\"]:.3f}')" "$tmp/h.jsonl"
}
# model devices -> the largest planned arena of a device, MiB (mgc inspect)
mib() {
  build/mgc inspect "$(plan "$1" "$2")" | awk '/planned with reuse/ { for (i = 1; i < NF; i++) if ($i == "planned" && $(i + 3) > m) m = $(i + 3) } END { print m }'
}
export -f plan ms_per_step; export tmp

e1=$(taskset -c 0 bash -c "ms_per_step embedding cpu:0 $steps")
o1=$(taskset -c 0 bash -c "ms_per_step onehot cpu:0 $onehot_steps")
e2=$(ms_per_step embedding cpu:0,cpu:1 "$steps")
o2=$(ms_per_step onehot cpu:0,cpu:1 "$onehot_steps")
me1=$(mib embedding cpu:0); mo1=$(mib onehot cpu:0); me2=$(mib embedding cpu:0,cpu:1); mo2=$(mib onehot cpu:0,cpu:1)
te=$(taskset -c 0 /usr/bin/python3 bench/torch_text.py "$tmp/tokens.npy" "$tmp/label.npy" embedding "$steps" 32 1)
to=$(taskset -c 0 /usr/bin/python3 bench/torch_text.py "$tmp/tokens.npy" "$tmp/label.npy" onehot "$onehot_steps" 32 1)
torch_v=$(/usr/bin/python3 -c 'import torch; print(torch.__version__)')

printf "%-44s %12s %12s %8s\n" "text classifier 10,000 x 64, 32/replica" "embedding" "one-hot" "ratio"
row() { printf "%-44s %9s ms %9s ms %7sx\n" "$1" "$2" "$3" "$(/usr/bin/python3 -c "print(f'{$3 / $2:.1f}')")"; }
row "mgc, cpu:0, 1 core, per step" "$e1" "$o1"
row "mgc, cpu:0,cpu:1, 2 cores, per step" "$e2" "$o2"
row "pytorch $torch_v, 1 thread, 1 core, per step" "$te" "$to"
printf "%-44s %9s MiB %8s MiB\n" "mgc memory per device, 1 device (planned)" "$me1" "$mo1"
printf "%-44s %9s MiB %8s MiB\n" "mgc memory per device, 2 devices (planned)" "$me2" "$mo2"
/usr/bin/python3 - "$e1" "$o1" "$e2" "$o2" "$me1" "$me2" "$te" <<'PY'
import sys
e1, o1, e2, o2, m1, m2, te = map(float, sys.argv[1:])
print(f"one-hot / embedding per step: {o1 / e1:.1f}x on 1 device, {o2 / e2:.1f}x on 2 devices (target >= 20x)")
print(f"embedding memory per device: {max(m1, m2):.2f} MiB (target < 20 MiB)")
print(f"pytorch / mgc per step, embedding, 1 core: {te / e1:.1f}x")
PY
