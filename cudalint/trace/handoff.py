"""How the tracer hands its configuration to the traced process: an environment variable and the
`-c` line that imports the bootstrap.
"""
from __future__ import annotations


# the child's configuration travels in this variable; the bootstrap removes it before the program runs
CONFIG_VAR = "CUDALINT_TRACE"
# the child's `-c` program: import the bootstrap from where this cudalint lives, without leaving
# that directory on the program's sys.path
BOOT = (
    "import sys; sys.path.insert(0, {root!r}); "
    "from cudalint.trace import bootstrap as _b; "
    "del sys.path[0]; _b.main(sys.argv[1:])"
)
