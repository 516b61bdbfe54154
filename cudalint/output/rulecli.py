"""`cudalint rule CODE`, `cudalint rule --all`, `--list-rules` and `--show-settings` (ruff's names)."""
from __future__ import annotations

import json
import os
from cudalint.core.record import fields
from typing import Optional

import click


def _rows() -> list[dict]:
    from cudalint.core.registry import RULES
    from cudalint.output.report import doc_url

    return [
        {"code": r.code, "name": r.name, "severity": r.severity, "summary": r.summary, "url": doc_url(r.code)}
        for r in RULES.values()
    ]


def list_rules(fmt: str = "text") -> None:
    rows = _rows()
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        click.echo(f"{r['code']}  {r['name']:<{width}}  {r['severity']:<7}  {r['summary']}")


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="Every rule's documentation.")
@click.option("--output-format", "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def rule(code: Optional[str], show_all: bool, fmt: str) -> None:
    """Print the documentation of rule CODE (or of every rule with --all)."""
    from cudalint.core.registry import RULES, doc, doc_path

    if show_all == bool(code):
        raise click.UsageError("give a rule code or --all")
    codes = list(RULES) if show_all else [code.upper()]  # type: ignore[union-attr]
    for c in codes:
        if c not in RULES or not os.path.isfile(doc_path(c)):
            raise click.UsageError(f"unknown rule code {code!r}; known: {', '.join(sorted(RULES))}")
    if fmt == "json":
        by_code = {r["code"]: r for r in _rows()}
        out = [{**by_code[c], "explanation": doc(c)} for c in codes]
        click.echo(json.dumps(out if show_all else out[0], indent=2))
        return
    click.echo("\n".join(doc(c).rstrip("\n") + "\n" for c in codes), nl=False)


def show_settings(config, config_path: Optional[str], cache_dir: Optional[str]) -> None:
    """The resolved settings, in [tool.cudalint]'s key names (what the file and the command line made)."""
    from cudalint.inputs.settings import KEYS, shown

    names = {field_name: key for key, (field_name, _) in KEYS.items()}
    click.echo(f"Settings path: {shown(config_path) if config_path is not None else '(none: defaults)'}")
    click.echo(f"Cache dir: {cache_dir if cache_dir is not None else '(no cache)'}")
    for name in fields(config):
        value = getattr(config, name)
        if name == "per_file_ignores":
            value = {pattern: list(codes) for pattern, codes in value}
        elif isinstance(value, tuple):
            value = list(value)
        click.echo(f"{names.get(name, name)} = {json.dumps(value)}")
