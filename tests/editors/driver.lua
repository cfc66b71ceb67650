-- Headless-Neovim test driver for the cad plugin (run by tests/editors/nvim_harness.py).
--
-- Reads $CAD_TEST_CONFIG (JSON: plugin_dir, scenario, file, cmd, settings, timeout_ms, ...),
-- runs one scenario through the real plugin commands, and writes a JSON report to
-- $CAD_TEST_OUT: buffer snapshots, plugin events, progress seen, :messages and the scenario's
-- error (with traceback) if it failed. Assertions live in the Python tests; this only drives.

local out_path = os.getenv('CAD_TEST_OUT')
local ok_cfg, cfg = pcall(vim.json.decode, os.getenv('CAD_TEST_CONFIG') or '')
if not out_path or not ok_cfg then
  io.stderr:write('driver.lua: set CAD_TEST_OUT and CAD_TEST_CONFIG (JSON): ' .. tostring(cfg) .. '\n')
  vim.cmd('cquit 2')
end

vim.opt.rtp:prepend(cfg.plugin_dir)
vim.cmd('runtime! plugin/cad.lua')
vim.o.swapfile = false

local report = { events = {}, progress = {}, prompts = {}, steps = {} }

local function step(name)
  report.steps[#report.steps + 1] = name
end

local function lines(buf)
  return vim.api.nvim_buf_get_lines(buf or 0, 0, -1, false)
end

-- Record plugin events and progress.
vim.api.nvim_create_autocmd('User', {
  pattern = { 'CadEditDone', 'CadPreviewDone' },
  callback = function(ev)
    local data = vim.deepcopy(ev.data or {})
    data.event = ev.match
    data.result = data.result and vim.json.encode(data.result) or nil
    report.events[#report.events + 1] = data
  end,
})
vim.api.nvim_create_autocmd('LspProgress', {
  callback = function(ev)
    local params = ev.data.params
    local value = params.value or {}
    report.progress[#report.progress + 1] = { token = params.token, kind = value.kind, message = value.message }
  end,
})

-- Prompts answer from cfg.answers in order (and are recorded).
local answers = cfg.answers or {}
vim.ui.input = function(opts, on_confirm)
  report.prompts[#report.prompts + 1] = opts.prompt or ''
  on_confirm(table.remove(answers, 1))
end

local function wait(what, cond, ms)
  if not vim.wait(ms or cfg.timeout_ms, cond, 50) then
    error(('timed out after %d ms waiting for %s'):format(ms or cfg.timeout_ms, what), 0)
  end
end

local function wait_event(name, count)
  wait(name, function()
    local n = 0
    for _, e in ipairs(report.events) do
      if e.event == name then
        n = n + 1
      end
    end
    return n >= count
  end)
  return report.events[#report.events]
end

-- Progress has begun (and, with cfg.cancel_when, a message containing that text arrived).
local function progress_began()
  for _, p in ipairs(report.progress) do
    local kind_ok = p.kind == 'begin' or p.kind == 'report'
    if kind_ok and (not cfg.cancel_when or (p.message or ''):find(cfg.cancel_when, 1, true)) then
      return true
    end
  end
  return false
end

local function open_file()
  require('cad').setup({ cmd = cfg.cmd, settings = cfg.settings or {}, filetypes = cfg.filetypes or '*' })
  vim.cmd.edit(vim.fn.fnameescape(cfg.file))
  local buf = vim.api.nvim_get_current_buf()
  wait('the cad client to attach', function()
    return #vim.lsp.get_clients({ bufnr = buf, name = 'cad' }) > 0
      and vim.lsp.get_clients({ bufnr = buf, name = 'cad' })[1].initialized
  end, cfg.start_timeout_ms or cfg.timeout_ms)
  report.before = lines(buf)
  step('attached')
  return buf
end

-- One extmark at column 0 of every line: after an edit, marks on lines the server did not
-- touch still sit at the start of the same text (a whole-buffer replace would collapse them).
local ns = vim.api.nvim_create_namespace('cad-test')

local function mark_lines(buf)
  local ids = {}
  for row = 0, vim.api.nvim_buf_line_count(buf) - 1 do
    ids[#ids + 1] = vim.api.nvim_buf_set_extmark(buf, ns, row, 0, {})
  end
  return ids
end

local function mark_positions(buf, ids)
  local pos = {}
  for i, id in ipairs(ids) do
    local p = vim.api.nvim_buf_get_extmark_by_id(buf, ns, id, {})
    pos[i] = { p[1], p[2] }
  end
  return pos
end

local function edit_and_undo(buf, command)
  local ids = mark_lines(buf)
  vim.cmd(command)
  local done = wait_event('CadEditDone', 1)
  report.done = done
  report.after = lines(buf)
  report.mark_positions = mark_positions(buf, ids)
  step('edited')
  vim.cmd('silent undo')
  report.after_undo = lines(buf)
  step('undone')
end

local scenarios = {}

-- :CadEdit <instruction> on the whole buffer, then :undo.
function scenarios.edit(buf)
  edit_and_undo(buf, 'CadEdit ' .. cfg.instruction)
end

-- :CadPreview then :CadEdit with the same instruction (deterministic server) and :undo.
function scenarios.preview_then_edit(buf)
  vim.cmd('CadPreview ' .. cfg.instruction)
  local done = wait_event('CadPreviewDone', 1)
  report.preview_done = done
  if done.preview_bufnr then
    report.preview_lines = lines(done.preview_bufnr)
    report.preview_filetype = vim.bo[done.preview_bufnr].filetype
    vim.cmd('close')
  end
  report.after_preview = lines(buf)
  vim.api.nvim_set_current_buf(buf)
  edit_and_undo(buf, 'CadEdit ' .. cfg.instruction)
end

-- :'<,'>CadEdit on a visual selection of lines cfg.line1..cfg.line2.
function scenarios.edit_range(buf)
  vim.api.nvim_win_set_cursor(0, { cfg.line1, 0 })
  vim.cmd(('normal! V%dG'):format(cfg.line2))
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('<Esc>', true, false, true), 'nx', false)
  report.marks = { vim.fn.line("'<"), vim.fn.line("'>") }
  edit_and_undo(buf, "'<,'>CadEdit " .. cfg.instruction)
end

-- :CadPaste z with an empty register (a warning, nothing sent), then :CadPaste a holding
-- cfg.register_text, and :undo.
function scenarios.paste(buf)
  vim.fn.setreg('z', '')
  vim.cmd('CadPaste z')
  vim.fn.setreg('a', cfg.register_text)
  edit_and_undo(buf, 'CadPaste a')
end

-- :CadEdit with no argument: prompts via vim.ui.input.
function scenarios.prompt(buf)
  edit_and_undo(buf, 'CadEdit')
end

-- Run a server code action by title (client-side command interception).
function scenarios.code_action(buf)
  vim.lsp.buf.code_action({
    apply = true,
    filter = function(action)
      return action.title == cfg.action_title
    end,
  })
  local done = wait_event('CadEditDone', 1)
  report.done = done
  report.after = lines(buf)
end

-- Start a long edit, cancel once progress has begun, check the buffer stays untouched.
function scenarios.cancel(buf)
  vim.cmd('CadEdit ' .. cfg.instruction)
  wait('progress to begin', progress_began, cfg.progress_timeout_ms or cfg.timeout_ms)
  step('progress began')
  report.running = require('cad.request').get(buf) ~= nil
  report.cancel_map = vim.fn.maparg('<C-c>', 'n', false, true).desc
  if cfg.cancel_with_key then
    vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('<C-c>', true, false, true), 'x', false)
  else
    vim.cmd('CadCancel')
  end
  report.done = wait_event('CadEditDone', 1)
  step('cancelled')
  report.cancel_map_after = vim.fn.maparg('<C-c>', 'n', false, true).desc
  -- Wait for the server to end its progress (it stops between decode steps), then give it a
  -- moment more to (wrongly) apply anything.
  report.progress_ended = vim.wait(cfg.timeout_ms, function()
    local last = report.progress[#report.progress]
    return last ~= nil and last.kind == 'end'
  end, 50)
  vim.wait(cfg.settle_ms or 1500, function()
    return false
  end)
  report.after = lines(buf)
end

-- :CadPreview, then `a` in the preview window: applies the previewed program (cad.applyPreview).
function scenarios.preview_apply(buf)
  vim.cmd('CadPreview ' .. cfg.instruction)
  local done = wait_event('CadPreviewDone', 1)
  report.preview_done = done
  report.preview_winbar = vim.wo.winbar
  report.preview_lines = lines(done.preview_bufnr)
  if cfg.type_before_apply then
    local row = cfg.type_before_apply.line
    vim.api.nvim_buf_set_lines(buf, row, row + 1, true, { cfg.type_before_apply.text })
    vim.wait(400) -- let the didChange go out (debounced)
  end
  vim.api.nvim_feedkeys('a', 'x', false)
  report.done = wait_event('CadEditDone', 1)
  report.after = lines(buf)
  report.current_buf_is_source = vim.api.nvim_get_current_buf() == buf
end

-- :CadEdit whose result the server holds for review (minConfidence): the plugin opens it as a
-- preview, and `a` there applies it.
function scenarios.held_apply(buf)
  vim.cmd('CadEdit ' .. cfg.instruction)
  report.held = wait_event('CadEditDone', 1)
  report.after_held = lines(buf)
  report.preview_winbar = vim.wo.winbar
  report.preview_lines = report.held.preview_bufnr and lines(report.held.preview_bufnr) or {}
  vim.api.nvim_feedkeys('a', 'x', false)
  report.done = wait_event('CadEditDone', 2)
  report.after = lines(buf)
end

-- :CadEdit on lines cfg.line1..cfg.line2, then change line cfg.type_line (1-based) while it decodes.
function scenarios.type_elsewhere(buf)
  vim.cmd(('%d,%dCadEdit %s'):format(cfg.line1, cfg.line2, cfg.instruction))
  wait('progress to begin', progress_began, cfg.progress_timeout_ms or cfg.timeout_ms)
  vim.api.nvim_buf_set_lines(buf, cfg.type_line - 1, cfg.type_line, true, { cfg.type_text })
  vim.o.undolevels = vim.o.undolevels -- an undo break, as between a user's keystrokes and the edit
  report.typed = true
  report.done = wait_event('CadEditDone', 1)
  report.after = lines(buf)
  vim.cmd('silent undo')
  report.after_undo = lines(buf)
end

-- Open cfg.others (paths) after the first file and record which client each buffer got.
function scenarios.clients_per_root(buf)
  local ids = { vim.lsp.get_clients({ bufnr = buf, name = 'cad' })[1].id }
  for _, path in ipairs(cfg.others) do
    vim.cmd.edit(vim.fn.fnameescape(path))
    local b = vim.api.nvim_get_current_buf()
    wait('the cad client to attach to ' .. path, function()
      return #vim.lsp.get_clients({ bufnr = b, name = 'cad' }) > 0
    end)
    ids[#ids + 1] = vim.lsp.get_clients({ bufnr = b, name = 'cad' })[1].id
  end
  report.client_ids = ids
  report.client_count = #vim.lsp.get_clients({ name = 'cad' })
end

local ok, err = xpcall(function()
  local buf = open_file()
  scenarios[cfg.scenario](buf)
end, debug.traceback)
report.ok = ok
report.error = not ok and tostring(err) or nil
report.messages = vim.fn.execute('messages')
report.nvim_version = tostring(vim.version())

local f = assert(io.open(out_path, 'w'))
f:write(vim.json.encode(report))
f:close()

for _, c in ipairs(vim.lsp.get_clients()) do
  if vim.fn.has('nvim-0.11') == 1 then
    c:stop(true)
  else
    c.stop(true)
  end
end
vim.cmd('qa!')
