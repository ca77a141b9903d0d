#!/usr/bin/env bash
# pip_install.sh PY SRC BUILD - `pip install ./python` into a fresh venv (offline:
# numpy and setuptools from the system's site-packages), then use the installed
# package from outside the source tree with no MGC_LIBRARY: it must load the
# libmgc.so and stdlib it bundled. 77 (skip) without numpy or venv.
set -euo pipefail
py=$1 src=$2 build=$3
"$py" -c "import numpy, venv, ensurepip" 2>/dev/null || { echo "skip: $py lacks numpy or venv (apt-get install python3-numpy python3-venv)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$src/python" "$tmp/pkg"     # the build writes build/ and *.egg-info beside setup.py
"$py" -m venv --system-site-packages "$tmp/venv"
MGC_SOURCE_DIR=$src MGC_BUILD_DIR=$build "$tmp/venv/bin/pip" install -q --no-index --no-build-isolation "$tmp/pkg" \
  > "$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; exit 1; }
cd "$tmp"
env -u MGC_LIBRARY -u MGC_STDLIB PYTHONPATH= "$tmp/venv/bin/python" - "$src/tests/api/tiny.mg" <<'PY'
import sys
import numpy as np
import mgc
lib = mgc.library_path()
assert "/venv/" in lib and lib.endswith("mgc/libmgc.so"), lib
plan = mgc.compile(sys.argv[1], devices=["cpu:0", "cpu:1"])
x = np.random.default_rng(0).uniform(-1, 1, (128, 12)).astype(np.float32)
y = (x[:, 0] > 0).astype(np.int32)
h = plan.fit({"x": x, "label": y}, epochs=2, verbose=0)
assert len(h["loss"]) == 2 and plan.predict({"x": x}).shape == (128, 4)
print("pip-installed mgc:", lib, "loss", ["%.4f" % v for v in h["loss"]])
PY
