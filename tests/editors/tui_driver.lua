-- Drives a REAL Neovim TUI, as a user at a terminal would, from a headless "controller" Neovim.
--
-- The controller opens a terminal buffer (libvterm) running `nvim` with its normal terminal UI,
-- types keys into it, and reads the screen back from the terminal buffer. Hit-enter prompts
-- ("Press ENTER or type command to continue") only exist with a UI attached, so this is how the
-- tests see them. Each press needed to get past one is counted and the screen is kept as a frame.
--
-- Config: $CAD_TUI_CONFIG (JSON): cmd (child argv), cwd, env, columns, lines, timeout_ms,
-- status_file (the child writes "attached"/"done" lines there, see tui_child_init.lua), steps:
-- a list of {wait = "screen text", or_status = "line"?} | {wait_status = "line"} | {keys = "raw bytes"} |
-- {frame = "name"} | {sleep = ms} | {until_done = true}. Report (JSON) to $CAD_TUI_OUT.

local cfg = vim.json.decode(os.getenv('CAD_TUI_CONFIG'))
local out_path = os.getenv('CAD_TUI_OUT')
local report = { frames = {}, hit_enter = 0, hit_enter_frames = {}, steps = {} }
local PRESS_ENTER = 'Press ENTER or type command to continue'

vim.o.columns = cfg.columns or 100
vim.o.lines = cfg.lines or 30
local buf = vim.api.nvim_get_current_buf()
local opts = { cwd = cfg.cwd, env = cfg.env }
local chan
if vim.fn.has('nvim-0.11') == 1 then
  opts.term = true
  chan = vim.fn.jobstart(cfg.cmd, opts)
else
  chan = vim.fn.termopen(cfg.cmd, opts)
end

local function screen()
  local all = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local rows = vim.api.nvim_win_get_height(0)
  local first = math.max(1, #all - rows + 1)
  local shown = {}
  for i = first, #all do
    shown[#shown + 1] = all[i]
  end
  return shown
end

local function screen_text()
  return table.concat(screen(), '\n')
end

local function status_lines()
  local f = io.open(cfg.status_file, 'r')
  if not f then
    return {}
  end
  local text = f:read('*a')
  f:close()
  return vim.split(text, '\n', { trimempty = true })
end

local function has_status(line)
  return vim.list_contains(status_lines(), line)
end

--- Poll until `cond()`; on the way, answer (and count) every hit-enter prompt.
local function wait(what, cond, ms)
  local deadline = vim.uv.now() + (ms or cfg.timeout_ms)
  while vim.uv.now() < deadline do
    local text = screen_text()
    if text:find(PRESS_ENTER, 1, true) then
      report.hit_enter = report.hit_enter + 1
      if #report.hit_enter_frames < 5 then
        report.hit_enter_frames[#report.hit_enter_frames + 1] = screen()
      end
      vim.api.nvim_chan_send(chan, '\r')
      vim.wait(150)
    elseif cond(text) then
      return true
    else
      vim.wait(40)
    end
  end
  error(('timed out waiting for %s; screen:\n%s'):format(what, screen_text()), 0)
end

local ok, err = pcall(function()
  for i, step in ipairs(cfg.steps) do
    report.steps[#report.steps + 1] = i
    if step.wait then
      -- `or_status`: also done when the child reported that status (e.g. a decode too quick to see)
      wait(vim.inspect(step.wait), function(text)
        return text:find(step.wait, 1, true) ~= nil or (step.or_status ~= nil and has_status(step.or_status))
      end)
    elseif step.wait_status then
      wait('status ' .. step.wait_status, function()
        return has_status(step.wait_status)
      end)
    elseif step.keys then
      vim.api.nvim_chan_send(chan, step.keys)
      vim.wait(step.after_ms or 100)
    elseif step.frame then
      vim.wait(step.settle_ms or 300)
      report.frames[#report.frames + 1] = { name = step.frame, lines = screen() }
    elseif step.sleep then
      -- keep answering hit-enter prompts while time passes
      pcall(wait, 'sleep', function()
        return false
      end, step.sleep)
    end
  end
end)
report.ok = ok
report.error = not ok and tostring(err) or nil
report.final_screen = screen()
report.status = status_lines()
pcall(vim.api.nvim_chan_send, chan, '\27\27:qa!\r')
vim.wait(500)
pcall(vim.fn.jobstop, chan)
local f = assert(io.open(out_path, 'w'))
f:write(vim.json.encode(report))
f:close()
vim.cmd('qa!')
