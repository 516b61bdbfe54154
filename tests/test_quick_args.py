"""cudalint.quick_args reads a plain command line exactly as click does, and leaves the rest to click.

Every command line below is read twice: by `quick_args.parse` and by the click command itself
(`cli.make_context`, which parses and converts without running). Where the quick parser answers,
the two must agree on every option; where click would refuse the line or where the quick parser
cannot be sure, it must answer None.
"""
from __future__ import annotations

import io
import itertools
import sys
import os
from pathlib import Path

import click
import pytest
from hypothesis import given, settings, strategies as st

from cudalint.cli import cli
from cudalint.command import Options
from cudalint.core import record
from cudalint.quick_args import parse


def clicks(argv: list[str]) -> Options | None:
    """click's reading of the line as Options (the fields the lint command gets), None if it refuses it."""
    try:
        ctx = cli.make_context("cudalint", list(argv))
    except (click.exceptions.Exit, click.ClickException):
        return None
    p = ctx.params
    if p["trace_flag"] or p["explain"] or p["list_rules"]:
        return None
    fields = {name: p[name] for name in record.fields(Options) if name in p}
    fields["paths"] = tuple(p["paths"])
    fields["extend_catalogue"] = tuple(p["extend_catalogue"])
    return Options(**fields)


PLAIN = [
    [],
    ["src"],
    ["src", "tests/x.py"],
    ["--format", "json", "--no-gitignore", "lightning"],
    ["--format=json", "lightning"],
    ["--output-format", "sarif", "a", "b"],
    ["a", "--select", "CUD001,CUD002", "b", "--select=CUD1"],
    ["--ignore", "CUD003", "--extend-select", "CUD1", "--exclude", "tests/*", "--exclude=build"],
    ["--per-file-ignores", "tests/*:CUD001", "src"],
    ["-j", "2", "src"],
    ["-j2", "src"],
    ["--jobs=3"],
    ["--jobs", "02"],
    ["-q", "-s", "--statistics", "--exit-zero", "--show-source", "--force-exclude", "--no-cache"],
    ["--quiet", "--silent"],
    ["--color", "never", "--color=always"],
    ["--target-version", "py312"],
    ["--format", "json", "--format", "text"],
    ["--cache-dir", "/tmp/somewhere-new"],
    ["--select="],
    ["pkg/mod.py", "--force-exclude", "other.py"],
]

REFUSED = [
    ["--help"],
    ["-h"],
    ["--version"],
    ["--", "src"],
    ["-"],
    ["-qs"],
    ["--format", "xml"],
    ["--format"],
    ["--jobs", "0"],
    ["--jobs", "two"],
    ["-j", "-1"],
    ["--select", "-x"],
    ["--no-cache=1"],
    ["--nope"],
    ["-x"],
    ["rule", "CUD001"],
    ["server"],
    ["--fix", "src"],
    ["--diff"],
    ["--add-noqa"],
    ["--explain", "CUD001"],
    ["--list-rules"],
    ["--trace", "x.py"],
    ["--show-settings"],
    ["--show-files"],
    ["--config", "pyproject.toml"],
    ["--baseline", "b.json"],
    ["-o", "out.txt"],
    ["--output-file=out.txt"],
    ["--extend-catalogue", "mine.toml"],
    ["--stdin-filename", "x.py", "-"],
    ["--cache-dir="],
    ["--format=", "src"],
]


@pytest.mark.parametrize("argv", PLAIN, ids=lambda a: " ".join(a) or "(none)")
def test_a_plain_line_reads_as_click_reads_it(argv: list[str], monkeypatch) -> None:
    monkeypatch.delenv("CUDALINT_CACHE_DIR", raising=False)
    quick = parse(argv)
    assert quick is not None
    assert quick == clicks(argv)


@pytest.mark.parametrize("argv", REFUSED, ids=lambda a: " ".join(a))
def test_anything_else_is_left_to_click(argv: list[str], monkeypatch) -> None:
    monkeypatch.delenv("CUDALINT_CACHE_DIR", raising=False)
    assert parse(argv) is None


def test_the_cache_folder_comes_from_the_environment_as_click_takes_it(tmp_path: Path, monkeypatch) -> None:
    """CUDALINT_CACHE_DIR when --cache-dir is not given; empty counts as unset; the option wins."""
    monkeypatch.setenv("CUDALINT_CACHE_DIR", str(tmp_path / "c"))
    assert parse(["src"]).cache_dir == str(tmp_path / "c") == clicks(["src"]).cache_dir
    assert parse(["--cache-dir", "d"]).cache_dir == "d" == clicks(["--cache-dir", "d"]).cache_dir
    monkeypatch.setenv("CUDALINT_CACHE_DIR", "")
    assert parse(["src"]).cache_dir is None
    assert clicks(["src"]).cache_dir is None


