#!/usr/bin/env bash
# The project's test command: from a fresh clone, build or reuse .venv, install the project with its
# dev extras, lint for correctness, type-check everything strictly, then run the whole test suite
# with branch coverage of dex_agents.pure. Any failure (including pytest exit 5, "no tests
# collected") fails the run.
set -euo pipefail
cd "$(dirname "$0")"

# The console's browser tests drive Debian's Chromium (Playwright's own download needs the internet).
if ! command -v chromium >/dev/null 2>&1; then
    echo "== installing chromium (the console's browser tests)"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium >/dev/null
fi

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade "pip>=24"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[dev]"

echo "== generated sync client (scripts/unasync.py --check)"
.venv/bin/python scripts/unasync.py --check

echo "== ruff (correctness rules)"
.venv/bin/ruff check pure shell engine tests benchmarks scripts

echo "== mypy --strict"
.venv/bin/mypy pure shell engine tests benchmarks typings scripts

echo "== pytest"
export HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}"
# Python's default: cache compiled modules, so the pytest workers and every engine and Worker child
# reuse them instead of compiling the project again (some environments switch the cache off).
unset PYTHONDONTWRITEBYTECODE
# The tests get a temporary directory of their own: whatever they leave in it, beyond pytest's
# own tmp_path tree, fails the run (tests leave no files behind).
test_tmp="$(mktemp -d)"
trap 'rm -rf "$test_tmp"' EXIT
set +e
# Tests mostly wait on engines, Workers and child processes, so four pytest workers fit two cores;
# DEX_AGENTS_TEST_WORKERS=0 runs them in this process, one after another.
TMPDIR="$test_tmp" .venv/bin/python -m pytest -q -p no:cacheprovider --numprocesses "${DEX_AGENTS_TEST_WORKERS:-4}" \
    --cov=pure/dex_agents/pure --cov-branch --cov-report=term --cov-fail-under=95 "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests: failing" >&2
    exit 1
fi
leftovers="$(find "$test_tmp" -mindepth 1 -maxdepth 1 ! -name 'pytest-of-*')"
if [ -n "$leftovers" ]; then
    echo "the tests left these in the temporary directory: failing" >&2
    echo "$leftovers" >&2
    exit 1
fi
exit "$status"
