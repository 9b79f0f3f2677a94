#!/usr/bin/env bash
# Batch benchmark runs with tables and plots:
#   ./test.sh [MATRIX] [--target local|cluster] [--rounds N] [--max-runs N] [--dry-run] [--out DIR]
#          [--mlflow [URI]]   (the batch as one MLflow experiment: docs/how-to/tracking.md)
# MATRIX defaults to bench/matrix/workers-period.yml; see bench/matrix/ and README.md
# (`workload: stacking` in a matrix, e.g. bench/matrix/stacking.yml, runs the stacking functions).
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x .venv/bin/python ]; then
    make deps >&2
fi
exec .venv/bin/python -m faasgd.batch "$@"
