/**
 * ranges: converts an editor selection into the whole-line LSP Range the server edits.
 * An empty selection means "whole document" (no range).
 */
import * as vscode from 'vscode';
import { Range } from 'vscode-languageclient/node';

export function selectionRange(document: vscode.TextDocument, selection: vscode.Selection): Range | undefined {
  if (selection.isEmpty) {
    return undefined;
  }
  let last = selection.end.line;
  // A selection ending at column 0 of a later line does not include that line.
  if (selection.end.character === 0 && last > selection.start.line) {
    last -= 1;
  }
  return {
    start: { line: selection.start.line, character: 0 },
    end: { line: last, character: document.lineAt(last).text.length },
  };
}
