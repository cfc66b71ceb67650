--- cad.config: the plugin's options (defaults, validation, current values).
---
--- Owns nothing else: every other module reads options through `get()`.

local M = {}

--- @class cad.Config
--- @field cmd string[] command line that starts the language server (stdio)
--- @field cmd_env table<string,string>? extra environment for the server process
--- @field filetypes string[]|"*" filetypes the server auto-attaches to ("*" = every file buffer)
--- @field root_markers string[] files/dirs that mark a project root (one server per root)
--- @field settings table server settings: model, device, strategy, maxNewTokens, resolverMode
--- @field name string LSP client name (also used to find our client)
--- @field autostart boolean attach automatically on FileType (setup() only)
--- @field cancel_key string|false buffer-local key that cancels a running edit
--- @field progress boolean echo work-done progress while an edit runs
--- @field preview_split string Ex command that opens the window for :CadPreview

--- @type cad.Config
M.defaults = {
  cmd = { 'cad-lsp' },
  cmd_env = nil,
  filetypes = '*',
  root_markers = { '.git', 'pyproject.toml', 'package.json', 'Cargo.toml', 'go.mod' },
  settings = {},
  name = 'cad',
  autostart = true,
  cancel_key = '<C-c>',
  progress = true,
  preview_split = 'botright split',
}

--- @type cad.Config
local current = vim.deepcopy(M.defaults)

local function fail(key, want, got)
  error(
    ('cad.setup(): option `%s` must be %s, got %s (see :help cad-setup)'):format(key, want, vim.inspect(got)),
    0
  )
end

local function check(opts)
  local types = {
    cmd = 'table',
    root_markers = 'table',
    settings = 'table',
    name = 'string',
    autostart = 'boolean',
    progress = 'boolean',
    preview_split = 'string',
  }
  for key, want in pairs(types) do
    if type(opts[key]) ~= want then
      fail(key, 'a ' .. want, opts[key])
    end
  end
  if opts.cmd_env ~= nil and type(opts.cmd_env) ~= 'table' then
    fail('cmd_env', 'a table or nil', opts.cmd_env)
  end
  if opts.filetypes ~= '*' and type(opts.filetypes) ~= 'table' then
    fail('filetypes', 'a list of filetypes or "*"', opts.filetypes)
  end
  if opts.cancel_key ~= false and type(opts.cancel_key) ~= 'string' then
    fail('cancel_key', 'a key (string) or false', opts.cancel_key)
  end
  if #opts.cmd == 0 then
    fail('cmd', 'a non-empty list such as { "cad-lsp" }', opts.cmd)
  end
end

--- Merge user options over the defaults, validate, and make them current.
--- @param opts table?
--- @return cad.Config
function M.set(opts)
  local merged = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  -- Lists replace (not merge with) the defaults.
  for _, key in ipairs({ 'cmd', 'filetypes', 'root_markers' }) do
    if opts and opts[key] ~= nil then
      merged[key] = opts[key]
    end
  end
  check(merged)
  current = merged
  return current
end

--- @return cad.Config
function M.get()
  return current
end

return M
