"""`python -m cudalint.trace [options] (-m module | script) [args...]`: see `cudalint.trace.cli`."""
import sys

from cudalint.trace.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
