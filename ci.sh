#!/usr/bin/env bash
# The project's test command: from a fresh clone, build or reuse .venv, install the project with its
# dev extras, lint for correctness, type-check everything strictly, then run the whole test suite
# with branch coverage of dex_agents.pure. Any failure (including pytest exit 5, "no tests
# collected") fails the run.
set -euo pipefail
cd "$(dirname "$0")"

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade "pip>=24"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[dev]"

echo "== ruff (correctness rules)"
.venv/bin/ruff check pure shell engine tests benchmarks

echo "== mypy --strict"
.venv/bin/mypy pure shell engine tests benchmarks

echo "== pytest"
export HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}"
# Python's default: cache compiled modules, so the pytest workers and every engine and Worker child
# reuse them instead of compiling the project again (some environments switch the cache off).
unset PYTHONDONTWRITEBYTECODE
set +e
# Tests mostly wait on engines, Workers and child processes, so four pytest workers fit two cores;
# DEX_AGENTS_TEST_WORKERS=0 runs them in this process, one after another.
.venv/bin/python -m pytest -q -p no:cacheprovider --numprocesses "${DEX_AGENTS_TEST_WORKERS:-4}" \
    --cov=pure/dex_agents/pure --cov-branch --cov-report=term --cov-fail-under=95 "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests: failing" >&2
    exit 1
fi
exit "$status"
