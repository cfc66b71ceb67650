--- cad.request: runs `cad.applyEdit` / `cad.previewEdit` / `cad.applyPreview` on the server, one
--- per buffer at a time, and cancels them. Owns the in-flight table, the temporary cancel key,
--- the `User` events and the one message per result.
---
--- Every run ends in exactly one `User CadEditDone` (applyEdit, applyPreview) or
--- `User CadPreviewDone` (previewEdit) autocmd whose `data` is `{bufnr, command, applied?,
--- message?, result?, error?, cancelled?, server_messages?}`. The server's own
--- `window/showMessage` notices that arrive while an edit runs are held back (see
--- `hold_server_message`) and folded into that one result message.

local compat = require('cad.compat')
local config = require('cad.config')
local progress = require('cad.progress')
local ui = require('cad.ui')

local M = {}

local RequestCancelled = -32800

--- bufnr → running request
--- @type table<integer, {client_id: integer, request_id: integer, token: string, command: string, cancel_map: table?}>
local inflight = {}

local token_seq = 0

local function new_token()
  token_seq = token_seq + 1
  return ('cad-%d-%d'):format(vim.fn.getpid(), token_seq)
end

local function done_event(command)
  return command == 'cad.previewEdit' and 'CadPreviewDone' or 'CadEditDone'
end

--- The last finished run's event data (full texts), or nil.
M.last = nil

local function map_cancel_key(bufnr)
  local key = config.get().cancel_key
  if not key then
    return nil
  end
  local saved = vim.fn.maparg(key, 'n', false, true)
  vim.keymap.set('n', key, function()
    M.cancel(bufnr)
  end, { buffer = bufnr, desc = 'cad: cancel the running edit' })
  return { key = key, saved = saved }
end

local function unmap_cancel_key(bufnr, cancel_map)
  if not cancel_map or not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  pcall(vim.keymap.del, 'n', cancel_map.key, { buffer = bufnr })
  local saved = cancel_map.saved
  if saved and saved.buffer == 1 then
    vim.api.nvim_buf_call(bufnr, function()
      vim.fn.mapset('n', false, saved)
    end)
  end
end

