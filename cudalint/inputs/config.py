"""What a run is asked to do: which rules, which files, which extra catalogues, which Python."""
from __future__ import annotations

from cudalint.core.record import record


@record
class Config:
    select: tuple[str, ...] = ()  # empty: every rule that is on by default
    extend_select: tuple[str, ...] = ()  # added to `select` (ruff's extend-select)
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    extend_catalogue: tuple[str, ...] = ()
    target_version: str = "py310"
    respect_gitignore: bool = True

    def enabled(self, code: str) -> bool:
        """ruff's rule: the most specific matching prefix of --select and --ignore wins."""
        select = self.select + self.extend_select if self.select else ()  # (no select: every rule is on)
        sel = max((len(p) for p in select if p == "ALL" or code.startswith(p)), default=-1) if select else 0
        ign = max((len(p) for p in self.ignore if code.startswith(p)), default=-1)
        return sel > ign
