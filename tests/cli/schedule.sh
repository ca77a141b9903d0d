# learning-rate schedules (Keras 3's formulas, recomputed here) reach the
# updates and the history; `epochs = N` in the train block sets the default.
. "$(dirname "$0")/lib.sh"
"$PY" - "$tmp" <<'PY'
import numpy as np, sys
rng = np.random.default_rng(0)
np.save(sys.argv[1] + "/x.npy", rng.random((96, 6), dtype=np.float32))
np.save(sys.argv[1] + "/y.npy", rng.integers(0, 3, 96).astype(np.int32))
PY
model() { # SCHEDULE -> $tmp/m.mg
  cat > "$tmp/m.mg" <<MG
use nn
model m {
  input x: f32[batch, 6]
  input y: i32[batch]
  loss = sparse_softmax_cross_entropy(dense(x, 3), y)
}
train m {
  optimizer = sgd(learning_rate: $1, momentum: 0.9)
  batch = 8 global
  epochs = 3
}
MG
  "$MGC" compile "$tmp/m.mg" -o "$tmp/m.mgx" 2>/dev/null
}
rates() { # [ARGS] -> the history's learning rates, one per epoch, space separated
  "$MGC" run "$tmp/m.mgx" --input x="$tmp/x.npy" --input y="$tmp/y.npy" --history "$tmp/h.jsonl" "$@" > /dev/null
  "$PY" -c "import json,sys; print(' '.join('%.9g' % json.loads(l)['learning_rate'] for l in open(sys.argv[1])))" "$tmp/h.jsonl"
}
check() { # SCHEDULE PYTHON-EXPR-OF-t : the rate after each epoch (12 steps an epoch, 3 epochs)
  model "$1"
  got=$(rates)
  want=$("$PY" -c "from math import *; print(' '.join('%.9g' % (lambda t: $2)(t) for t in (11, 23, 35)))")
  "$PY" -c "import sys; g, w = ([float(v) for v in s.split()] for s in sys.argv[1:]); assert len(g) == 3 and all(abs(a - b) <= 1e-7 * abs(b) for a, b in zip(g, w)), (g, w)" "$got" "$want" \
    || fail "$1: history rates [$got], Keras' [$want]"
}
# t: updates before this one (Keras' optimizer.iterations)
check "cosine_decay(0.1, decay_steps: 30)" "0.1 * (0.5 * (1 + cos(pi * min(t, 30) / 30)))"
check "cosine_decay(0.01, decay_steps: 20, alpha: 0.1, warmup_target: 0.1, warmup_steps: 15)" \
      "0.01 + (0.1 - 0.01) * t / 15 if t < 15 else 0.1 * (0.9 * 0.5 * (1 + cos(pi * min(t - 15, 20) / 20)) + 0.1)"
check "exponential_decay(0.1, decay_steps: 10, decay_rate: 0.5)" "0.1 * 0.5 ** (t / 10)"
check "exponential_decay(0.1, decay_steps: 10, decay_rate: 0.5, staircase: true)" "0.1 * 0.5 ** (t // 10)"
check "piecewise_constant(boundaries: [11, 30], values: [0.1, 0.05, 0.01])" "0.1 if t <= 11 else 0.05 if t <= 30 else 0.01"

# the train block's epochs = 3; --epochs overrides it
model 0.1
[ "$(rates | wc -w)" = 3 ] || fail "epochs = 3 in the train block did not train 3 epochs"
[ "$(rates --epochs 2 | wc -w)" = 2 ] || fail "--epochs 2 did not override the train block"
"$MGC" inspect "$tmp/m.mgx" > "$tmp/inspect"
expect_line "$tmp/inspect" '^epochs        3 \(the train block'"'"'s; --epochs overrides\)$'

# a schedule changes the updates: cosine decay ends elsewhere than its constant initial rate
model "cosine_decay(0.1, decay_steps: 30)"
"$MGC" run "$tmp/m.mgx" --input x="$tmp/x.npy" --input y="$tmp/y.npy" --save "$tmp/a.safetensors" > /dev/null
model 0.1
"$MGC" run "$tmp/m.mgx" --input x="$tmp/x.npy" --input y="$tmp/y.npy" --save "$tmp/b.safetensors" > /dev/null
! cmp -s "$tmp/a.safetensors" "$tmp/b.safetensors" || fail "the schedule did not change the trained weights"
echo ok
