--- cad.progress: the server's work-done progress ($/progress → LspProgress) for our clients.
---
--- Keeps, per client, the cancellable tokens that began and have not ended (for `:CadCancel`)
--- and the latest message of each; `M.last` is the statusline text ('' when idle). A token the
--- plugin is done with (`forget`: its edit finished or was cancelled) is dropped at once and its
--- late reports are ignored, so a cancelled queued edit does not linger in the statusline.
--- Progress lines are echoed through `cad.ui` (one line, never a hit-enter prompt); the `end`
--- message is not echoed: the edit's result message replaces it.

local config = require('cad.config')
local ui = require('cad.ui')

local M = {}

--- client_id → token → {message, seq} for progress that began and has not ended
--- @type table<integer, table<string|integer, {text: string, seq: integer}>>
local active = {}
--- client_id → token → true: tokens forgotten by the plugin (ignore what still arrives)
local forgotten = {}
local seq = 0

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
  return table.concat(parts, ' ')
end

local function refresh()
  local best
  for _, tokens in pairs(active) do
    for _, state in pairs(tokens) do
      if not best or state.seq > best.seq then
        best = state
      end
    end
  end
  M.last = best and best.text or ''
  pcall(vim.cmd.redrawstatus)
end

local function on_progress(ev)
  local data = ev.data or {}
  local client = vim.lsp.get_client_by_id(data.client_id)
  if not client or client.name ~= config.get().name then
    return
  end
  local params = data.params or {}
  local value = params.value
  if type(value) ~= 'table' or (forgotten[client.id] and forgotten[client.id][params.token]) then
    return
  end
  local tokens = active[client.id] or {}
  active[client.id] = tokens
  if value.kind == 'end' then
    tokens[params.token] = nil
  else
    seq = seq + 1
    tokens[params.token] = { text = format(value), seq = seq }
    if config.get().progress then
      ui.progress(format(value))
    end
  end
  refresh()
end

--- Progress tokens of a client that have begun and not ended.
--- @param client_id integer
--- @return (string|integer)[]
function M.active_tokens(client_id)
  return vim.tbl_keys(active[client_id] or {})
end

--- Forget a token (its edit finished or was cancelled): it leaves the statusline now.
function M.forget(client_id, token)
  forgotten[client_id] = forgotten[client_id] or {}
  forgotten[client_id][token] = true
  if active[client_id] then
    active[client_id][token] = nil
  end
  refresh()
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
