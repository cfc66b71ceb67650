/**
 * settings: reads the `copyAsDecode.*` settings and turns them into what the language client
 * needs — the server launch options, the document selector (the languages the extension serves)
 * and the server's `cad` settings section (initializationOptions and workspace/configuration
 * answers). The JSON schema with types and bounds is in package.json `contributes.configuration`.
 */
import * as vscode from 'vscode';
import { DocumentSelector, Executable, ServerOptions, TransportKind } from 'vscode-languageclient/node';

/** The server's settings section `cad` (names as the server expects them). */
export interface CadSettings {
  model: string;
  device: string;
  draftModel: string;
  strategy: string;
  genDrafter: string;
  snippetMerge: boolean;
  warmOnIdle: boolean;
  maxNewTokens: number | 'auto';
  resolverMode: string;
  applyTruncated: boolean;
  applyEditTimeout: number;
  minConfidence: number;
}

export const SECTION = 'copyAsDecode';
export const DEFAULT_LANGUAGES = ['python', 'javascript', 'typescript'];

function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration(SECTION);
}

export function cadSettings(): CadSettings {
  const c = config();
  const budget = c.get<number | null>('maxNewTokens', null);
  return {
    model: c.get<string>('model', 'default'),
    device: c.get<string>('device', 'auto'),
    draftModel: c.get<string>('draftModel', ''),
    strategy: c.get<string>('strategy', 'cad'),
    genDrafter: c.get<string>('genDrafter', 'replaced-lines'),
    snippetMerge: c.get<boolean>('snippetMerge', true),
    warmOnIdle: c.get<boolean>('warmOnIdle', true),
    maxNewTokens: typeof budget === 'number' && budget >= 1 ? Math.floor(budget) : 'auto',
    resolverMode: c.get<string>('resolverMode', 'clipped'),
    applyTruncated: c.get<boolean>('applyTruncated', false),
    applyEditTimeout: c.get<number>('applyEditTimeout', 30),
    minConfidence: c.get<number>('minConfidence', 0),
  };
}

/** Languages whose documents the server sees and offers code actions for. */
export function languages(): string[] {
  const list = config().get<string[]>('languages', DEFAULT_LANGUAGES);
  return Array.isArray(list) && list.length > 0 ? list : DEFAULT_LANGUAGES;
}

export function documentSelector(): DocumentSelector {
  const langs = languages();
  if (langs.includes('*')) {
    return [{ scheme: 'file' }, { scheme: 'untitled' }];
  }
  return langs.flatMap((language) => [
    { scheme: 'file', language },
    { scheme: 'untitled', language },
  ]);
}

export function serverOptions(): ServerOptions {
  const c = config();
  const command = c.get<string>('server.command', 'cad-lsp').trim();
  if (command === '') {
    throw new Error(
      'copyAsDecode.server.command is empty: set it to "cad-lsp" or to a Python interpreter with args ["-m", "cad_lsp"]',
    );
  }
  const args = [...c.get<string[]>('server.args', [])];
  const logFile = c.get<string>('server.logFile', '').trim();
  if (logFile !== '') {
    args.push('--log-file', logFile);
  }
  // TransportKind.stdio makes the client append `--stdio`, which cad-lsp accepts.
  const run: Executable = { command, args, transport: TransportKind.stdio };
  return { run, debug: run };
}

/** True when a settings change needs a server restart (launch command or languages changed). */
export function needsRestart(e: vscode.ConfigurationChangeEvent): boolean {
  return e.affectsConfiguration(`${SECTION}.server`) || e.affectsConfiguration(`${SECTION}.languages`);
}
