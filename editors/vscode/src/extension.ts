// The VS Code client of `tec lsp`: it starts the language server for .te
// files and passes the workspace settings (tec.defines) to it.
import * as vscode from "vscode";
import { LanguageClient, LanguageClientOptions, ServerOptions } from "vscode-languageclient/node";

let client: LanguageClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const config = vscode.workspace.getConfiguration("tec");
  const command = config.get<string>("path", "tec");
  const serverOptions: ServerOptions = { command, args: ["lsp"] };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "te" },
      { scheme: "untitled", language: "te" },
    ],
    // Changes of the tec.* settings are sent as workspace/didChangeConfiguration.
    synchronize: { configurationSection: "tec" },
    initializationOptions: { tec: { defines: config.get("defines", {}) } },
  };
  client = new LanguageClient("tec", "tec language server", serverOptions, clientOptions);
  context.subscriptions.push({ dispose: () => void client?.stop() });
  await client.start();
}

export async function deactivate(): Promise<void> {
  await client?.stop();
  client = undefined;
}
