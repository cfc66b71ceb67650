/**
 * A minimal in-memory `vscode` module: enough of the VS Code extension API for the REAL
 * vscode-languageclient (9.x) and the compiled extension to run under plain node.
 *
 * Owns: text documents (versions, edits, change events), workspace configuration from a plain
 * object, commands, provider registration (code actions are kept so tests can ask for them),
 * window messages / input boxes / progress / status bar / output channels, all recorded in
 * `shim.record` for the test's report. Nothing here talks LSP: the language client does.
 *
 * Any API the client or the extension touches that is not implemented here throws
 * `vscode shim: <name> is not implemented` so a missing piece fails loudly instead of being
 * faked silently.
 */
'use strict';
const path = require('path');
const url = require('url');

const record = {
  messages: [], // {level, text}
  inputBoxes: [], // prompts shown
  progress: [], // {title, message}
  statusBar: [], // every text an item showed
  output: {}, // channel name -> text
  diffs: [], // {left, right, title} from vscode.diff
  openedDocuments: [], // {language, content}
  errors: [],
};
const answers = []; // queued input-box answers
const choices = []; // queued answers to messages that offer items (e.g. "Apply")
const config = {}; // "section.key" -> value
const clipboard = { text: '' }; // what env.clipboard.readText() returns

class Disposable {
  constructor(fn) { this._fn = fn; }
  static from(...items) { return new Disposable(() => items.forEach((d) => d && d.dispose && d.dispose())); }
  dispose() { if (this._fn) { const f = this._fn; this._fn = undefined; f(); } }
}

class EventEmitter {
  constructor() {
    this._listeners = new Set();
    this.event = (listener, thisArg, disposables) => {
      const entry = thisArg ? listener.bind(thisArg) : listener;
      this._listeners.add(entry);
      const d = new Disposable(() => this._listeners.delete(entry));
      if (Array.isArray(disposables)) disposables.push(d);
      return d;
    };
  }
  fire(value) { for (const l of [...this._listeners]) { try { l(value); } catch (e) { record.errors.push(String(e && e.stack || e)); } } }
  dispose() { this._listeners.clear(); }
}

class CancellationError extends Error { constructor() { super('Canceled'); this.name = 'Canceled'; } }

class CancellationTokenSource {
  constructor() {
    const emitter = new EventEmitter();
    this._emitter = emitter;
    this.token = { isCancellationRequested: false, onCancellationRequested: emitter.event };
  }
  cancel() { if (!this.token.isCancellationRequested) { this.token.isCancellationRequested = true; this._emitter.fire(); } }
  dispose() { this._emitter.dispose(); }
}

