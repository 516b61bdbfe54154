"""`make bench` (second part): the language server's latency after an edit, and its memory.

`cudalint server` runs as an editor starts it (a subprocess on stdio, pygls's client on this side)
with one file of the corpus open. Each of `--edits` edits changes that buffer (a statement added or
removed at its end, never saved; then, a second series, a new function defined at its end) and is timed from the didChange notification to the
publishDiagnostics answering that version: debounce, re-summarizing the buffer and re-judging the
project included. Prints the cold first answer, the first edit after it (which finds the summaries
the workers made, not those of the edits before it), the median and the worst of the edits, and
the server's peak resident memory (VmHWM). Target (issue 18): median <= 200 ms, memory < 300 MB.

    python benchmarks/lsp_bench.py [--corpus DIR] [--file RELATIVE_PATH] [--edits N]

The corpus is read in place; the summary cache goes to a temporary folder (removed afterwards).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = Path.home() / ".cache" / "cudalint-realworld" / "timm"
DEFAULT_FILE = "timm/utils/distributed.py"


def peak_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


KEYSTROKES = 5  # edits of a typing burst
TYPING_GAP = 0.15  # seconds between them (a keystroke every 150 ms)


async def measure(corpus: Path, rel: str, edits: int, bursts: int, cache_dir: str) -> dict:
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    client = LanguageClient("cudalint-bench", "1")
    answered: dict[int, float] = {}
    counts: dict[int, int] = {}

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        if params.version is not None:
            answered.setdefault(params.version, time.perf_counter())
            counts[params.version] = len(params.diagnostics)

    env = {**os.environ, "PYTHONPATH": str(ROOT), "CUDALINT_CACHE_DIR": cache_dir}
    await client.start_io(sys.executable, "-m", "cudalint", "server", cwd=str(corpus), env=env)
    await client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=corpus.as_uri()))
    client.initialized(types.InitializedParams())
    path = corpus / rel
    uri = path.as_uri()
    text = path.read_text(encoding="utf-8")

    async def answer(version: int, sent: float, timeout: float = 600) -> float:
        deadline = time.monotonic() + timeout
        while version not in answered:
            if time.monotonic() > deadline:
                raise RuntimeError(f"no diagnostics for version {version}")
            await asyncio.sleep(0.001)
        return answered[version] - sent

    sent = time.perf_counter()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
    )
    cold = await answer(1, sent)
    version = 1

    first_edit: list[float] = []  # the first edit after opening (not counted below): what it reads back

    def change(new_text: str) -> tuple[int, float]:
        """Send the buffer's next version, whole: (that version, when it was sent)."""
        nonlocal version
        version += 1
        sent = time.perf_counter()
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=new_text)],
            )
        )
        return version, sent

    async def series(make_text) -> list[float]:
        out = []
        for i in range(edits + 1):  # one warm-up edit, not counted
            took = await answer(*change(make_text(i)))
            if i:
                out.append(took)
            elif not first_edit:
                first_edit.append(took)
            await asyncio.sleep(0.1)  # a pause in typing
        return out

    # a statement typed at the top level (what the file may do and call is unchanged), then removed
    latencies = await series(lambda i: text + (f"\n_cudalint_bench_{i} = {i}\n" if i % 2 == 0 else ""))
    # a new function each time: what the file defines changes, so its summary does, and the project is judged again
    changed = await series(lambda i: text + f"\n\ndef _cudalint_bench_{i}():\n    return {i}\n")

    # typing: `KEYSTROKES` edits `TYPING_GAP` apart, each changing the summary, timed from the last one
    # to its diagnostics (an analysis still running for an earlier one delays it)
    typed = []
    for b in range(bursts):
        for k in range(KEYSTROKES):
            last = change(text + f"\n_cudalint_typed_{b} = {k}\n")
            if k < KEYSTROKES - 1:
                await asyncio.sleep(TYPING_GAP)
        typed.append(await answer(*last))
        await asyncio.sleep(0.1)
    memory = peak_mb(client._server.pid)  # the server process pygls started
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return {"cold": cold, "first_edit": first_edit[0], "latencies": latencies, "changed": changed, "typed": typed, "memory": memory, "findings": counts.get(1, 0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--file", default=DEFAULT_FILE)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--bursts", type=int, default=3, help="typing bursts, timed from their last edit")
    args = parser.parse_args()
    if not (args.corpus / args.file).is_file():
        print(f"lsp_bench: {args.corpus / args.file} not found; pass --corpus and --file", file=sys.stderr)
        sys.exit(2)
    files = sum(1 for _ in args.corpus.rglob("*.py"))
    with tempfile.TemporaryDirectory(prefix="cudalint-lsp-bench-") as cache_dir:
        got = asyncio.run(measure(args.corpus, args.file, args.edits, args.bursts, cache_dir))
    lat = sorted(got["latencies"])
    median = statistics.median(lat)
    print(f"language server on {args.corpus} ({files} .py files), {args.file} open, {len(lat)} edits")
    print(f"  first diagnostics after open (cold cache): {got['cold'] * 1000:.0f} ms ({got['findings']} findings)")
    print(f"  the first edit after that (not in the medians below): {got['first_edit'] * 1000:.0f} ms")
    print(f"  after an edit: median {median * 1000:.0f} ms (target <= 200 ms), worst {lat[-1] * 1000:.0f} ms")
    changed = sorted(got["changed"])
    print(
        f"  after an edit that defines something new (its summary changes): median {statistics.median(changed) * 1000:.0f} ms, "
        f"worst {changed[-1] * 1000:.0f} ms"
    )
    if got["typed"]:
        typed = sorted(got["typed"])
        print(
            f"  after typing ({KEYSTROKES} edits {TYPING_GAP * 1000:.0f} ms apart), from the last edit: median "
            f"{statistics.median(typed) * 1000:.0f} ms, worst {typed[-1] * 1000:.0f} ms ({len(typed)} bursts)"
        )
    print(f"  server peak memory (VmHWM): {got['memory']:.0f} MB (target < 300 MB)")


if __name__ == "__main__":
    main()
