// Runs the BUNDLED VS Code extension (package.json `main`, dist/extension.js) with the REAL vscode-languageclient
// against a real language server process, under node with the in-memory `vscode` module
// (tests/editors/vscode_shim.js). Nothing of the client is faked: the extension's activate()
// creates the LanguageClient, which spawns the server command, initializes, syncs documents,
// fetches code actions and handles workspace/applyEdit.
//
// Usage: node vscode_client_driver.js <extension dir> <config JSON>
// Config: {scenario, file, settings: {"copyAsDecode.x": v}, answers: [], choices: [], range?,
//          action_title?, timeout_ms, type_at?}
// Prints one JSON report line prefixed with "REPORT " (assertions live in the Python tests).
'use strict';
const Module = require('module');
const path = require('path');
const childProcess = require('child_process');

const extDir = path.resolve(process.argv[2]);
const cfg = JSON.parse(process.argv[3]);
const shimPath = path.join(__dirname, 'vscode_shim.js');

// `require('vscode')` anywhere (the extension and vscode-languageclient) gets the shim.
const realResolve = Module._resolveFilename;
Module._resolveFilename = function (request, parent, ...rest) {
  if (request === 'vscode') return shimPath;
  return realResolve.call(this, request, parent, ...rest);
};
const vscode = require(shimPath);
const shim = vscode.__shim;
Object.assign(shim.config, cfg.settings || {});
shim.answers.push(...(cfg.answers || []));
shim.choices.push(...(cfg.choices || []));

// Record every process the client spawns (command, argv, time).
const spawns = [];
const realSpawn = childProcess.spawn;
childProcess.spawn = function (command, args, options) {
  const proc = realSpawn.call(this, command, args, options);
  spawns.push({ command, args: [...(args || [])], at: Date.now(), pid: proc.pid, proc });
  return proc;
};

