// Behaviour test of the compiled VS Code extension's command logic (clients/vscode/out), without VS Code.
//
// `vscode` is replaced by a scripted stub and `vscode-languageclient/node` by the pure protocol
// package it re-exports (the message types are the same objects), and a fake LanguageClient records
// what would go to the server. Checks: the code action without an instruction prompts and then
// sends cad.applyEdit; with an instruction it is forwarded as is; selections become whole-line
// ranges; cancelling the progress notification sends window/workDoneProgress/cancel and cancels
// the request. Usage: node vscode_logic_test.js <extension dir containing out/ and node_modules/>
'use strict';
const assert = require('assert');
const Module = require('module');
const path = require('path');

const extDir = path.resolve(process.argv[2]);

// ---- the vscode stub ---------------------------------------------------------------------------
const calls = { inputs: 0, info: [], warn: [], progressOpts: [], reports: [] };
let answers = [];
let cancelSource = null;
const vscodeStub = {
  ProgressLocation: { Notification: 15 },
  ViewColumn: { Beside: -2 },
  window: {
    activeTextEditor: undefined,
    showInputBox: async () => { calls.inputs += 1; return answers.shift(); },
    showInformationMessage: async (m) => { calls.info.push(m); },
    showWarningMessage: async (m) => { calls.warn.push(m); },
    showErrorMessage: async (m) => { calls.warn.push(m); },
    withProgress: async (opts, task) => {
      calls.progressOpts.push(opts);
      const listeners = [];
      const token = {
        isCancellationRequested: false,
        onCancellationRequested: (cb) => { listeners.push(cb); return { dispose() {} }; },
      };
      cancelSource = () => { token.isCancellationRequested = true; listeners.forEach((cb) => cb()); };
      return task({ report: (v) => calls.reports.push(v) }, token);
    },
    showTextDocument: async () => undefined,
  },
  workspace: {
    getConfiguration: () => ({ get: (_k, d) => d }),
    openTextDocument: async (o) => o,
  },
};

const realResolve = Module._resolveFilename;
Module._resolveFilename = function (request, parent, ...rest) {
  if (request === 'vscode') return 'vscode';
  if (request === 'vscode-languageclient/node') {
    request = path.join(extDir, 'node_modules', 'vscode-languageserver-protocol');
  }
  return realResolve.call(this, request, parent, ...rest);
};
require.cache.vscode = { id: 'vscode', filename: 'vscode', loaded: true, exports: vscodeStub };

const commands = require(path.join(extDir, 'out', 'commands.js'));
const protocol = require(path.join(extDir, 'node_modules', 'vscode-languageserver-protocol'));

// ---- a fake language client --------------------------------------------------------------------
function fakeClient({ hang = false } = {}) {
  const client = {
    requests: [], notifications: [], progressHandlers: {},
    sendRequest(type, params, token) {
      assert.strictEqual(type.method, 'workspace/executeCommand');
      client.requests.push(params);
      if (!hang) return Promise.resolve({ applied: true, message: 'ok', stats: { decoded_tokens: 3 } });
      return new Promise((_resolve, reject) => {
        token.onCancellationRequested(() => reject(new Error('Request cancelled')));
      });
    },
    sendNotification(type, params) { client.notifications.push({ method: type.method, params }); return Promise.resolve(); },
    onProgress(_type, token, handler) { client.progressHandlers[token] = handler; return { dispose() {} }; },
  };
  return client;
}

function editor(lines, sel) {
  return {
    document: { uri: { toString: () => 'file:///w/a.py' }, lineAt: (n) => ({ text: lines[n] }) },
    selection: {
      isEmpty: sel.start.line === sel.end.line && sel.start.character === sel.end.character,
      start: sel.start, end: sel.end,
    },
  };
}

