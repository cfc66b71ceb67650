--- cad.ui: every message the plugin shows goes through here, so that none of them can stop
--- Neovim at a hit-enter prompt ("Press ENTER or type command to continue").
---
--- * `progress(text)`: transient, one line truncated to the echo area, not kept in :messages;
---   skipped while Neovim waits for input (a prompt is open). A redraw first clears what a
---   preceding vim.ui.select / vim.ui.input left in the message area.
--- * `result(text, level)`: the one message per edit result, kept in :messages. Through a
---   user's own `vim.notify` (nvim-notify, fidget, noice, …) in full; through the builtin one,
---   truncated to one line (the full text is in the CadEditDone event and `require('cad').last()`).
---   Errors are never truncated.

local M = {}

local builtin_notify = vim.notify

local function is_builtin_notify()
  if vim.notify == builtin_notify then
    local info = debug.getinfo(vim.notify, 'S')
    return info and info.source and info.source:find('vim/_editor.lua', 1, true) ~= nil
  end
  return false
end

--- `file://` URIs in a server message as paths relative to the cwd (or ~).
--- @param text string
--- @return string
function M.short_paths(text)
  return (text:gsub('file://[^%s%)%]]+', function(uri)
    local ok, name = pcall(vim.uri_to_fname, uri)
    return ok and vim.fn.fnamemodify(name, ':~:.') or uri
  end))
end

--- Fit `text` on one line of the echo area.
--- @param text string
--- @return string
function M.one_line(text)
  text = M.short_paths(text):gsub('%s*\n%s*', ' ')
  local room = math.max(20, (vim.v.echospace or vim.o.columns - 12) - 1)
  if vim.fn.strdisplaywidth(text) <= room then
    return text
  end
  local cut = vim.fn.strcharpart(text, 0, room - 1)
  while vim.fn.strdisplaywidth(cut) > room - 1 do
    cut = vim.fn.strcharpart(cut, 0, vim.fn.strchars(cut) - 1)
  end
  return cut .. '…'
end

local function can_echo()
  local mode = vim.api.nvim_get_mode()
  return not mode.blocking and mode.mode:sub(1, 1) ~= 'c'
end

local function clear_prompt_leftovers()
  -- After inputlist()/input() the message area holds the prompt; echoing below it would scroll
  -- and ask for Enter. A redraw puts the screen back first.
  pcall(vim.cmd.redraw)
end

--- Transient progress line (not in :messages).
--- @param text string
--- @param hl string? highlight group
function M.progress(text, hl)
  if not can_echo() then
    return
  end
  clear_prompt_leftovers()
  vim.api.nvim_echo({ { M.one_line(text), hl or 'MoreMsg' } }, false, {})
end

--- The result of an edit: one message.
--- @param text string
--- @param level integer? vim.log.levels
function M.result(text, level)
  level = level or vim.log.levels.INFO
  if not is_builtin_notify() then
    vim.notify(text, level, { title = 'cad' })
    return
  end
  if level >= vim.log.levels.ERROR then
    vim.notify(text, level)
    return
  end
  vim.schedule(function()
    clear_prompt_leftovers()
    local hl = level >= vim.log.levels.WARN and 'WarningMsg' or 'Normal'
    vim.api.nvim_echo({ { M.one_line(text), hl } }, true, {})
  end)
end

return M
