/**
 * extension: VS Code entry point. Starts the Copy-as-Decode language client (`cad-lsp` over
 * stdio), answers the server's `cad` settings section, routes the server's `cad.applyEdit`
 * code actions through the prompting client command, and registers the client-only commands.
 *
 * Note: `cad.applyEdit` itself is registered by the language client (executeCommand feature);
 * this extension only intercepts it with middleware and never registers it again.
 */
import * as vscode from 'vscode';
import { DidChangeConfigurationNotification, LanguageClient, LanguageClientOptions } from 'vscode-languageclient/node';
import { applyEditInstruction, applyFromCodeAction, previewEditInstruction } from './commands';
import { APPLY } from './runCommand';
import { cadSettings, needsRestart, serverOptions } from './settings';

let client: LanguageClient | undefined;

function clientOptions(): LanguageClientOptions {
  return {
    documentSelector: [{ scheme: 'file' }, { scheme: 'untitled' }],
    initializationOptions: cadSettings(),
    outputChannelName: 'Copy-as-Decode',
    middleware: {
      executeCommand: (command, args, next) => {
        if (command === APPLY && client) {
          return applyFromCodeAction(client, args[0]);
        }
        return next(command, args);
      },
      workspace: {
        configuration: (params, token, next) => {
          const cad = cadSettings();
          return params.items.some((item) => item.section === 'cad')
            ? params.items.map((item) => (item.section === 'cad' ? cad : null))
            : next(params, token);
        },
      },
    },
  };
}

async function start(): Promise<LanguageClient> {
  const c = new LanguageClient('copyAsDecode', 'Copy-as-Decode', serverOptions(), clientOptions());
  client = c;
  await c.start();
  return c;
}

async function ensureClient(): Promise<LanguageClient> {
  return client ?? start();
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  context.subscriptions.push(
    vscode.commands.registerCommand('copyAsDecode.applyEditInstruction', async () =>
      applyEditInstruction(await ensureClient()),
    ),
    vscode.commands.registerCommand('copyAsDecode.previewEditInstruction', async () =>
      previewEditInstruction(await ensureClient()),
    ),
    vscode.commands.registerCommand('copyAsDecode.restartServer', async () => {
      await client?.stop();
      client = undefined;
      await start();
    }),
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (needsRestart(e) && client) {
        await client.stop();
        client = undefined;
        await start();
      } else if (e.affectsConfiguration('copyAsDecode') && client) {
        await client.sendNotification(DidChangeConfigurationNotification.type, {
          settings: { cad: cadSettings() },
        });
      }
    }),
  );
  try {
    await start();
  } catch (err) {
    void vscode.window.showErrorMessage(
      `Copy-as-Decode: could not start the language server (${String(err)}). ` +
        'Check the copyAsDecode.server.command setting.',
    );
  }
}

export async function deactivate(): Promise<void> {
  await client?.stop();
  client = undefined;
}
