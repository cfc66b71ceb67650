/**
 * settings: reads the `copyAsDecode.*` settings and turns them into what the language client
 * needs — the server launch options and the server's `cad` settings section
 * (initializationOptions and workspace/configuration answers).
 */
import * as vscode from 'vscode';
import { Executable, ServerOptions, TransportKind } from 'vscode-languageclient/node';

/** The server's settings section `cad` (names as the server expects them). */
export interface CadSettings {
  model: string;
  device: string;
  strategy: string;
  maxNewTokens: number;
}

export const SECTION = 'copyAsDecode';

function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration(SECTION);
}

export function cadSettings(): CadSettings {
  const c = config();
  return {
    model: c.get<string>('model', 'default'),
    device: c.get<string>('device', 'auto'),
    strategy: c.get<string>('strategy', 'cad'),
    maxNewTokens: c.get<number>('maxNewTokens', 512),
  };
}

export function serverOptions(): ServerOptions {
  const c = config();
  const command = c.get<string>('server.command', 'cad-lsp').trim();
  if (command === '') {
    throw new Error(
      'copyAsDecode.server.command is empty: set it to "cad-lsp" or to a Python interpreter with args ["-m", "cad_lsp"]',
    );
  }
  const run: Executable = {
    command,
    args: c.get<string[]>('server.args', []),
    transport: TransportKind.stdio,
  };
  return { run, debug: run };
}

/** True when a settings change needs a server restart (launch command changed). */
export function needsRestart(e: vscode.ConfigurationChangeEvent): boolean {
  return e.affectsConfiguration(`${SECTION}.server`);
}
