"""`python -m cudalint.trace [options] (-m module | script) [args...]`: see `cudalint.trace.cli`."""
import sys

from cudalint.safepath import trust_sys_path

trust_sys_path()  # (before the tracer's own imports: `-m` put the current folder first on sys.path)

from cudalint.trace.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
