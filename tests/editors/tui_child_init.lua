-- init.lua of the Neovim under test in tui_driver.lua: a user's config that loads the cad plugin.
-- $CAD_TUI_CHILD (JSON): plugin_dir, cmd, settings, status_file. Appends "attached" (cad client
-- attached), "done" (CadEditDone), "preview" (CadPreviewDone) lines to status_file, and the
-- event data and buffer lines as JSON lines to status_file .. '.events'.
local cfg = vim.json.decode(os.getenv('CAD_TUI_CHILD'))
vim.opt.rtp:prepend(cfg.plugin_dir)
vim.o.swapfile = false
vim.o.shada = ''
vim.o.laststatus = 2
-- the statusline recipe from the docs: progress of a running edit next to the file name
vim.o.statusline = [[%f %m%=%{v:lua.require'cad'.status()} %l,%c]]

local function status(line, data)
  local f = assert(io.open(cfg.status_file, 'a'))
  f:write(line .. '\n')
  f:close()
  if data then
    local e = assert(io.open(cfg.status_file .. '.events', 'a'))
    e:write(vim.json.encode(data) .. '\n')
    e:close()
  end
end

local ok, err = pcall(function()
  require('cad').setup({ cmd = cfg.cmd, settings = cfg.settings or {}, filetypes = '*' })
end)
if not ok then
  status('setup-error', { error = tostring(err) })
end
vim.api.nvim_create_autocmd('LspAttach', {
  callback = function(ev)
    local client = vim.lsp.get_client_by_id(ev.data.client_id)
    if client and client.name == 'cad' then
      status('attached')
    end
  end,
})
vim.api.nvim_create_autocmd('User', {
  pattern = { 'CadEditDone', 'CadPreviewDone' },
  callback = function(ev)
    local data = vim.deepcopy(ev.data or {})
    data.result = nil
    data.event = ev.match
    data.lines = vim.api.nvim_buf_get_lines(ev.data.bufnr, 0, -1, false)
    data.statusline = require('cad').status()
    status(ev.match == 'CadEditDone' and 'done' or 'preview', data)
  end,
})