class Uri {
  constructor(scheme, authority, p, query, fragment) {
    this.scheme = scheme; this.authority = authority || ''; this.path = p || ''; this.query = query || ''; this.fragment = fragment || '';
  }
  static parse(value) {
    const m = /^([a-zA-Z][\w+.-]*):(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/.exec(value);
    if (!m) throw new Error(`vscode shim: cannot parse uri ${value}`);
    return new Uri(m[1], m[2], decodeURIComponent(m[3]), m[4], m[5]);
  }
  static file(fsPath) { return Uri.parse(url.pathToFileURL(fsPath).href); }
  static joinPath(base, ...parts) { return base.with({ path: path.posix.join(base.path, ...parts) }); }
  get fsPath() { return this.scheme === 'file' ? url.fileURLToPath(this.toString()) : this.path; }
  with(change) { return new Uri(change.scheme ?? this.scheme, change.authority ?? this.authority, change.path ?? this.path, change.query ?? this.query, change.fragment ?? this.fragment); }
  toString() {
    const p = this.path.split('/').map((s) => encodeURIComponent(s).replace(/%3A/g, ':')).join('/');
    return `${this.scheme}:${this.scheme === 'file' || this.authority ? '//' + this.authority : ''}${p}` +
      (this.query ? `?${this.query}` : '') + (this.fragment ? `#${this.fragment}` : '');
  }
  toJSON() { return this.toString(); }
}

class Position {
  constructor(line, character) { this.line = line; this.character = character; }
  isEqual(o) { return this.line === o.line && this.character === o.character; }
  isBefore(o) { return this.line < o.line || (this.line === o.line && this.character < o.character); }
  isAfter(o) { return !this.isEqual(o) && !this.isBefore(o); }
  isBeforeOrEqual(o) { return !this.isAfter(o); } isAfterOrEqual(o) { return !this.isBefore(o); }
  compareTo(o) { return this.isBefore(o) ? -1 : this.isEqual(o) ? 0 : 1; }
  translate(dl = 0, dc = 0) { return new Position(this.line + dl, this.character + dc); }
  with(line, character) { return new Position(line ?? this.line, character ?? this.character); }
}

class Range {
  constructor(a, b, c, d) {
    if (typeof a === 'number') { a = new Position(a, b); b = new Position(c, d); }
    [this.start, this.end] = a.isBefore(b) || a.isEqual(b) ? [a, b] : [b, a];
  }
  get isEmpty() { return this.start.isEqual(this.end); }
  get isSingleLine() { return this.start.line === this.end.line; }
  contains(x) { return x instanceof Range ? this.contains(x.start) && this.contains(x.end) : x.isAfterOrEqual(this.start) && x.isBeforeOrEqual(this.end); }
  isEqual(o) { return this.start.isEqual(o.start) && this.end.isEqual(o.end); }
  with(start, end) { return new Range(start ?? this.start, end ?? this.end); }
}

class Selection extends Range {
  constructor(anchor, active) { super(anchor, active); this.anchor = anchor; this.active = active; }
  get isReversed() { return this.anchor.isAfter(this.active); }
}

class TextEdit {
  constructor(range, newText) { this.range = range; this.newText = newText; }
  static replace(range, text) { return new TextEdit(range, text); }
  static insert(pos, text) { return new TextEdit(new Range(pos, pos), text); }
  static delete(range) { return new TextEdit(range, ''); }
}

class WorkspaceEdit {
  constructor() { this._edits = new Map(); }
  _list(uri) { const k = uri.toString(); if (!this._edits.has(k)) this._edits.set(k, [uri, []]); return this._edits.get(k)[1]; }
  replace(uri, range, text) { this._list(uri).push(new TextEdit(range, text)); }
  insert(uri, pos, text) { this.replace(uri, new Range(pos, pos), text); }
  delete(uri, range) { this.replace(uri, range, ''); }
  set(uri, edits) { this._list(uri).splice(0, Infinity, ...edits); }
  has(uri) { return this._edits.has(uri.toString()); }
  get(uri) { return this.has(uri) ? [...this._list(uri)] : []; }
  entries() { return [...this._edits.values()].map(([u, e]) => [u, [...e]]); }
  get size() { return this._edits.size; }
  createFile() { throw new Error('vscode shim: WorkspaceEdit file operations are not implemented'); }
}

class CodeActionKind {
  constructor(value) { this.value = value; }
  append(part) { return new CodeActionKind(this.value ? `${this.value}.${part}` : part); }
  contains(other) { return this.value === other.value || other.value.startsWith(this.value + '.'); }
  intersects(other) { return this.contains(other) || other.contains(this); }
}
for (const [k, v] of Object.entries({ Empty: '', QuickFix: 'quickfix', Refactor: 'refactor', RefactorExtract: 'refactor.extract',
  RefactorInline: 'refactor.inline', RefactorRewrite: 'refactor.rewrite', Source: 'source',
  SourceOrganizeImports: 'source.organizeImports', SourceFixAll: 'source.fixAll', Notebook: 'notebook', RefactorMove: 'refactor.move' })) {
  CodeActionKind[k] = new CodeActionKind(v);
}

class CodeAction { constructor(title, kind) { this.title = title; this.kind = kind; } }
class Diagnostic { constructor(range, message, severity) { this.range = range; this.message = message; this.severity = severity; } }
// Classes the client subclasses at load time; only constructed for features our server lacks.
const plainClass = (name) => ({ [name]: class { constructor(...args) { this._args = args; } } })[name];

class ThemeColor { constructor(id) { this.id = id; } }
class MarkdownString { constructor(value = '') { this.value = value; } appendText(t) { this.value += t; return this; } appendMarkdown(t) { this.value += t; return this; } }

// ---- documents ------------------------------------------------------------------------------
function offsetsOf(text) { const o = [0]; for (let i = 0; i < text.length; i++) if (text[i] === '\n') o.push(i + 1); return o; }

class TextDocument {
  constructor(uri, languageId, text) {
    this.uri = uri; this.languageId = languageId; this._text = text; this.version = 1;
    this.isClosed = false; this.isDirty = false; this.isUntitled = uri.scheme === 'untitled'; this.eol = 1;
  }
  get fileName() { return this.uri.fsPath; }
  get lineCount() { return offsetsOf(this._text).length; }
  getText(range) { return range ? this._text.slice(this.offsetAt(range.start), this.offsetAt(range.end)) : this._text; }
  offsetAt(pos) {
    const o = offsetsOf(this._text);
    const line = Math.min(Math.max(pos.line, 0), o.length - 1);
    const end = line + 1 < o.length ? o[line + 1] - 1 : this._text.length;
    return Math.min(o[line] + Math.max(pos.character, 0), end);
  }
  positionAt(offset) {
    const o = offsetsOf(this._text); let line = 0;
    while (line + 1 < o.length && o[line + 1] <= offset) line++;
    return new Position(line, offset - o[line]);
  }
  lineAt(x) {
    const line = typeof x === 'number' ? x : x.line;
    const text = this._text.split('\n')[line];
    if (text === undefined) throw new Error(`vscode shim: line ${line} out of range`);
    const range = new Range(line, 0, line, text.length);
    return { lineNumber: line, text, range, rangeIncludingLineBreak: range, isEmptyOrWhitespace: text.trim() === '',
      firstNonWhitespaceCharacterIndex: text.length - text.trimStart().length };
  }
  validateRange(r) { return r; } validatePosition(p) { return p; }
  getWordRangeAtPosition() { return undefined; }
  save() { return Promise.resolve(true); }
}

const documents = [];
const ev = {
  open: new EventEmitter(), close: new EventEmitter(), change: new EventEmitter(), save: new EventEmitter(),
  willSave: new EventEmitter(), config: new EventEmitter(), folders: new EventEmitter(), activeEditor: new EventEmitter(),
  visibleEditors: new EventEmitter(), tabs: new EventEmitter(),
};

/** Apply edits (non-overlapping, original coordinates) to a document; fires one change event. */
function editDocument(doc, edits) {
  const spans = edits.map((e) => ({ s: doc.offsetAt(e.range.start), e: doc.offsetAt(e.range.end), t: e.newText, range: e.range }))
    .sort((a, b) => b.s - a.s);
  let text = doc._text;
  for (const sp of spans) text = text.slice(0, sp.s) + sp.t + text.slice(sp.e);
  const contentChanges = spans.map((sp) => ({ range: sp.range, rangeOffset: sp.s, rangeLength: sp.e - sp.s, text: sp.t }));
  doc._text = text; doc.version += 1; doc.isDirty = true;
  ev.change.fire({ document: doc, contentChanges, reason: undefined });
}

function addDocument(doc) { documents.push(doc); ev.open.fire(doc); return doc; }

let activeTextEditor;
function makeEditor(doc, selection) {
  return { document: doc, selection: selection || new Selection(new Position(0, 0), new Position(0, 0)), selections: [], viewColumn: 1,
    edit: async (cb) => { const edits = []; cb({ replace: (r, t) => edits.push(new TextEdit(r, t)), insert: (p, t) => edits.push(TextEdit.insert(p, t)), delete: (r) => edits.push(TextEdit.delete(r)) }); editDocument(doc, edits); return true; } };
}

// ---- namespaces -----------------------------------------------------------------------------
const registered = { commands: new Map(), codeActionProviders: [] };

function configuration(section) {
  const prefix = section ? `${section}.` : '';
  const get = (key, def) => (Object.prototype.hasOwnProperty.call(config, prefix + key) ? config[prefix + key] : def);
  return { get, has: (key) => Object.prototype.hasOwnProperty.call(config, prefix + key),
    inspect: (key) => ({ key: prefix + key, globalValue: config[prefix + key] }),
    update: async (key, value) => { config[prefix + key] = value; ev.config.fire({ affectsConfiguration: (s) => (prefix + key).startsWith(s) }); } };
}

function match(selector, doc) {
  const sels = Array.isArray(selector) ? selector : [selector];
  let best = 0;
  for (const s of sels) {
    if (typeof s === 'string') { if (s === doc.languageId || s === '*') best = Math.max(best, s === '*' ? 5 : 10); continue; }
    if (s.language && s.language !== '*' && s.language !== doc.languageId) continue;
    if (s.scheme && s.scheme !== '*' && s.scheme !== doc.uri.scheme) continue;
    if (s.notebookType) continue;
    if (s.pattern) {
      const pattern = typeof s.pattern === 'string' ? s.pattern : s.pattern.pattern;
      if (pattern && !require('path').matchesGlob?.(doc.uri.fsPath, pattern)) continue;
    }
    best = Math.max(best, s.language && s.language !== '*' ? 10 : 5);
  }
  return best;
}

function message(level) {
  return async (text, ...items) => {
    const offered = items.filter((i) => typeof i === 'string' || (i && i.title));
    record.messages.push({ level, text, items: offered.map((i) => (typeof i === 'string' ? i : i.title)) });
    return offered.length > 0 ? choices.shift() : undefined;
  };
}

function outputChannel(name) {
  record.output[name] = record.output[name] || '';
  const append = (t) => { record.output[name] += t; };
  return { name, append, appendLine: (t) => append(t + '\n'), replace: (t) => { record.output[name] = t; }, clear: () => { record.output[name] = ''; },
    show() {}, hide() {}, dispose() {},
    trace: (t) => append(`[trace] ${t}\n`), debug: (t) => append(`[debug] ${t}\n`), info: (t) => append(`[info] ${t}\n`),
    warn: (t) => append(`[warn] ${t}\n`), error: (t) => append(`[error] ${t}\n`), logLevel: 2, onDidChangeLogLevel: new EventEmitter().event };
}

const window = {
  get activeTextEditor() { return activeTextEditor; },
  get visibleTextEditors() { return activeTextEditor ? [activeTextEditor] : []; },
  onDidChangeActiveTextEditor: ev.activeEditor.event,
  onDidChangeVisibleTextEditors: ev.visibleEditors.event,
  onDidChangeTextEditorSelection: new EventEmitter().event,
  tabGroups: { all: [], onDidChangeTabs: ev.tabs.event, onDidChangeTabGroups: new EventEmitter().event },
  showInformationMessage: message('info'),
  showWarningMessage: message('warning'),
  showErrorMessage: message('error'),
  showInputBox: async (opts) => { record.inputBoxes.push((opts && opts.prompt) || ''); return answers.shift(); },
  showQuickPick: async () => { throw new Error('vscode shim: showQuickPick is not implemented'); },
  createOutputChannel: (name) => outputChannel(name),
  withProgress: async (options, task) => {
    const source = new CancellationTokenSource();
    const entry = { title: options.title, location: options.location, cancellable: !!options.cancellable, reports: [], source };
    record.progress.push(entry);
    try { return await task({ report: (v) => entry.reports.push(v) }, source.token); } finally { entry.done = true; }
  },
  createStatusBarItem: () => {
    const item = { text: '', tooltip: '', command: undefined, visible: false,
      show() { this.visible = true; }, hide() { this.visible = false; }, dispose() { this.visible = false; } };
    return new Proxy(item, { set(target, key, value) { target[key] = value; if (key === 'text') record.statusBar.push(value); return true; } });
  },
  showTextDocument: async (doc) => { const d = doc.document || doc; activeTextEditor = makeEditor(d); ev.activeEditor.fire(activeTextEditor); return activeTextEditor; },
};

const workspace = {
  get textDocuments() { return documents.filter((d) => !d.isClosed); },
  workspaceFolders: undefined,
  name: undefined,
  getWorkspaceFolder: () => undefined,
  getConfiguration: configuration,
  onDidOpenTextDocument: ev.open.event,
  onDidCloseTextDocument: ev.close.event,
  onDidChangeTextDocument: ev.change.event,
  onDidSaveTextDocument: ev.save.event,
  onWillSaveTextDocument: ev.willSave.event,
  onDidChangeConfiguration: ev.config.event,
  onDidChangeWorkspaceFolders: ev.folders.event,
  onDidCreateFiles: new EventEmitter().event, onDidDeleteFiles: new EventEmitter().event, onDidRenameFiles: new EventEmitter().event,
  onWillCreateFiles: new EventEmitter().event, onWillDeleteFiles: new EventEmitter().event, onWillRenameFiles: new EventEmitter().event,
  createFileSystemWatcher: () => ({ onDidCreate: new EventEmitter().event, onDidChange: new EventEmitter().event, onDidDelete: new EventEmitter().event, dispose() {} }),
  registerTextDocumentContentProvider: (scheme, provider) => { registered.contentProviders = registered.contentProviders || new Map(); registered.contentProviders.set(scheme, provider); return new Disposable(() => registered.contentProviders.delete(scheme)); },
  openTextDocument: async (arg) => {
    if (arg && typeof arg === 'object' && !(arg instanceof Uri)) {
      record.openedDocuments.push({ language: arg.language, content: arg.content });
      return addDocument(new TextDocument(Uri.parse(`untitled:Untitled-${documents.length + 1}`), arg.language || 'plaintext', arg.content || ''));
    }
    const uri = typeof arg === 'string' ? Uri.file(arg) : arg;
    const existing = documents.find((d) => d.uri.toString() === uri.toString() && !d.isClosed);
    if (existing) return existing;
    if (uri.scheme !== 'file') {
      const provider = registered.contentProviders && registered.contentProviders.get(uri.scheme);
      if (!provider) throw new Error(`vscode shim: no content provider for ${uri.scheme}`);
      return addDocument(new TextDocument(uri, 'plaintext', await provider.provideTextDocumentContent(uri, new CancellationTokenSource().token)));
    }
    const ext = path.extname(uri.fsPath);
    const language = { '.py': 'python', '.js': 'javascript', '.ts': 'typescript' }[ext] || 'plaintext';
    return addDocument(new TextDocument(uri, language, require('fs').readFileSync(uri.fsPath, 'utf8')));
  },
  applyEdit: async (edit) => {
    for (const [uri, edits] of edit.entries()) {
      const doc = documents.find((d) => d.uri.toString() === uri.toString() && !d.isClosed);
      if (!doc) return false;
      editDocument(doc, edits);
    }
    return true;
  },
};

const languages = {
  match,
  getLanguages: async () => ['python', 'javascript', 'typescript', 'plaintext'],
  createDiagnosticCollection: (name) => ({ name, set() {}, delete() {}, clear() {}, forEach() {}, get: () => [], has: () => false, dispose() {} }),
  registerCodeActionsProvider: (selector, provider, metadata) => {
    const entry = { selector, provider, metadata };
    registered.codeActionProviders.push(entry);
    return new Disposable(() => registered.codeActionProviders.splice(registered.codeActionProviders.indexOf(entry), 1));
  },
};

const commands = {
  registerCommand: (id, fn, thisArg) => {
    if (registered.commands.has(id)) throw new Error(`command '${id}' already exists`);
    registered.commands.set(id, thisArg ? fn.bind(thisArg) : fn);
    return new Disposable(() => registered.commands.delete(id));
  },
  executeCommand: async (id, ...args) => {
    if (id === 'vscode.diff') { record.diffs.push({ left: String(args[0]), right: String(args[1]), title: args[2] }); return undefined; }
    if (id === 'setContext') return undefined;
    const fn = registered.commands.get(id);
    if (!fn) throw new Error(`vscode shim: command '${id}' not found`);
    return fn(...args);
  },
  getCommands: async () => [...registered.commands.keys()],
};

const api = {
  version: '1.82.0',
  Uri, Position, Range, Selection, TextEdit, WorkspaceEdit, CodeAction, CodeActionKind, Diagnostic, Disposable, EventEmitter,
  CancellationError, CancellationTokenSource, ThemeColor, MarkdownString,
  CompletionItem: plainClass('CompletionItem'), SymbolInformation: plainClass('SymbolInformation'), DocumentLink: plainClass('DocumentLink'),
  CodeLens: plainClass('CodeLens'), InlayHint: plainClass('InlayHint'), TypeHierarchyItem: plainClass('TypeHierarchyItem'),
  CallHierarchyItem: plainClass('CallHierarchyItem'), Location: plainClass('Location'), SnippetString: plainClass('SnippetString'),
  TabInputText: plainClass('TabInputText'), TabInputTextDiff: plainClass('TabInputTextDiff'), TabInputCustom: plainClass('TabInputCustom'),
  TabInputNotebook: plainClass('TabInputNotebook'), TabInputNotebookDiff: plainClass('TabInputNotebookDiff'),
  ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
  StatusBarAlignment: { Left: 1, Right: 2 },
  ViewColumn: { Active: -1, Beside: -2, One: 1, Two: 2 },
  DiagnosticSeverity: { Error: 0, Warning: 1, Information: 2, Hint: 3 }, DiagnosticTag: { Unnecessary: 1, Deprecated: 2 },
  CodeActionTriggerKind: { Invoke: 1, Automatic: 2 }, TextDocumentSaveReason: { Manual: 1, AfterDelay: 2, FocusOut: 3 },
  SymbolTag: { Deprecated: 1 }, EndOfLine: { LF: 1, CRLF: 2 }, ConfigurationTarget: { Global: 1, Workspace: 2, WorkspaceFolder: 3 },
  LogLevel: { Off: 0, Trace: 1, Debug: 2, Info: 3, Warning: 4, Error: 5 },
  window, workspace, languages, commands,
  env: { language: 'en', appName: 'vscode-shim', appRoot: '', machineId: 'shim', sessionId: 'shim', uriScheme: 'vscode', openExternal: async () => true,
    clipboard: { readText: async () => clipboard.text, writeText: async (t) => { clipboard.text = String(t); } } },
  extensions: { all: [], getExtension: () => undefined, onDidChange: new EventEmitter().event },
};

const shimControl = {
  record, answers, choices, config, registered, documents, clipboard,
  /** Open a file as VS Code would (didOpen fires) and make it the active editor. */
  async openFile(fsPath) { const doc = await workspace.openTextDocument(Uri.file(fsPath)); await window.showTextDocument(doc); return doc; },
  setSelection(doc, range) { activeTextEditor = makeEditor(doc, new Selection(range.start, range.end)); },
  /** Type into a document (one change event, as a keystroke would). */
  type(doc, range, text) { editDocument(doc, [new TextEdit(range, text)]); },
  closeDocument(doc) { doc.isClosed = true; ev.close.fire(doc); },
};

const missing = (where, key) => { throw new Error(`vscode shim: ${where}${String(key)} is not implemented`); };
const strict = (obj, where) => new Proxy(obj, {
  get(target, key) {
    if (key in target || typeof key === 'symbol' || key === 'then' || key === '__esModule' || key === 'default') return target[key];
    return missing(where, key);
  },
});
for (const ns of ['window', 'workspace', 'languages', 'commands', 'env']) api[ns] = strict(api[ns], `${ns}.`);
module.exports = strict(api, '');
module.exports.__shim = shimControl;
