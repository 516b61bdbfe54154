"""Carries `cudalint --trace` into every Python process started below a traced program.

The traced program's processes put this folder first on PYTHONPATH for their children (the way
coverage.py measures subprocesses: an environment hook, nothing installed in site-packages); the
`CUDALINT_TRACE_CHILD` variable says where the events go. Here: take this folder off `sys.path`,
start the tracer's hooks (cudalint.trace.children) and then run the `sitecustomize` this file
shadows, if the interpreter has one. A failure here never stops the program: it runs untraced.
"""


def _cudalint_trace() -> None:
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    config = os.environ.get("CUDALINT_TRACE_CHILD")
    if config:
        try:
            root = config.split("\n")[2]
            sys.path.insert(0, root)
            try:
                from cudalint.trace import children  # noqa: F401 (loaded while the root is on sys.path)
                from cudalint.trace import child_start
            finally:
                if sys.path and sys.path[0] == root:
                    del sys.path[0]
            child_start.start_child(config)
        except Exception:
            pass
    # the sitecustomize this one shadows (a distribution's, a virtualenv's), as if we were not here
    me = sys.modules.pop("sitecustomize")
    try:
        __import__("sitecustomize")
    except ImportError:
        sys.modules["sitecustomize"] = me
    except Exception as exc:  # what site.py does with a failing sitecustomize
        print(f"Error in sitecustomize; set PYTHONVERBOSE for traceback:\n{type(exc).__name__}: {exc}",
              file=sys.stderr)


_cudalint_trace()
del _cudalint_trace
