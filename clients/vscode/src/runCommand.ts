/**
 * runCommand: sends `cad.applyEdit` / `cad.previewEdit` to the server with a client-chosen
 * work-done token, mirrors the server's progress in a cancellable notification, and cancels
 * with `$/cancelRequest` (the request's cancellation token) plus `window/workDoneProgress/cancel`.
 */
import * as vscode from 'vscode';
import {
  ExecuteCommandRequest,
  LanguageClient,
  Range,
  WorkDoneProgress,
  WorkDoneProgressCancelNotification,
} from 'vscode-languageclient/node';

export const APPLY = 'cad.applyEdit';
export const PREVIEW = 'cad.previewEdit';
export const APPLY_PREVIEW = 'cad.applyPreview';

export interface EditArgs {
  uri: string;
  instruction: string;
  range?: Range;
  strategy?: string;
}

export interface ApplyResult {
  applied: boolean;
  message?: string;
  discarded?: boolean;
  rebased?: boolean;
  edits?: number;
  stats?: Record<string, unknown>;
  /** Held for review (setting minConfidence): not applied; `diff`, `previewId` and `newText` show it. */
  lowConfidence?: boolean;
  diff?: string;
  previewId?: string;
  newText?: string;
}

export interface PreviewResult {
  diff: string;
  /** Key of the server's cached program (cad.applyPreview applies it without decoding again). */
  previewId?: string;
  /** The document text the program produces (for the diff editor). */
  newText?: string;
  stats?: Record<string, unknown>;
}

/** Optional observers of a run (the status bar uses them). */
export interface RunHooks {
  onStart?(title: string): void;
  onProgress?(message: string | undefined): void;
  onEnd?(): void;
}

let tokenSeq = 0;
const active = new Set<vscode.CancellationTokenSource>();

/** Cancel every running edit of this window; returns how many were running. */
export function cancelRunning(): number {
  const n = active.size;
  for (const source of [...active]) {
    source.cancel();
  }
  return n;
}

/** Outcome of a run: the server's result, or `undefined` when the user cancelled. */
export async function runServerCommand<T>(
  client: LanguageClient,
  command: typeof APPLY | typeof PREVIEW | typeof APPLY_PREVIEW,
  args: EditArgs | { previewId: string; instruction?: string },
  hooks: RunHooks = {},
): Promise<T | undefined> {
  const token = `cad-vscode-${process.pid}-${++tokenSeq}`;
  const title = args.instruction ?? 'applying the previewed edit';
  hooks.onStart?.(title);
  return vscode.window.withProgress(
    {
      location: vscode.ProgressLocation.Notification,
      title: `Copy-as-Decode: ${title}`,
      cancellable: true,
    },
    async (progress, cancel) => {
      // Our own source, so the status bar (cancelRunning) can cancel as well as the notification.
      const source = new vscode.CancellationTokenSource();
      const fromNotification = cancel.onCancellationRequested(() => source.cancel());
      active.add(source);
      let lastPct = 0;
      const sub = client.onProgress(WorkDoneProgress.type, token, (value) => {
        if (value.kind === 'end') {
          return;
        }
        const pct = value.percentage ?? lastPct;
        hooks.onProgress?.(value.message);
        progress.report({ message: value.message, increment: Math.max(0, pct - lastPct) });
        lastPct = pct;
      });
      const onCancel = source.token.onCancellationRequested(() => {
        void client.sendNotification(WorkDoneProgressCancelNotification.type, { token });
      });
      try {
        return (await client.sendRequest(
          ExecuteCommandRequest.type,
          { command, arguments: [args], workDoneToken: token },
          source.token,
        )) as T;
      } catch (err) {
        if (source.token.isCancellationRequested) {
          return undefined;
        }
        throw err;
      } finally {
        active.delete(source);
        sub.dispose();
        onCancel.dispose();
        fromNotification.dispose();
        source.dispose();
        hooks.onEnd?.();
      }
    },
  );
}