local function stats_text(stats)
  if type(stats) ~= 'table' then
    return ''
  end
  local bits = {}
  for _, key in ipairs({ 'decoded_tokens', 'copied_tokens', 'ops' }) do
    if stats[key] ~= nil then
      bits[#bits + 1] = ('%s=%s'):format(key, tostring(stats[key]))
    end
  end
  if stats.wall_ms then
    bits[#bits + 1] = ('%.0f ms'):format(stats.wall_ms)
  end
  return #bits > 0 and (' (' .. table.concat(bits, ', ') .. ')') or ''
end

local function finish(bufnr, data)
  local entry = inflight[bufnr]
  if entry then
    unmap_cancel_key(bufnr, entry.cancel_map)
    inflight[bufnr] = nil
    progress.forget(entry.client_id, entry.token)
    data.server_messages = #entry.server_messages > 0 and entry.server_messages or nil
  end
  data.bufnr = bufnr
  M.last = data
  vim.api.nvim_exec_autocmds('User', { pattern = done_event(data.command), modeline = false, data = data })
end

--- Held-back server notices not already said by `text`, as one suffix.
local function notices(entry, text)
  local extra = {}
  for _, m in ipairs(entry and entry.server_messages or {}) do
    local body = m.message:gsub('^Copy%-as%-Decode: ', ''):gsub('^cad: ', '')
    if not text:find(body, 1, true) then
      extra[#extra + 1] = body
    end
  end
  return #extra > 0 and (' — ' .. table.concat(extra, '; ')) or ''
end

local function worst_level(entry, level)
  for _, m in ipairs(entry and entry.server_messages or {}) do
    -- LSP MessageType: 1 error, 2 warning, 3 info, 4 log
    local l = m.type == 1 and vim.log.levels.ERROR or m.type == 2 and vim.log.levels.WARN or vim.log.levels.INFO
    level = math.max(level, l)
  end
  return level
end

local function report(bufnr, command, err, result)
  local data = { command = command, result = result }
  local entry = inflight[bufnr]
  if err then
    data.error = type(err) == 'table' and (err.message or vim.inspect(err)) or tostring(err)
    data.cancelled = type(err) == 'table' and err.code == RequestCancelled or nil
    ui.result(('cad: %s failed: %s'):format(command, data.error), vim.log.levels.ERROR)
  elseif command == 'cad.previewEdit' then
    local diff = type(result) == 'table' and result.diff or ''
    data.message = diff == '' and 'no changes' or nil
    if diff == '' then
      ui.result('cad: the edit would change nothing' .. stats_text(result and result.stats) .. notices(entry, ''))
    else
      data.preview_bufnr = require('cad.preview').open(diff, bufnr, result, entry and entry.client_id)
    end
  else
    result = type(result) == 'table' and result or {}
    data.applied = result.applied == true
    data.message = result.message
    local level = data.applied and vim.log.levels.INFO or vim.log.levels.WARN
    local text = result.message or (data.applied and 'edit applied' or 'edit not applied')
    ui.result('cad: ' .. text .. notices(entry, text) .. stats_text(result.stats), worst_level(entry, level))
    if not data.applied and result.lowConfidence and type(result.diff) == 'string' and result.diff ~= '' then
      -- held for review (setting minConfidence): show it as a preview; `a` applies it as computed
      data.preview_bufnr = require('cad.preview').open(result.diff, bufnr, result, entry and entry.client_id)
    end
  end
  finish(bufnr, data)
end

--- Called by the client's `window/showMessage` handler: while an edit of this client runs, keep
--- the server's notice for that edit's one result message instead of showing it now.
--- @param client_id integer
--- @param params lsp.ShowMessageParams
--- @return boolean held
function M.hold_server_message(client_id, params)
  for _, entry in pairs(inflight) do
    if entry.client_id == client_id then
      entry.server_messages[#entry.server_messages + 1] = { type = params.type, message = params.message }
      return true
    end
  end
  return false
end

--- Is an edit running for this buffer?
--- @param bufnr integer
function M.running(bufnr)
  return inflight[bufnr] ~= nil
end

--- Run a server command on the given client for a buffer.
--- @param client_id integer
--- @param bufnr integer
--- @param command 'cad.applyEdit'|'cad.previewEdit'|'cad.applyPreview'
--- @param args table {uri, instruction, range?, strategy?}
--- @return boolean started
function M.run(client_id, bufnr, command, args)
  local client = vim.lsp.get_client_by_id(client_id)
  if not client then
    vim.notify('cad: the language client is gone; run the command again to restart it', vim.log.levels.ERROR)
    return false
  end
  if inflight[bufnr] then
    vim.notify('cad: an edit is already running in this buffer; :CadCancel stops it', vim.log.levels.WARN)
    return false
  end
  args.uri = args.uri or vim.uri_from_bufnr(bufnr)
  local token = new_token()
  local params = { command = command, arguments = { args }, workDoneToken = token }
  -- Not client:exec_cmd(): it would dispatch `cad.applyEdit` back to our client-side handler,
  -- and it neither returns the request id (needed for $/cancelRequest) nor passes a token.
  local request_id --- @type integer?
  local ok
  ok, request_id = compat.call(client, 'request', 'workspace/executeCommand', params, function(err, result)
    local entry = inflight[bufnr]
    if not entry or entry.request_id ~= request_id then
      return -- cancelled or superseded: the outcome was already reported
    end
    report(bufnr, command, err, result)
  end, bufnr)
  if not ok or not request_id then
    vim.notify('cad: could not send ' .. command .. ' (the server is not running)', vim.log.levels.ERROR)
    return false
  end
  inflight[bufnr] = {
    client_id = client_id,
    request_id = request_id,
    token = token,
    command = command,
    cancel_map = map_cancel_key(bufnr),
    server_messages = {},
  }
  ui.progress(('cad: %s "%s"…'):format(command, args.instruction or args.previewId or ''))
  return true
end

--- The running request of a buffer (a copy), or nil.
--- @param bufnr integer
function M.get(bufnr)
  local entry = inflight[bufnr]
  return entry and vim.deepcopy(entry) or nil
end

--- Cancel the running edit of `bufnr` (or every running edit when `bufnr` is nil).
--- Sends `window/workDoneProgress/cancel` for its progress token(s) and `$/cancelRequest`.
--- @param bufnr integer?
--- @return integer count of cancelled requests
function M.cancel(bufnr)
  local targets = {}
  if bufnr and inflight[bufnr] then
    targets[bufnr] = inflight[bufnr]
  elseif not bufnr then
    targets = vim.deepcopy(inflight)
  end
  local count = 0
  for buf, entry in pairs(targets) do
    local client = vim.lsp.get_client_by_id(entry.client_id)
    if client then
      local tokens = { entry.token }
      local owned = {}
      for _, other in pairs(inflight) do
        owned[other.token] = true
      end
      -- also the server's own tokens (no other edit's), e.g. a model preload
      for _, token in ipairs(progress.active_tokens(entry.client_id)) do
        if not owned[token] then
          tokens[#tokens + 1] = token
        end
      end
      for _, token in ipairs(tokens) do
        compat.call(client, 'notify', 'window/workDoneProgress/cancel', { token = token })
        progress.forget(entry.client_id, token)
      end
      compat.call(client, 'cancel_request', entry.request_id)
    end
    count = count + 1
    ui.result('cad: ' .. entry.command .. ' cancelled')
    finish(buf, { command = entry.command, cancelled = true, applied = false })
  end
  return count
end

return M
