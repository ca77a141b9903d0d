#!/usr/bin/env bash
# run.sh BUILD - tests/onnx/test_onnx.py with BUILD/venv's python (scripts/setup.sh
# installs onnx and onnxruntime there), else python3; 77 (skip) when they are missing.
py=python3
[ -x "$1/venv/bin/python" ] && py=$1/venv/bin/python
for m in numpy onnx onnxruntime; do
  "$py" -c "import $m" 2>/dev/null ||
    { echo "skip: $py cannot import $m (scripts/setup.sh installs onnx and onnxruntime into $1/venv)"; exit 77; }
done
export ORT_LOGGING_LEVEL=3
exec "$py" "$(dirname "$0")/test_onnx.py"
