"""`cudalint server`: start the language server on stdin/stdout."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import click


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--cache-dir", type=click.Path(file_okay=False), envvar="CUDALINT_CACHE_DIR", help="The summary cache [default: <project>/.cudalint_cache].")
@click.option("--log-file", type=click.Path(dir_okay=False), help="Write the server's log here (stdout is the protocol's).")
def server(cache_dir: Optional[str], log_file: Optional[str]) -> None:
    """The Language Server Protocol over stdio: diagnostics as you type, fixes and noqa as code actions."""
    try:
        from cudalint.server.protocol import serve
    except ImportError as exc:
        raise click.ClickException(f"the language server needs pygls and lsprotocol: pip install 'cudalint[server]' ({exc})")
    serve(Path(cache_dir) if cache_dir else None, log_file)
