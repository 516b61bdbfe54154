#!/usr/bin/env bash
# action.yml's second step: annotations (--format github) and, when asked, a SARIF file. The exit
# status is cudalint's (1 with findings, 0 without; --exit-zero in `args` keeps the job green).
set -uo pipefail
cudalint="${RUNNER_TEMP:?}/cudalint-venv/bin/cudalint"
read -r -a paths <<< "${CUDALINT_PATHS:-.}"
read -r -a args <<< "${CUDALINT_ARGS:-}"
[ ${#paths[@]} -gt 0 ] || paths=(.)
"$cudalint" --format github "${args[@]}" "${paths[@]}"
status=$?
if [ -n "${CUDALINT_SARIF:-}" ] && [ "$status" -le 1 ]; then
  # the same run again, answered by the summary cache; its status is the first run's
  "$cudalint" --format sarif --output-file "$CUDALINT_SARIF" --exit-zero "${args[@]}" "${paths[@]}" || status=2
  echo "sarif-file=$CUDALINT_SARIF" >> "${GITHUB_OUTPUT:?}"
else
  echo "sarif-file=" >> "${GITHUB_OUTPUT:?}"
fi
exit "$status"
