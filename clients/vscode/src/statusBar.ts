/**
 * statusBar: one status-bar item for Copy-as-Decode. Shows the server state (starting, ready,
 * failed) and, while an edit runs, its latest progress message; clicking it cancels the running
 * edit, or shows the output channel when idle.
 */
import * as vscode from 'vscode';

export const CANCEL_COMMAND = 'copyAsDecode.cancelEdit';
export const SHOW_OUTPUT_COMMAND = 'copyAsDecode.showOutput';

export type ServerState = 'starting' | 'ready' | 'stopped' | 'failed';

export class CadStatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private state: ServerState = 'stopped';
  private running = 0;

  constructor() {
    this.item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
    this.render();
    this.item.show();
  }

  setState(state: ServerState): void {
    this.state = state;
    this.render();
  }

  /** An edit began: the item shows its progress until `editEnded`. */
  editStarted(instruction: string): void {
    this.running += 1;
    this.item.text = `$(sync~spin) CaD: ${truncate(instruction, 30)}`;
    this.item.tooltip = 'Copy-as-Decode: edit running — click to cancel';
    this.item.command = CANCEL_COMMAND;
  }

  editProgress(message: string | undefined): void {
    if (this.running > 0 && message) {
      this.item.text = `$(sync~spin) CaD: ${truncate(message, 40)}`;
    }
  }

  editEnded(): void {
    this.running = Math.max(0, this.running - 1);
    if (this.running === 0) {
      this.render();
    }
  }

  private render(): void {
    const labels: Record<ServerState, string> = {
      starting: '$(loading~spin) CaD: starting',
      ready: '$(sparkle) CaD',
      stopped: '$(circle-slash) CaD: stopped',
      failed: '$(error) CaD: server failed',
    };
    this.item.text = labels[this.state];
    this.item.tooltip = `Copy-as-Decode language server: ${this.state} — click for the log`;
    this.item.command = SHOW_OUTPUT_COMMAND;
  }

  dispose(): void {
    this.item.dispose();
  }
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
