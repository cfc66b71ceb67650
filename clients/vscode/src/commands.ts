/**
 * commands: the client-only commands (`copyAsDecode.applyEditInstruction`,
 * `copyAsDecode.previewEditInstruction`), preview-then-apply (diff editor + "Apply" that reuses
 * the server's computed program through `cad.applyPreview`), and the handler that code actions'
 * `cad.applyEdit` is routed to (prompting when the action carries no instruction).
 */
import * as vscode from 'vscode';
import { LanguageClient } from 'vscode-languageclient/node';
import { PREVIEW_SCHEME, PreviewDocuments } from './previewDocuments';
import { selectionRange } from './ranges';
import {
  APPLY,
  APPLY_PREVIEW,
  ApplyResult,
  EditArgs,
  PREVIEW,
  PreviewResult,
  RunHooks,
  runServerCommand,
} from './runCommand';

export interface CommandContext {
  client: LanguageClient;
  hooks: RunHooks;
  previews: PreviewDocuments;
}

export const APPLY_CHOICE = 'Apply';
export const DISCARD_CHOICE = 'Discard';

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

function reportApply(result: ApplyResult | undefined): void {
  if (result === undefined) {
    void vscode.window.showInformationMessage('Copy-as-Decode: edit cancelled.');
  } else if (result.applied) {
    void vscode.window.showInformationMessage(`Copy-as-Decode: ${result.message ?? 'edit applied'}${statsText(result.stats)}`);
  } else {
    void vscode.window.showWarningMessage(`Copy-as-Decode: ${result.message ?? 'edit not applied'}`);
  }
}

async function apply(ctx: CommandContext, args: EditArgs): Promise<ApplyResult | undefined> {
  const result = await runServerCommand<ApplyResult>(ctx.client, APPLY, args, ctx.hooks);
  if (result && !result.applied && result.lowConfidence && result.previewId !== undefined && result.newText !== undefined) {
    // held for review (copyAsDecode.minConfidence): the diff, then Apply reuses the computed program
    void vscode.window.showWarningMessage(`Copy-as-Decode: ${result.message ?? 'low confidence: review the edit'}`);
    const held = { diff: result.diff ?? '', previewId: result.previewId, newText: result.newText, stats: result.stats };
    const review = await reviewPreview(ctx, args, held, 'review: low confidence');
    return review.applied ?? result;
  }
  reportApply(result);
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
export async function applyEditInstruction(ctx: CommandContext): Promise<ApplyResult | undefined> {
  const instruction = await askInstruction();
  const args = instruction && editorArgs(instruction);
  return args ? apply(ctx, args) : undefined;
}

/**
 * `copyAsDecode.applyClipboard`: the clipboard is the instruction — typically a chat answer's code
 * block with `... existing code ...` placeholders, which the server merges by its anchors without
 * the model when it fits one place (`snippetMerge`), a unified diff or SEARCH/REPLACE blocks, which
 * it applies exactly, or any multi-line instruction an input box cannot hold. Edits the selection, or
 * the whole file.
 */
export async function applyClipboard(ctx: CommandContext): Promise<ApplyResult | undefined> {
  const text = (await vscode.env.clipboard.readText()).replace(/\s+$/, '');
  if (!text.trim()) {
    void vscode.window.showWarningMessage(
      'Copy-as-Decode: the clipboard is empty; copy a code snippet or an instruction first.');
    return undefined;
  }
  const args = editorArgs(text);
  return args ? apply(ctx, args) : undefined;
}

/** What a preview led to: the user's choice and, when applied, the server's apply result. */
export interface PreviewOutcome {
  preview?: PreviewResult;
  choice?: string;
  applied?: ApplyResult;
}

/**
 * `copyAsDecode.previewEditInstruction`: prompt, show the change in a diff editor, and offer
 * "Apply", which applies the program the preview computed (no second decode).
 */
export async function previewEditInstruction(ctx: CommandContext): Promise<PreviewOutcome> {
  const instruction = await askInstruction();
  const args = instruction && editorArgs(instruction);
  if (!args) {
    return {};
  }
  const preview = await runServerCommand<PreviewResult>(ctx.client, PREVIEW, args, ctx.hooks);
  if (!preview) {
    return {};
  }
  if (!preview.diff) {
    void vscode.window.showInformationMessage('Copy-as-Decode: the edit would change nothing.');
    return { preview };
  }
  if (preview.previewId === undefined || preview.newText === undefined) {
    // An older server: show the unified diff only.
    const doc = await vscode.workspace.openTextDocument({ language: 'diff', content: preview.diff });
    await vscode.window.showTextDocument(doc, { preview: true, viewColumn: vscode.ViewColumn.Beside });
    return { preview };
  }
  return reviewPreview(ctx, args, { ...preview, previewId: preview.previewId, newText: preview.newText }, 'preview');
}

/** Show a computed edit (`previewId`, `newText`) in a diff editor and apply it on "Apply". */
async function reviewPreview(
  ctx: CommandContext,
  args: EditArgs,
  preview: PreviewResult & { previewId: string; newText: string },
  label: string,
): Promise<PreviewOutcome> {
  const instruction = args.instruction;
  const right = ctx.previews.add(preview.previewId, preview.newText);
  const left = vscode.Uri.parse(args.uri);
  await vscode.commands.executeCommand('vscode.diff', left, right, `Copy-as-Decode: ${instruction} (${label})`);
  const choice = await vscode.window.showInformationMessage(
    `Copy-as-Decode: apply this edit?${statsText(preview.stats)}`,
    APPLY_CHOICE,
    DISCARD_CHOICE,
  );
  if (choice !== APPLY_CHOICE) {
    ctx.previews.remove(preview.previewId);
    return { preview, choice };
  }
  const applied = await runServerCommand<ApplyResult>(
    ctx.client,
    APPLY_PREVIEW,
    { previewId: preview.previewId, instruction: `apply: ${instruction}` },
    ctx.hooks,
  );
  ctx.previews.remove(preview.previewId);
  reportApply(applied);
  return { preview, choice, applied };
}

/**
 * Handler for `cad.applyEdit` coming from a server code action: with an instruction it runs
 * directly; without one ("Apply edit instruction…") it prompts first.
 */
export async function applyFromCodeAction(ctx: CommandContext, raw: unknown): Promise<ApplyResult | undefined> {
  const given = (raw ?? {}) as Partial<EditArgs>;
  if (!given.uri) {
    throw new Error('cad.applyEdit: the code action sent no document uri (arguments[0].uri)');
  }
  const instruction = given.instruction?.trim() || (await askInstruction());
  if (!instruction) {
    return undefined;
  }
  return apply(ctx, { ...given, uri: given.uri, instruction });
}

export { PREVIEW_SCHEME };
