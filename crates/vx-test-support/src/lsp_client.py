"""A real Language Server Protocol client for the `vx lsp` tests: pygls's LanguageClient (PyPI
`pygls`, with Microsoft's `lsprotocol` types), which starts the server over stdio as an editor
does.

    python3 lsp_client.py VX ROOT [ARGS…] < steps.json > results.json

Reads a JSON list of steps, runs them in order against `VX ARGS` (default `VX lsp --stdio`)
started in ROOT, and prints one
JSON object: `results`, one entry per step, and `messages`, every window/showMessage and
window/logMessage received. Steps (paths root-relative, positions from 0):

  {"op": "open", "path": P, "text": T?}       didOpen with T, else the file's text on disk
  {"op": "change", "path": P, "text": T}      didChange, the whole text
  {"op": "close", "path": P}                  didClose
  {"op": "sync"}                              waits until the server has answered everything
                                              sent before (a codeLens request it answers in
                                              order, after publishing), then returns every
                                              file's latest diagnostics: {path: [diagnostic]}
  {"op": "complete" | "hover" | "definition", "path": P, "line": L, "character": C}
  {"op": "lens", "path": P}
  {"op": "execute", "command": C, "arguments": [...]}
  {"op": "message", "contains": S, "timeout": SECONDS}   waits for a showMessage holding S
  {"op": "wait_file", "path": P, "timeout": SECONDS}     waits until the file P exists
  {"op": "timed_change", "path": P, "text": T, "expect": S}
      didChange, then the milliseconds until a publishDiagnostics of P whose messages
      contain S (or, with S empty, has none)
"""

import asyncio
import json
import os
import sys
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient


# The requests made at a position: the client's method and the type of its parameters.
AT_POSITION = {
    "complete": ("text_document_completion_async", types.CompletionParams),
    "hover": ("text_document_hover_async", types.HoverParams),
    "definition": ("text_document_definition_async", types.DefinitionParams),
}


def uri(root: Path, rel: str) -> str:
    return (root / rel).as_uri()


def rel_of(root: Path, u: str) -> str:
    from urllib.parse import unquote, urlparse

    path = Path(unquote(urlparse(u).path))
    try:
        return str(path.relative_to(root))
    except ValueError:
        # A file the server names by its canonical path, the root being a symbolic link.
        return "canonical:" + str(path.relative_to(root.resolve()))


async def main() -> None:
    # As given, symbolic links kept: an editor opens a folder by the path it was given.
    vx, root = sys.argv[1], Path(sys.argv[2]).absolute()
    args = sys.argv[3:] or ["lsp", "--stdio"]
    steps = json.load(sys.stdin)
    client = LanguageClient("vx-tests", "1")
    diagnostics: dict[str, list] = {}
    published = asyncio.Event()
    messages: list[dict] = []
    message_seen = asyncio.Event()
    versions: dict[str, int] = {}

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        diagnostics[rel_of(root, params.uri)] = [
            {
                "line": d.range.start.line,
                "character": d.range.start.character,
                "end": d.range.end.character,
                "severity": int(d.severity) if d.severity else None,
                "message": d.message,
                "source": d.source,
            }
            for d in params.diagnostics
        ]
        published.set()

    @client.feature(types.WINDOW_SHOW_MESSAGE)
    def on_show(params: types.ShowMessageParams) -> None:
        messages.append({"kind": "show", "type": int(params.type), "message": params.message})
        message_seen.set()

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def on_log(params: types.LogMessageParams) -> None:
        messages.append({"kind": "log", "type": int(params.type), "message": params.message})

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def on_register(params: types.RegistrationParams) -> None:
        messages.append({"kind": "register", "message": params.registrations[0].method})

    await client.start_io(vx, *args, cwd=str(root))
    # With LSP_CLIENT_NO_ROOT set, the client names no folder (a single file opened): the server
    # finds the workspace from the first document.
    no_root = bool(os.environ.get("LSP_CLIENT_NO_ROOT"))
    await client.initialize_async(
        types.InitializeParams(
            process_id=None,
            root_uri=None if no_root else root.as_uri(),
            workspace_folders=None if no_root else [types.WorkspaceFolder(uri=root.as_uri(), name="ws")],
            capabilities=types.ClientCapabilities(
                workspace=types.WorkspaceClientCapabilities(
                    did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(
                        dynamic_registration=True
                    )
                )
            ),
        )
    )
    client.initialized(types.InitializedParams())

    def at(step):
        return types.TextDocumentIdentifier(uri=uri(root, step["path"])), types.Position(
            line=step["line"], character=step["character"]
        )

    def plain(value):
        if value is None:
            return None
        return json.loads(json.dumps(client.protocol._converter.unstructure(value)))

    results = []
    for step in steps:
        op = step["op"]
        if op == "open":
            text = step.get("text") or (root / step["path"]).read_text()
            versions[step["path"]] = 1
            language = "toml" if step["path"].endswith(".toml") else "json"
            client.text_document_did_open(
                types.DidOpenTextDocumentParams(
                    text_document=types.TextDocumentItem(
                        uri=uri(root, step["path"]), language_id=language, version=1, text=text
                    )
                )
            )
            results.append(None)
        elif op in ("change", "timed_change"):
            versions[step["path"]] = versions.get(step["path"], 1) + 1
            published.clear()
            diagnostics.pop(step["path"], None)
            started = time.monotonic()
            client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(
                        uri=uri(root, step["path"]), version=versions[step["path"]]
                    ),
                    content_changes=[types.TextDocumentContentChangeWholeDocument(text=step["text"])],
                )
            )
            if op == "change":
                results.append(None)
                continue
            while True:
                await asyncio.wait_for(published.wait(), 30)
                published.clear()
                got = diagnostics.get(step["path"])
                if got is None:
                    continue
                text = " ".join(d["message"] for d in got)
                if (step["expect"] and step["expect"] in text) or (not step["expect"] and not got):
                    break
            results.append((time.monotonic() - started) * 1000)
        elif op == "close":
            client.text_document_did_close(
                types.DidCloseTextDocumentParams(
                    text_document=types.TextDocumentIdentifier(uri=uri(root, step["path"]))
                )
            )
            results.append(None)
        elif op == "sync":
            await client.text_document_code_lens_async(
                types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri(root, "vx.toml")))
            )
            results.append(json.loads(json.dumps(diagnostics)))
        elif op in AT_POSITION:
            request, params = AT_POSITION[op]
            doc, pos = at(step)
            got = await getattr(client, request)(params(text_document=doc, position=pos))
            results.append(plain(got))
        elif op == "lens":
            got = await client.text_document_code_lens_async(
                types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri(root, step["path"])))
            )
            results.append(plain(got))
        elif op == "execute":
            got = await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command=step["command"], arguments=step["arguments"])
            )
            results.append(plain(got))
        elif op == "wait_file":
            deadline = time.monotonic() + step.get("timeout", 30)
            while not (root / step["path"]).exists():
                if time.monotonic() > deadline:
                    raise SystemExit(f"{step['path']} never appeared")
                await asyncio.sleep(0.02)
            results.append(None)
        elif op == "message":
            deadline = time.monotonic() + step.get("timeout", 30)
            found = None
            while found is None:
                found = next(
                    (m for m in messages if m["kind"] == "show" and step["contains"] in m["message"]),
                    None,
                )
                if found is None:
                    message_seen.clear()
                    await asyncio.wait_for(message_seen.wait(), max(0.01, deadline - time.monotonic()))
            results.append(found)
        else:
            raise SystemExit(f"unknown step {op}")

    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    print(json.dumps({"results": results, "messages": messages}))


asyncio.run(main())
