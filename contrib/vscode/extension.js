// vx's VS Code extension: starts `vx lsp` (the language server built into vx) for vx.toml and
// package.json files, with Microsoft's language client. Everything else is the server's: the
// diagnostics, completion, hover, definitions and the "run · why · last" lenses, whose
// commands the server executes itself (workspace/executeCommand).
"use strict";

const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

async function activate(context) {
  const command = vscode.workspace.getConfiguration("vx").get("path", "vx");
  client = new LanguageClient(
    "vx",
    "vx",
    { command, args: ["lsp"] },
    {
      documentSelector: [
        { scheme: "file", pattern: "**/vx.toml" },
        { scheme: "file", pattern: "**/package.json" },
      ],
    }
  );
  await client.start();
  context.subscriptions.push(client);
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
