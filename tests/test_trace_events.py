"""The event stream's own JSON encoder (the json package would cost every traced program start-up)."""
from __future__ import annotations

import json
import os

from cudalint.trace.events import EventWriter, _dump, read_events


def test_encoder_matches_json():
    value = {"s": 'quo"te\\é\n\u2581', "i": -3, "f": 1.5, "b": [True, False, None], "t": (1, "x"),
             "d": {"k": {"n": []}}, 7: "int key"}
    assert json.loads(_dump(value)) == json.loads(json.dumps(value))
    assert json.loads(_dump({"nan": float("nan"), "obj": object}))["nan"] is None
    assert json.loads(_dump({"obj": object}))["obj"] == "<class 'object'>"


def test_writer_appends_whole_lines_across_fork(tmp_path):
    path = str(tmp_path / "ev.jsonl")
    w = EventWriter(path)
    w.emit("a", n=1)
    pid = os.fork()
    if pid == 0:
        w.after_fork_in_child()
        w.emit("child", n=2)
        os._exit(0)
    os.waitpid(pid, 0)
    w.emit("b", n=3)
    with open(path, "ab") as fh:
        fh.write(b'{"kind": "cut sho')  # a line cut short by a kill is skipped
    events = read_events(path)
    assert [(e["kind"], e["seq"]) for e in events] == [("a", 0), ("child", 1), ("b", 2)]
    assert events[1]["pid"] == pid and events[0]["pid"] == os.getpid()
