/**
 * commands: the client-only commands (`copyAsDecode.applyEditInstruction`,
 * `copyAsDecode.previewEditInstruction`) and the handler that code actions' `cad.applyEdit`
 * is routed to (prompting when the action carries no instruction).
 */
import * as vscode from 'vscode';
import { LanguageClient } from 'vscode-languageclient/node';
import { selectionRange } from './ranges';
import { APPLY, ApplyResult, EditArgs, PREVIEW, PreviewResult, runServerCommand } from './runCommand';

async function askInstruction(): Promise<string | undefined> {
  const text = await vscode.window.showInputBox({
    title: 'Copy-as-Decode',
    prompt: 'Edit instruction (applies to the selection, or the whole file when nothing is selected)',
    placeHolder: 'e.g. Fix bugs in add.',
    ignoreFocusOut: true,
  });
  const trimmed = text?.trim();
  return trimmed ? trimmed : undefined;
}

function statsText(stats: Record<string, unknown> | undefined): string {
  if (!stats) {
    return '';
  }
  const keys = ['decoded_tokens', 'copied_tokens', 'ops', 'wall_ms'];
  const parts = keys.filter((k) => stats[k] !== undefined).map((k) => `${k}=${String(stats[k])}`);
  return parts.length ? ` (${parts.join(', ')})` : '';
}

async function apply(client: LanguageClient, args: EditArgs): Promise<ApplyResult | undefined> {
  const result = await runServerCommand<ApplyResult>(client, APPLY, args);
  if (result === undefined) {
    void vscode.window.showInformationMessage('Copy-as-Decode: edit cancelled.');
  } else if (result.applied) {
    void vscode.window.showInformationMessage(`Copy-as-Decode: ${result.message ?? 'edit applied'}${statsText(result.stats)}`);
  } else {
    void vscode.window.showWarningMessage(`Copy-as-Decode: ${result.message ?? 'edit not applied'}`);
  }
  return result;
}

function editorArgs(instruction: string): EditArgs | undefined {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    void vscode.window.showWarningMessage('Copy-as-Decode: open a file to edit first.');
    return undefined;
  }
  return {
    uri: editor.document.uri.toString(),
    instruction,
    range: selectionRange(editor.document, editor.selection),
  };
}

/** `copyAsDecode.applyEditInstruction`: prompt, then edit the selection (or the whole file). */
export async function applyEditInstruction(client: LanguageClient): Promise<ApplyResult | undefined> {
  const instruction = await askInstruction();
  const args = instruction && editorArgs(instruction);
  return args ? apply(client, args) : undefined;
}

/** `copyAsDecode.previewEditInstruction`: prompt, then show the unified diff in a new tab. */
export async function previewEditInstruction(client: LanguageClient): Promise<void> {
  const instruction = await askInstruction();
  const args = instruction && editorArgs(instruction);
  if (!args) {
    return;
  }
  const result = await runServerCommand<PreviewResult>(client, PREVIEW, args);
  if (!result) {
    return;
  }
  if (!result.diff) {
    void vscode.window.showInformationMessage('Copy-as-Decode: the edit would change nothing.');
    return;
  }
  const doc = await vscode.workspace.openTextDocument({ language: 'diff', content: result.diff });
  await vscode.window.showTextDocument(doc, { preview: true, viewColumn: vscode.ViewColumn.Beside });
}

/**
 * Handler for `cad.applyEdit` coming from a server code action: with an instruction it runs
 * directly; without one ("Apply edit instruction…") it prompts first.
 */
export async function applyFromCodeAction(client: LanguageClient, raw: unknown): Promise<ApplyResult | undefined> {
  const given = (raw ?? {}) as Partial<EditArgs>;
  if (!given.uri) {
    throw new Error('cad.applyEdit: the code action sent no document uri (arguments[0].uri)');
  }
  const instruction = given.instruction?.trim() || (await askInstruction());
  if (!instruction) {
    return undefined;
  }
  return apply(client, { ...given, uri: given.uri, instruction });
}
