#!/usr/bin/env bash
# run_pytest.sh PY SRC - tests/python with PY; 77 (skip) when numpy or pytest is missing.
py=$1 src=$2
for m in numpy pytest; do
  "$py" -c "import $m" 2>/dev/null || { echo "skip: $py has no $m (apt-get install python3-numpy python3-pytest)"; exit 77; }
done
exec "$py" -m pytest -q -p no:cacheprovider "$src/tests/python"
