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

export interface EditArgs {
  uri: string;
  instruction: string;
  range?: Range;
  strategy?: string;
}

export interface ApplyResult {
  applied: boolean;
  message?: string;
  stats?: Record<string, unknown>;
}

export interface PreviewResult {
  diff: string;
  stats?: Record<string, unknown>;
}

let tokenSeq = 0;

/** Outcome of a run: the server's result, or `undefined` when the user cancelled. */
export async function runServerCommand<T>(
  client: LanguageClient,
  command: typeof APPLY | typeof PREVIEW,
  args: EditArgs,
): Promise<T | undefined> {
  const token = `cad-vscode-${process.pid}-${++tokenSeq}`;
  return vscode.window.withProgress(
    {
      location: vscode.ProgressLocation.Notification,
      title: `Copy-as-Decode: ${args.instruction}`,
      cancellable: true,
    },
    async (progress, cancel) => {
      let lastPct = 0;
      const sub = client.onProgress(WorkDoneProgress.type, token, (value) => {
        if (value.kind === 'end') {
          return;
        }
        const pct = value.percentage ?? lastPct;
        progress.report({ message: value.message, increment: Math.max(0, pct - lastPct) });
        lastPct = pct;
      });
      const onCancel = cancel.onCancellationRequested(() => {
        void client.sendNotification(WorkDoneProgressCancelNotification.type, { token });
      });
      try {
        return (await client.sendRequest(
          ExecuteCommandRequest.type,
          { command, arguments: [args], workDoneToken: token },
          cancel,
        )) as T;
      } catch (err) {
        if (cancel.isCancellationRequested) {
          return undefined;
        }
        throw err;
      } finally {
        sub.dispose();
        onCancel.dispose();
      }
    },
  );
}
