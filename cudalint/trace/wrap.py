"""`functools.wraps` without importing functools (and collections) into every traced program."""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable


def wraps(fn: Any) -> Callable[[Any], Any]:
    """The wrapper keeps the wrapped function's name, doc and module, and `__wrapped__` lets
    `inspect.signature` see through it, as functools.wraps does."""
    def apply(wrapper: Any) -> Any:
        for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
            try:
                setattr(wrapper, attr, getattr(fn, attr))
            except (AttributeError, TypeError):
                pass
        try:
            wrapper.__dict__.update(getattr(fn, "__dict__", {}))
        except (AttributeError, TypeError):
            pass
        wrapper.__wrapped__ = fn
        return wrapper

    return apply
