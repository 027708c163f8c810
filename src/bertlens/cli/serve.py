"""`bertlens serve`: the chosen recipe over HTTP (OpenAI-compatible /v1/embeddings, TEI-style /embed). Its flags are
derived from `ServeCommandOptions` (api/serve.py; cli/derived.py)."""

from __future__ import annotations

from bertlens.cli.console import say
from bertlens.cli.derived import CommandLine

COMMAND = CommandLine(
    "serve",
    "bertlens.api.serve:ServeCommandOptions",
    "Serve a recipe: POST /v1/embeddings (OpenAI-compatible), POST /embed (TEI-style), GET /health, /info, /metrics "
    "(Prometheus). Requests from concurrent clients are batched by a token budget.",
    out_is_dir=False,  # serve writes nothing
    on_interrupt="stopped",
)


def run(options) -> None:
    from bertlens.api.serve import LOCAL_HOSTS, build_server, check_port
    from bertlens.serving.app import run_server

    check_port(options.host, options.port)  # before the model loads, not by uvicorn after
    server = build_server(options)
    if options.host not in LOCAL_HOSTS and server.settings.api_key is None:
        say(
            f"warning: serving on {options.host} without --api-key (--allow-no-key): anyone who can reach it can use it"
        )
    say(server.banner)
    run_server(server.app, options.host, options.port)