const report = { steps: [] };
// The extension host logs unhandled rejections and carries on; so does this driver.
process.on('unhandledRejection', (err) => { shim.record.errors.push(`unhandledRejection: ${err && err.message || err}`); });
const t0 = Date.now();
const step = (name) => report.steps.push(`${Date.now() - t0}ms ${name}`);

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what, cond, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) return;
    await sleep(25);
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}`);
}

function toRange(r) {
  return new vscode.Range(r.start.line, r.start.character, r.end.line, r.end.character);
}

const scenarios = {
  // Ask the server for code actions over a range and run the one titled cfg.action_title.
  async code_action(api, doc) {
    const range = toRange(cfg.range || { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } });
    const providers = shim.registered.codeActionProviders.filter((p) => vscode.languages.match(p.selector, doc) > 0);
    report.code_action_providers = providers.length;
    const cts = new vscode.CancellationTokenSource();
    const actions = await providers[0].provider.provideCodeActions(doc, range,
      { diagnostics: [], only: undefined, triggerKind: 1 }, cts.token);
    report.action_titles = (actions || []).map((a) => a.title);
    report.action_kinds = (actions || []).map((a) => (a.kind ? a.kind.value : null));
    const action = (actions || []).find((a) => a.title === cfg.action_title);
    if (!action) throw new Error(`no code action titled ${cfg.action_title}: ${report.action_titles}`);
    step('code actions received');
    const run = vscode.commands.executeCommand(action.command.command, ...(action.command.arguments || []));
    if (cfg.type_at) {
      // Type on another line once the server reports progress (the edit is being decoded).
      await waitFor('progress', () => shim.record.progress.some((p) => p.reports.length > 0), cfg.timeout_ms);
      shim.type(doc, toRange(cfg.type_at.range), cfg.type_at.text);
      report.typed_version = doc.version;
      step('typed elsewhere');
    }
    report.result = await withTimeout(run, cfg.timeout_ms, 'the code action command');
    step('code action finished');
  },

  // copyAsDecode.previewEditInstruction: diff editor, then "Apply" (cfg.choices) reuses the program.
  async preview_apply(api, doc) {
    report.outcome = await withTimeout(vscode.commands.executeCommand('copyAsDecode.previewEditInstruction'),
      cfg.timeout_ms, 'preview then apply');
    step('preview finished');
  },

  // copyAsDecode.applyEditInstruction whose edit the server holds for review (minConfidence):
  // the diff opens and "Apply" (cfg.choices) applies the computed program.
  async held_apply(api, doc) {
    report.result = (await withTimeout(vscode.commands.executeCommand('copyAsDecode.applyEditInstruction'),
      cfg.timeout_ms, 'held edit reviewed')) ?? null;
    step('held edit reviewed');
  },

  // copyAsDecode.applyClipboard with cfg.clipboard as the clipboard's text.
  async apply_clipboard(api, doc) {
    shim.clipboard.text = cfg.clipboard ?? '';
    report.result = (await withTimeout(vscode.commands.executeCommand('copyAsDecode.applyClipboard'),
      cfg.timeout_ms, 'apply clipboard')) ?? null;
    step('clipboard applied');
  },

  // Start a slow edit, then cancel it from the status bar item's command.
  async cancel_from_status_bar(api, doc) {
    const run = vscode.commands.executeCommand('copyAsDecode.applyEditInstruction');
    await waitFor('progress', () => shim.record.progress.some((p) => p.reports.length > 0), cfg.timeout_ms);
    report.status_while_running = shim.record.statusBar[shim.record.statusBar.length - 1];
    report.cancelled_count = await vscode.commands.executeCommand('copyAsDecode.cancelEdit');
    report.result = (await withTimeout(run, cfg.timeout_ms, 'the cancelled edit')) ?? null;
    report.status_after = shim.record.statusBar[shim.record.statusBar.length - 1];
    step('cancelled');
  },
};

async function main() {
  const doc = await shim.openFile(cfg.file);
  report.before = doc.getText();
  if (cfg.selection) shim.setSelection(doc, toRange(cfg.selection));
  // package.json `main`: the bundled extension that ships in the .vsix.
  const main = JSON.parse(require('fs').readFileSync(path.join(extDir, 'package.json'), 'utf8')).main;
  const ext = require(path.resolve(extDir, main));
  report.entry = main;
  const context = { subscriptions: [], extensionPath: extDir, extensionUri: vscode.Uri.file(extDir) };
  const tActivate = Date.now();
  const api = await ext.activate(context);
  const client = await withTimeout(api.ready(), cfg.start_timeout_ms || cfg.timeout_ms, 'client start');
  const tReady = Date.now();
  step('client ready');
  const server = spawns[0];
  report.spawn = server ? { command: server.command, args: server.args } : null;
  report.spawn_to_initialized_ms = server ? tReady - server.at : null;
  report.activate_to_initialized_ms = tReady - tActivate;
  report.server_info = client.initializeResult && client.initializeResult.serverInfo;
  report.status_ready = shim.record.statusBar[shim.record.statusBar.length - 1];
  await scenarios[cfg.scenario](api, doc);
  // Full-sync didChange is delivered after a 250 ms delay: let it go out, as it would in an editor.
  await sleep(cfg.settle_ms ?? 600);
  report.after = doc.getText();
  report.version = doc.version;
  await withTimeout(ext.deactivate(), 20000, 'deactivate');
  step('deactivated');
  if (server) {
    await waitFor('the server process to exit', () => server.proc.exitCode !== null || server.proc.signalCode !== null, 10000)
      .catch(() => undefined);
    report.server_exit = { code: server.proc.exitCode, signal: server.proc.signalCode };
  }
}

main().then(() => { report.ok = true; }, (err) => { report.ok = false; report.error = String(err && err.stack || err); })
  .finally(() => {
    const r = shim.record;
    Object.assign(report, { messages: r.messages, input_boxes: r.inputBoxes, status_bar: r.statusBar, diffs: r.diffs,
      progress: r.progress.map((p) => ({ title: p.title, reports: p.reports, cancellable: p.cancellable })),
      output: r.output, shim_errors: r.errors });
    process.stdout.write(`REPORT ${JSON.stringify(report)}\n`);
    for (const s of spawns) { if (s.proc.exitCode === null) s.proc.kill(); }
    process.exit(report.ok ? 0 : 1);
  });