def test_a_cache_folder_that_is_a_file_is_left_to_click(tmp_path: Path, monkeypatch) -> None:
    """click.Path(file_okay=False) refuses it, from the option or from the environment."""
    afile = tmp_path / "f"
    afile.write_text("")
    monkeypatch.delenv("CUDALINT_CACHE_DIR", raising=False)
    assert parse(["--cache-dir", str(afile)]) is None
    assert clicks(["--cache-dir", str(afile)]) is None
    monkeypatch.setenv("CUDALINT_CACHE_DIR", str(afile))
    assert parse(["src"]) is None
    assert clicks(["src"]) is None


TOKENS = [
    "src", "a.py", "--format", "json", "text", "--select", "CUD001", "--select=CUD002", "-j", "-j2", "2", "0",
    "--jobs=1", "-q", "-s", "--quiet", "--no-cache", "--no-gitignore", "--color", "never", "--ignore", "CUD003,CUD1",
    "--exclude", "build/*", "--target-version", "py311", "--statistics", "-", "--", "--per-file-ignores", "t/*:CUD1",
    "--exit-zero", "--show-source", "--force-exclude", "--format=sarif", "--color=auto", "-x", "--select=",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=7))
def test_random_lines_agree_with_click_or_are_left_to_it(argv: list[str]) -> None:
    """Any line the quick parser reads, click reads the same; a line click refuses, it never reads."""
    # (hypothesis cannot use monkeypatch; the session's cache folder, tests/conftest.py, comes back)
    saved = os.environ.pop("CUDALINT_CACHE_DIR", None)
    try:
        quick = parse(argv)
        if quick is not None:
            assert quick == clicks(argv), argv
    finally:
        if saved is not None:
            os.environ["CUDALINT_CACHE_DIR"] = saved


def test_the_two_parsers_know_the_same_options() -> None:
    """Each option the quick parser reads is one of the click command's, with the same kind."""
    from cudalint import quick_args

    params = {opt: p for p in cli.params for opt in p.opts + p.secondary_opts}
    for table, kind in ((quick_args._FLAGS, "flag"), (quick_args._REPEATED, "multiple"), (quick_args._CHOICES, "choice")):
        for opt in table:
            p = params[opt]
            assert (p.is_flag, p.multiple, isinstance(p.type, click.Choice)) == (kind == "flag", kind == "multiple", kind == "choice"), opt
            if kind == "choice":
                assert tuple(p.type.choices) == quick_args._CHOICES[opt][1]
    for opt in itertools.chain(quick_args._JOBS, [quick_args._FOLDER]):
        assert opt in params


SCENARIOS = [
    ["t.py"],
    [],
    ["--format", "json", "t.py"],
    ["--format", "sarif"],
    ["--format", "github", "--no-cache"],
    ["--statistics", "t.py"],
    ["--color", "always", "t.py"],
    ["-q", "t.py"],
    ["-s", "t.py"],
    ["--exit-zero", "--show-source", "t.py"],
    ["missing.py"],
    ["--select", "CUD999", "t.py"],
    ["--per-file-ignores", "oops", "t.py"],
    ["--ignore", "CUD001", "t.py"],
    ["--cache-dir", "linked", "t.py"],
]


@pytest.mark.parametrize("argv", SCENARIOS, ids=lambda a: " ".join(a) or "(none)")
def test_both_paths_print_the_same(tmp_path: Path, argv: list[str]) -> None:
    """`cudalint ARGS` (the quick path) and `cudalint ARGS --` (click: the quick parser refuses `--`,
    which here ends no option) print the same bytes and exit the same, findings, errors and warnings alike."""
    from tests.test_cli_conventions import BAD, cudalint

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (tmp_path / "t.py").write_text(BAD, encoding="utf-8")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "elsewhere")
    assert parse(argv) is not None and parse([*argv, "--"]) is None
    quick = cudalint(tmp_path, *argv, CUDALINT_CACHE_DIR="")
    slow = cudalint(tmp_path, *argv, "--", CUDALINT_CACHE_DIR="")
    assert (quick.returncode, quick.stdout, quick.stderr) == (slow.returncode, slow.stdout, slow.stderr)
    assert quick.returncode in (0, 1, 2) and (quick.stdout or quick.stderr or argv == ["-s", "t.py"])


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(
    "colour, tty, kept",
    [(True, False, True), (False, True, False), (None, True, True), (None, False, False)],
)
def test_echo_strips_style_codes_as_click_echo_does(monkeypatch, colour, tty, kept) -> None:
    """cudalint.output.echo replaces click.echo in the lint command: the same codes kept or stripped."""
    from cudalint.output.echo import echo

    styled = "\x1b[1mt.py\x1b[0m: \x1b[1;31mCUD001\x1b[0m"
    for err in (False, True):
        out, errs = _Stream(tty), _Stream(tty)
        monkeypatch.setattr(sys, "stdout", out)
        monkeypatch.setattr(sys, "stderr", errs)
        echo(styled, err=err, colour=colour)
        echo("x", err=err, nl=False, colour=colour)
        expected = (styled if kept else "t.py: CUD001") + "\nx"
        assert ((errs if err else out).getvalue(), (out if err else errs).getvalue()) == (expected, "")
        click_out = _Stream(tty)
        click.echo(styled, file=click_out, color=colour)
        assert click_out.getvalue() == expected[:-2] + "\n"
