#!/usr/bin/env python3
"""gpu-compare.py - compares two training runs of the same plan and seed
(scripts/gpu-check.sh): their --history files (JSON Lines, one object per
epoch) and their --save checkpoints (safetensors, f32 tensors).

usage: gpu-compare.py LABEL A.safetensors B.safetensors PARAM_TOL [A.jsonl B.jsonl LOSS_TOL VAL_LOSS_TOL]

- params: for every tensor (weights and optimizer slots), ||a - b||_2 /
  ||b||_2 <= PARAM_TOL (b is the reference, the CPU run); the same names,
  dtypes and shapes on both sides; any NaN or Inf fails. PARAM_TOL "-":
  the distances are printed, not checked (long runs: rounding differences
  grow through training, docs/gpu.md).
- history: the same number of epochs; per epoch, |loss_a - loss_b| <=
  LOSS_TOL * |loss_b|, and val_loss within VAL_LOSS_TOL likewise.
Prints one line per check and `LABEL: PASS` or `LABEL: FAIL (...)`; exit 0/1.
Pure Python (no numpy): the seed CNN has 0.7 M parameters.
"""
import array
import json
import math
import struct
import sys


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        lo, hi = t["data_offsets"]
        if t["dtype"] == "F32":
            a = array.array("f")
            a.frombytes(data[lo:hi])
            if sys.byteorder != "little":
                a.byteswap()
        else:  # compared bytewise (step counters, integer state)
            a = data[lo:hi]
        out[name] = (t["dtype"], tuple(t["shape"]), a)
    return out


def rel_l2(a, b):
    num = den = 0.0
    for x, y in zip(a, b):
        if not (math.isfinite(x) and math.isfinite(y)):
            return math.inf
        num += (x - y) * (x - y)
        den += y * y
    if den == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return math.sqrt(num / den)


def compare_params(pa, pb, tol, problems):
    check = tol != "-"
    tol = float(tol) if check else math.inf
    a, b = read_safetensors(pa), read_safetensors(pb)
    if sorted(a) != sorted(b):
        problems.append("tensor names differ: %s" % sorted(set(a) ^ set(b)))
        return
    worst, worst_name, identical = 0.0, "", True
    for name in sorted(b):
        (da, sa, xa), (db, sb, xb) = a[name], b[name]
        if da != db or sa != sb:
            problems.append("%s: %s%s vs %s%s" % (name, da, list(sa), db, list(sb)))
            continue
        if da != "F32":
            if xa != xb:
                problems.append("%s (%s) differs" % (name, da))
            continue
        identical = identical and xa.tobytes() == xb.tobytes()
        r = rel_l2(xa, xb)
        if r > worst or not math.isfinite(r):
            worst, worst_name = r, name
        if not r <= tol or (not check and not math.isfinite(r)):
            problems.append("%s: relative L2 distance %.3g > %g" % (name, r, tol))
    print("  params: %d tensors, worst relative L2 distance %.3g (%s), %s%s"
          % (len(b), worst, worst_name or "-", "tolerance %g" % tol if check else "not checked",
             ", bit-identical" if identical else ""))


def read_history(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def compare_history(ha, hb, tols, problems):
    a, b = read_history(ha), read_history(hb)
    if len(a) != len(b) or not b:
        problems.append("history: %d vs %d epochs" % (len(a), len(b)))
        return
    for ea, eb in zip(a, b):
        for key, tol in zip(("loss", "val_loss"), tols):
            if key not in eb:
                continue
            x, y = ea.get(key, math.nan), eb[key]
            ok = math.isfinite(x) and abs(x - y) <= tol * abs(y)
            print("  epoch %d %s: %.6f vs %.6f (relative difference %.2g, tolerance %g)%s"
                  % (eb.get("epoch", 0), key, x, y, abs(x - y) / abs(y) if y else math.inf, tol,
                     "" if ok else "  <-- FAIL"))
            if not ok:
                problems.append("epoch %d %s %.6f vs %.6f" % (eb.get("epoch", 0), key, x, y))


def main(argv):
    if len(argv) not in (5, 9):
        sys.stderr.write(__doc__)
        return 2
    label, problems = argv[1], []
    print("%s:" % label)
    compare_params(argv[2], argv[3], argv[4], problems)
    if len(argv) == 9:
        compare_history(argv[5], argv[6], (float(argv[7]), float(argv[8])), problems)
    print("%s: %s" % (label, "PASS" if not problems else "FAIL (%s)" % "; ".join(problems[:5])))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