async function main() {
  const lines = ['def f(a):', '    x = a - 1', '    return x', ''];
  let n = 0;
  const ok = (name) => console.log(`ok ${++n} ${name}`);

  // 1. code action without instruction: prompts, then one cad.applyEdit with the answer
  {
    const c = fakeClient(); answers = ['Fix bugs in f.']; calls.inputs = 0;
    const range = { start: { line: 0, character: 0 }, end: { line: 2, character: 12 } };
    const res = await commands.applyFromCodeAction(c, { uri: 'file:///w/a.py', range });
    assert.strictEqual(calls.inputs, 1);
    assert.strictEqual(c.requests.length, 1);
    const p = c.requests[0];
    assert.strictEqual(p.command, 'cad.applyEdit');
    assert.deepStrictEqual(p.arguments, [{ uri: 'file:///w/a.py', range, instruction: 'Fix bugs in f.' }]);
    assert.ok(typeof p.workDoneToken === 'string' && p.workDoneToken.length > 0);
    assert.strictEqual(res.applied, true);
    assert.strictEqual(calls.progressOpts.at(-1).cancellable, true);
    ok('code action without instruction prompts then applies');
  }
  // 2. code action with instruction (instruction comment): no prompt, arguments forwarded
  {
    const c = fakeClient(); calls.inputs = 0;
    const arg = { uri: 'file:///w/a.py', instruction: 'rename x', comment: { line: 0, text: 'rename x' } };
    await commands.applyFromCodeAction(c, arg);
    assert.strictEqual(calls.inputs, 0);
    assert.deepStrictEqual(c.requests[0].arguments, [arg]);
    ok('code action with instruction is forwarded without prompting');
  }
  // 3. palette command: selection lines 1..2 ending at column 0 of line 3 -> lines 1..2
  {
    const c = fakeClient(); answers = ['  tidy  '];
    vscodeStub.window.activeTextEditor = editor(lines, { start: { line: 1, character: 4 }, end: { line: 3, character: 0 } });
    await commands.applyEditInstruction(c);
    assert.deepStrictEqual(c.requests[0].arguments[0], {
      uri: 'file:///w/a.py', instruction: 'tidy',
      range: { start: { line: 1, character: 0 }, end: { line: 2, character: lines[2].length } },
    });
    ok('selection becomes a whole-line range');
  }
  // 4. empty selection -> whole document (no range); dismissed input -> nothing sent
  {
    const c = fakeClient(); answers = ['x', undefined];
    vscodeStub.window.activeTextEditor = editor(lines, { start: { line: 1, character: 2 }, end: { line: 1, character: 2 } });
    await commands.applyEditInstruction(c);
    assert.strictEqual(c.requests[0].arguments[0].range, undefined);
    await commands.applyEditInstruction(c);
    assert.strictEqual(c.requests.length, 1);
    ok('empty selection edits the whole file; dismissed prompt sends nothing');
  }
  // 5. progress is mirrored; cancel sends workDoneProgress/cancel for the token and cancels the request
  {
    const c = fakeClient({ hang: true }); answers = ['slow']; calls.reports = []; calls.info = [];
    const pending = commands.applyEditInstruction(c);
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    const token = c.requests[0].workDoneToken;
    c.progressHandlers[token]({ kind: 'begin', title: 'Copy-as-Decode', cancellable: true });
    c.progressHandlers[token]({ kind: 'report', message: 'decoding: 3 generated', percentage: 40 });
    assert.deepStrictEqual(calls.reports.at(-1), { message: 'decoding: 3 generated', increment: 40 });
    cancelSource();
    const res = await pending;
    assert.strictEqual(res, undefined);
    assert.deepStrictEqual(c.notifications, [{ method: protocol.WorkDoneProgressCancelNotification.type.method, params: { token } }]);
    assert.ok(calls.info.some((m) => m.includes('cancelled')));
    ok('cancel sends window/workDoneProgress/cancel and reports cancelled');
  }
}

main().catch((err) => { console.error(err && err.stack || err); process.exit(1); });
