"""Where a node is, in the columns users see (cudalint.core.positions.Lines), checked on every node
of a few sources against what `ast` itself says: an ASCII file takes a shortcut (its byte columns
are its character columns), a file with any other character converts the columns of its lines."""
from __future__ import annotations

import ast

import pytest

from cudalint.core.positions import Lines

SOURCES = {
    "ascii": (
        "import os\n"
        "x = foo(a,\n"
        "        b)  # a call over two lines\n"
        "os.environ['CUDA_VISIBLE_DEVICES'] = str(\n"
        "    gpus[0]\n"
        ")\n"
        "def f(y):\n"
        "    return {'k': [y, y + 1]}\n"
        "def \\\n"
        "        continued(): pass\n"
    ),
    "non_ascii": (
        "import os\n"
        "msg = 'é' + str(len('ünï'))  ; torch.cuda.init()\n"
        "x = foo('☃',\n"
        "        'ß' , b)\n"
        "os.environ['CUDA_VISIBLE_DEVICES'] = '1'\n"
        "def g(z='€'):\n"
        "    def δέλτα_x(): pass\n"
        "    return f'{z}é{z}'\n"
    ),
    "crlf": "import os\r\nx = foo(a,\r\n        'é')\r\nasync def  h():\r\n    pass\r\n",
}


def _column(source: str, line: int, offset: int) -> int:
    text = source.replace("\r\n", "\n").split("\n")[line - 1]
    return len(text.encode("utf-8")[:offset].decode("utf-8"))


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_loc_and_text_of_every_node_are_what_ast_says(name: str) -> None:
    source = SOURCES[name]
    lines = Lines(source)
    assert lines.ascii is (name == "ascii")
    nodes = [n for n in ast.walk(ast.parse(source)) if getattr(n, "end_col_offset", None) is not None]
    assert len(nodes) > 8
    for node in nodes:
        want = (
            node.lineno,
            _column(source, node.lineno, node.col_offset) + 1,
            node.end_lineno,
            _column(source, node.end_lineno, node.end_col_offset) + 1,
        )
        assert lines.loc(node) == want, ast.dump(node)
        segment = ast.get_source_segment(source, node)
        # (the lines of a segment are joined by "\n", whatever ended them)
        assert lines.segment(node) == segment.replace("\r\n", "\n"), ast.dump(node)
        squeezed = " ".join(segment.split())
        assert lines.text(node) == (squeezed if len(squeezed) <= 72 else squeezed[:69] + "..."), ast.dump(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            at = lines.loc(lines.def_name(node))
            row = source.replace("\r\n", "\n").split("\n")[at[0] - 1]
            # the name, or `def` itself when the name is on the next line (`def \`)
            assert row[at[1] - 1 : at[3] - 1] == (node.name if node.name != "continued" else ""), node.name
            assert node.name != "continued" or at[:2] == (node.lineno, node.col_offset + 1)


def test_a_node_without_an_end_is_located_at_its_start() -> None:
    lines = Lines("a = 1\nb = 'é'\n")
    node = ast.Name(id="a", lineno=2, col_offset=8)  # (made by hand: no end position)
    node.end_lineno = None
    node.end_col_offset = None
    assert lines.loc(node) == (2, 8, 2, 8)  # (byte 8 is past the line's 7 characters: as many as there are)
    assert lines.segment(node) == ""
    ascii_lines = Lines("a = 1\nb = 2\n")
    assert ascii_lines.loc(node) == (2, 9, 2, 9)


def test_a_long_text_is_cut_and_lines_out_of_range_are_empty() -> None:
    source = "x = call(" + ", ".join(f"argument_{i}" for i in range(12)) + ")\n"
    lines = Lines(source)
    call = ast.parse(source).body[0].value
    assert len(lines.text(call)) == 72 and lines.text(call).endswith("...")
    assert lines.text(call)[:69] == source[4:73]
    exact = "f(" + "a" * 69 + ")"  # 72 characters: kept whole
    assert Lines(exact).text(ast.parse(exact).body[0].value) == exact
    assert Lines("y = short(1)").text(ast.parse("y = short(1)").body[0].value) == "short(1)"
    assert [lines._line(n) for n in (0, 1, 2, 3)] == ["", source[:-1], "", ""]
    assert [Lines("a\nb")._line(n) for n in (0, 1, 2, 3)] == ["", "a", "b", ""]
