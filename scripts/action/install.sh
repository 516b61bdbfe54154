#!/usr/bin/env bash
# action.yml's first step: install cudalint (a PyPI version, or the action's own checkout) into a
# virtualenv under $RUNNER_TEMP, so the project's own environment is left as it is.
set -euo pipefail
venv="${RUNNER_TEMP:?}/cudalint-venv"
"${CUDALINT_PYTHON:-python3}" -m venv "$venv"
if [ -n "${CUDALINT_VERSION:-}" ]; then
  "$venv/bin/python" -m pip install --quiet "cudalint==${CUDALINT_VERSION}"
else
  "$venv/bin/python" -m pip install --quiet "${GITHUB_ACTION_PATH:?}"
fi
echo "$venv/bin" >> "${GITHUB_PATH:?}"
"$venv/bin/cudalint" --version
