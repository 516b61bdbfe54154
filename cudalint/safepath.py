"""Import only cudalint and the standard library from where they are installed, whatever the
current folder holds.

A linter runs in the folder it lints. `python -m cudalint` puts that folder first on `sys.path`, and a
spawned worker starts as `python -c "from multiprocessing.spawn import spawn_main ..."`, which puts
`''` (the folder it starts in) first: a `multiprocessing.py`, `pickle.py` or `json.py` in the linted
tree would then be imported, and run, in place of the standard library's. So:

- `trust_sys_path()` (called by the entry point of the console script and `python -m cudalint`)
  drops the current folder the interpreter put first on `sys.path`, unless cudalint itself was
  loaded from it (a checkout of cudalint, which is trusted as cudalint is);
- `trusted_cwd()` makes worker processes start in the standard library's own folder, where `''`
  can only find what the standard library would give anyway; each worker then moves to the run's
  real folder (`enter`, the pool's initializer) before it reads a file, with the trusted
  `sys.path` it inherited.
"""
# Only os and sys (both loaded by the interpreter before any code of ours) until the path is
# trusted: this module is what makes later imports safe, so it may import nothing that can be
# shadowed, not even `from __future__ import annotations`.
import os
import sys

# the folder that holds the standard library's pure-Python modules (os.py is one of them)
STDLIB_DIR = os.path.dirname(os.path.abspath(os.__file__))


def _here() -> str:
    # the folder on sys.path that cudalint was imported from (the parent of the package)
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _same(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def trust_sys_path() -> None:
    """Drop the entry the interpreter put first for the current folder ('' for `-c`, its absolute
    path for `-m`), unless cudalint itself lives there. Later entries (the installation's, and
    PYTHONPATH, which its user set) are left alone: the standard library may be the current folder
    (a worker starts there, cudalint.safepath.trusted_cwd) and must stay on the path."""
    if not sys.path:
        return
    try:
        cwd = os.getcwd()
    except OSError:  # the folder was removed under us: '' can find nothing there either
        cwd = None
    first = sys.path[0]
    if first == "" or (cwd is not None and _same(first, cwd)):
        if cwd is None or not _same(cwd, _here()):
            del sys.path[0]


class trusted_cwd:
    """While worker processes are started (`with trusted_cwd():`), the current folder is the
    standard library's; the workers enter the real one (`enter`) before their first task. The
    current folder is the process's: a lock keeps two starts from interleaving."""

    _lock = None

    def __enter__(self) -> str:
        import threading

        if trusted_cwd._lock is None:
            trusted_cwd._lock = threading.Lock()
        trusted_cwd._lock.acquire()
        self.real = os.getcwd()
        os.chdir(STDLIB_DIR)
        return self.real

    def __exit__(self, *exc: object) -> None:
        try:
            os.chdir(self.real)
        finally:
            trusted_cwd._lock.release()


def enter(folder: str) -> None:
    """A worker's initializer: go to the run's folder (relative paths are the user's), and trust
    only what sys.path held besides it (the parent, a library's host, may not have cleaned it)."""
    os.chdir(folder)
    trust_sys_path()
