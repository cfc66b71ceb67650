--- cad.progress: shows the server's work-done progress ($/progress → LspProgress) as a short
--- echo line and keeps the cancellable progress tokens of our clients for `:CadCancel`.

local config = require('cad.config')

local M = {}

--- client_id → token → true, for progress that began cancellable and has not ended
--- @type table<integer, table<string|integer, boolean>>
local active = {}

--- Last status text (for statuslines): '' when idle.
M.last = ''

local function format(value)
  local parts = { 'cad:' }
  if value.title and value.title ~= '' then
    parts[#parts + 1] = value.title
  end
  if value.message and value.message ~= '' then
    parts[#parts + 1] = value.message
  end
  if value.percentage then
    parts[#parts + 1] = ('(%d%%)'):format(value.percentage)
  end
  if value.kind == 'end' then
    parts[#parts + 1] = '[done]'
  end
  return table.concat(parts, ' ')
end

local function on_progress(ev)
  local data = ev.data or {}
  local client = vim.lsp.get_client_by_id(data.client_id)
  if not client or client.name ~= config.get().name then
    return
  end
  local params = data.params or {}
  local value = params.value
  if type(value) ~= 'table' then
    return
  end
  local tokens = active[client.id] or {}
  active[client.id] = tokens
  if value.kind == 'begin' and value.cancellable then
    tokens[params.token] = true
  elseif value.kind == 'end' then
    tokens[params.token] = nil
  end
  M.last = value.kind == 'end' and '' or format(value)
  if config.get().progress then
    vim.api.nvim_echo({ { format(value), value.kind == 'end' and 'Normal' or 'MoreMsg' } }, false, {})
    pcall(vim.cmd.redrawstatus)
  end
end

--- Cancellable progress tokens of a client that have begun and not ended.
--- @param client_id integer
--- @return (string|integer)[]
function M.active_tokens(client_id)
  return vim.tbl_keys(active[client_id] or {})
end

--- Forget a token (after we cancelled it ourselves).
function M.forget(client_id, token)
  if active[client_id] then
    active[client_id][token] = nil
  end
end

local registered = false

--- Install the LspProgress autocmd once.
function M.register()
  if registered then
    return
  end
  registered = true
  local group = vim.api.nvim_create_augroup('cad.progress', { clear = true })
  vim.api.nvim_create_autocmd('LspProgress', { group = group, callback = on_progress })
end

return M
