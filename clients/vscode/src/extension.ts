/**
 * extension: VS Code entry point. Activated lazily (the languages in package.json
 * `activationEvents`, or the first Copy-as-Decode command). Starts the language client
 * (`cad-lsp`, stdio) for the languages in `copyAsDecode.languages`, answers the server's `cad`
 * settings section, routes the server's `cad.applyEdit` code actions through the prompting
 * client command, keeps a status-bar item, and registers the client-only commands.
 *
 * `activate` returns a small API (the running client, `ready()`), used by the tests and usable by
 * other extensions.
 *
 * Note: `cad.applyEdit` itself is registered by the language client (executeCommand feature);
 * this extension only intercepts it with middleware and never registers it again.
 */
import * as vscode from 'vscode';
import { DidChangeConfigurationNotification, LanguageClient, LanguageClientOptions, State } from 'vscode-languageclient/node';
import { CommandContext, applyClipboard, applyEditInstruction, applyFromCodeAction, previewEditInstruction } from './commands';
import { PreviewDocuments } from './previewDocuments';
import { APPLY, RunHooks, cancelRunning } from './runCommand';
import { cadSettings, documentSelector, needsRestart, serverOptions } from './settings';
import { CANCEL_COMMAND, CadStatusBar, SHOW_OUTPUT_COMMAND } from './statusBar';

let client: LanguageClient | undefined;
let starting: Promise<LanguageClient> | undefined;
let statusBar: CadStatusBar | undefined;
let previews: PreviewDocuments | undefined;

export interface CadApi {
  /** The running language client, if started. */
  readonly client: LanguageClient | undefined;
  /** Start the client if needed and resolve once the server has initialized. */
  ready(): Promise<LanguageClient>;
}

function hooks(): RunHooks {
  return {
    onStart: (title) => statusBar?.editStarted(title),
    onProgress: (message) => statusBar?.editProgress(message),
    onEnd: () => statusBar?.editEnded(),
  };
}

function context(c: LanguageClient): CommandContext {
  return { client: c, hooks: hooks(), previews: previews ?? (previews = new PreviewDocuments()) };
}

function clientOptions(): LanguageClientOptions {
  return {
    documentSelector: documentSelector(),
    initializationOptions: cadSettings(),
    outputChannelName: 'Copy-as-Decode',
    middleware: {
      executeCommand: (command, args, next) => {
        if (command === APPLY && client) {
          return applyFromCodeAction(context(client), args[0]);
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
  statusBar?.setState('starting');
  c.onDidChangeState((e) => {
    if (e.newState === State.Running) {
      statusBar?.setState('ready');
    } else if (e.newState === State.Stopped) {
      statusBar?.setState(client === c ? 'failed' : 'stopped');
    }
  });
  try {
    await c.start();
  } catch (err) {
    statusBar?.setState('failed');
    throw err;
  }
  return c;
}

async function stop(): Promise<void> {
  const c = client;
  client = undefined;
  starting = undefined;
  statusBar?.setState('stopped');
  if (c && c.needsStop()) {
    await c.stop();
  }
}

function ensureClient(): Promise<LanguageClient> {
  if (client && client.isRunning()) {
    return Promise.resolve(client);
  }
  if (!starting) {
    starting = start().catch((err) => {
      starting = undefined;
      client = undefined;
      void vscode.window.showErrorMessage(
        `Copy-as-Decode: could not start the language server (${String(err)}). ` +
          'Check the copyAsDecode.server.command setting and the "Copy-as-Decode" output.',
      );
      throw err;
    });
  }
  return starting;
}

export async function activate(extension: vscode.ExtensionContext): Promise<CadApi> {
  statusBar = new CadStatusBar();
  previews = new PreviewDocuments();
  extension.subscriptions.push(
    statusBar,
    previews,
    vscode.commands.registerCommand('copyAsDecode.applyEditInstruction', async () =>
      applyEditInstruction(context(await ensureClient())),
    ),
    vscode.commands.registerCommand('copyAsDecode.applyClipboard', async () =>
      applyClipboard(context(await ensureClient())),
    ),
    vscode.commands.registerCommand('copyAsDecode.previewEditInstruction', async () =>
      previewEditInstruction(context(await ensureClient())),
    ),
    vscode.commands.registerCommand(CANCEL_COMMAND, () => {
      const n = cancelRunning();
      if (n === 0) {
        void vscode.window.showInformationMessage('Copy-as-Decode: no edit is running.');
      }
      return n;
    }),
    vscode.commands.registerCommand(SHOW_OUTPUT_COMMAND, () => client?.outputChannel.show(true)),
    vscode.commands.registerCommand('copyAsDecode.restartServer', async () => {
      await stop();
      await ensureClient();
    }),
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (needsRestart(e) && client) {
        await stop();
        await ensureClient();
      } else if (e.affectsConfiguration('copyAsDecode') && client) {
        await client.sendNotification(DidChangeConfigurationNotification.type, {
          settings: { cad: cadSettings() },
        });
      }
    }),
  );
  // Activation already means a document of a served language is open (or a command ran), so
  // start now: the server's code actions need it. The model loads at the first edit.
  ensureClient().catch(() => undefined);
  return {
    get client() {
      return client;
    },
    ready: ensureClient,
  };
}

export async function deactivate(): Promise<void> {
  await stop();
}
