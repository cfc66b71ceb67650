/**
 * previewDocuments: read-only virtual documents (`cad-preview:` URIs) holding the text a previewed
 * edit would produce, shown on the right side of VS Code's diff editor.
 */
import * as vscode from 'vscode';

export const PREVIEW_SCHEME = 'cad-preview';

export class PreviewDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private readonly registration: vscode.Disposable;

  constructor() {
    this.registration = vscode.workspace.registerTextDocumentContentProvider(PREVIEW_SCHEME, this);
  }

  add(previewId: string, text: string): vscode.Uri {
    this.texts.set(previewId, text);
    return vscode.Uri.parse(`${PREVIEW_SCHEME}:/${encodeURIComponent(previewId)}`);
  }

  remove(previewId: string): void {
    this.texts.delete(previewId);
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(decodeURIComponent(uri.path.replace(/^\//, ''))) ?? '';
  }

  dispose(): void {
    this.registration.dispose();
    this.texts.clear();
  }
}
