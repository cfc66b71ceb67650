--- cad: Neovim client for the Copy-as-Decode language server (`cad-lsp`).
---
--- Public API (see :help cad):
---   setup(opts)        configure; auto-attach the server to the configured filetypes
---   edit(opts)         apply an edit instruction to the buffer or a line range
---   preview(opts)      show the diff an instruction would make, without applying it
---   cancel(bufnr?)     cancel the running edit
---   status()           short progress text for statuslines ('' when idle)
---   last()             the last finished edit's event data (full messages), or nil
--- The Ex commands (:CadEdit, :CadPreview, :CadCancel) live in plugin/cad.lua.
---
--- The Neovim version is checked before anything else is loaded: on Neovim < 0.10 every
--- function only reports "Neovim >= 0.10 is required" once (no Lua errors from newer APIs).

local compat_ok = vim.fn.has('nvim-0.10') == 1
if not compat_ok then
  local said = false
  local function unsupported()
    if not said then
      said = true
      local v = vim.version and vim.version() or {}
      vim.notify(
        ('cad: Neovim >= 0.10 is required (this is %s.%s.%s); the plugin is disabled'):format(
          tostring(v.major or '?'), tostring(v.minor or '?'), tostring(v.patch or '?')
        ),
        vim.log.levels.WARN -- not ERROR: that adds "Error detected while processing init.lua"
      )
    end
  end
  local stub = { supported = false }
  for _, name in ipairs({ 'setup', 'edit', 'preview', 'cancel', 'command', 'apply_preview' }) do
    stub[name] = unsupported
  end
  stub.status = function()
    return ''
  end
  stub.last = function()
    return nil
  end
  return stub
end

local client = require('cad.client')
local config = require('cad.config')
local progress = require('cad.progress')
local range = require('cad.range')
local request = require('cad.request')

local M = { supported = true }

local function wants(bufnr)
  if vim.bo[bufnr].buftype ~= '' or vim.api.nvim_buf_get_name(bufnr) == '' then
    return false
  end
  local fts = config.get().filetypes
  return fts == '*' or vim.list_contains(fts, vim.bo[bufnr].filetype)
end

--- Configure the plugin. Starts or attaches `cad-lsp` for buffers of the configured filetypes.
--- @param opts table? see :help cad-setup
function M.setup(opts)
  local cfg = config.set(opts)
  progress.register()
  local group = vim.api.nvim_create_augroup('cad.attach', { clear = true })
  if not cfg.autostart then
    return
  end
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = cfg.filetypes == '*' and '*' or cfg.filetypes,
    callback = function(ev)
      if wants(ev.buf) then
        client.start(ev.buf)
      end
    end,
  })
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and wants(buf) then
      client.start(buf)
    end
  end
end

--- @class cad.EditOpts
--- @field bufnr integer? buffer (default: current)
--- @field instruction string? the edit instruction; prompted for when missing
--- @field line1 integer? first line of the range to edit (1-based)
--- @field line2 integer? last line of the range to edit (1-based, inclusive)
--- @field strategy string? decoding strategy override ("cad", "cad-tokens", "regen", "spec-edit", "auto")

local function run(command, opts)
  opts = opts or {}
  local bufnr = (opts.bufnr == nil or opts.bufnr == 0) and vim.api.nvim_get_current_buf() or opts.bufnr
  progress.register()
  local go = function(instruction)
    -- Trailing blanks go; a pasted snippet keeps its first line's indentation (the server
    -- drops leading blank lines).
    instruction = instruction and instruction:gsub('%s+$', '') or ''
    if vim.trim(instruction) == '' then
      vim.notify(opts.empty_message or 'cad: no instruction given; nothing to do', vim.log.levels.WARN)
      return
    end
    client.with_client(bufnr, function(c)
      local args = { uri = vim.uri_from_bufnr(bufnr), instruction = instruction, strategy = opts.strategy }
      if opts.line1 then
        local ok, r = pcall(range.from_lines, bufnr, opts.line1, opts.line2 or opts.line1, c.offset_encoding)
        if not ok then
          vim.notify(r, vim.log.levels.ERROR)
          return
        end
        args.range = r
      end
      request.run(c.id, bufnr, command, args)
    end)
  end
  if opts.instruction and vim.trim(opts.instruction) ~= '' then
    go(opts.instruction)
  else
    vim.ui.input({ prompt = 'Edit instruction: ' }, function(input)
      if input ~= nil then
        go(input)
      end
    end)
  end
end

--- Apply an edit instruction (whole buffer, or lines line1..line2).
--- @param opts cad.EditOpts?
function M.edit(opts)
  run('cad.applyEdit', opts)
end

--- Apply the text of register `reg` as the instruction: typically a chat answer's code block with
--- `... existing code ...` placeholders, which the server merges by its anchors without the model
--- when it fits one place (setting `snippetMerge`), or any instruction longer than a prompt line.
--- @param opts cad.EditOpts? plus `register` (default: "+" when a clipboard is available, else '"')
function M.paste(opts)
  opts = opts or {}
  local reg = opts.register
  if reg == nil or reg == '' then
    reg = vim.fn.has('clipboard') == 1 and '+' or '"'
  end
  local ok, text = pcall(vim.fn.getreg, reg)
  opts.instruction = ok and text or ''
  opts.empty_message = ('cad: register %s is empty; yank a code snippet or an instruction into it first'):format(reg)
  if vim.trim(opts.instruction) == '' then
    vim.notify(opts.empty_message, vim.log.levels.WARN)
    return
  end
  run('cad.applyEdit', opts)
end

--- Show the unified diff an instruction would produce in a scratch buffer (ft=diff).
--- @param opts cad.EditOpts?
function M.preview(opts)
  run('cad.previewEdit', opts)
end

--- Cancel the running edit of `bufnr` (default: current buffer; falls back to all buffers).
--- @param bufnr integer?
--- @return integer count of cancelled edits
function M.cancel(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if request.running(bufnr) then
    return request.cancel(bufnr)
  end
  local n = request.cancel(nil)
  if n == 0 then
    vim.notify('cad: no edit is running')
  end
  return n
end

--- Short progress text for a statusline ('' when idle).
--- @return string
function M.status()
  return progress.last
end

--- The last finished edit's `CadEditDone`/`CadPreviewDone` data (full message texts), or nil.
--- @return table?
function M.last()
  return request.last
end

--- Entry point of :CadEdit / :CadPreview (`opts` as given to nvim_create_user_command callbacks).
--- @param command 'edit'|'preview'|'paste'
--- @param cmd_opts table
function M.command(command, cmd_opts)
  if command == 'paste' then
    local opts = { register = cmd_opts.args }
    if cmd_opts.range > 0 then
      opts.line1, opts.line2 = cmd_opts.line1, cmd_opts.line2
    end
    return M.paste(opts)
  end
  local opts = { instruction = cmd_opts.args ~= '' and cmd_opts.args or nil }
  if cmd_opts.range > 0 then
    opts.line1, opts.line2 = cmd_opts.line1, cmd_opts.line2
  end
  M[command](opts)
end

return M
