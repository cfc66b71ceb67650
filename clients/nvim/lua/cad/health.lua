--- cad.health: `:checkhealth cad` — Neovim version, the server command, running clients.

local M = {}

function M.check()
  local health = vim.health
  local config = require('cad.config').get()
  health.start('cad: Copy-as-Decode')
  if vim.fn.has('nvim-0.10') == 1 then
    health.ok('Neovim ' .. tostring(vim.version()))
  else
    health.error('Neovim >= 0.10 is required')
  end
  local exe = config.cmd[1]
  if vim.fn.executable(exe) == 1 then
    health.ok(('server command: %s (%s)'):format(table.concat(config.cmd, ' '), vim.fn.exepath(exe)))
  else
    health.error(
      ('server command `%s` is not executable'):format(exe),
      { 'install the Python package (pip install -e .) or set cmd in require("cad").setup({cmd = {...}})' }
    )
  end
  local clients = vim.lsp.get_clients({ name = config.name })
  if #clients == 0 then
    health.info('no cad client running (it starts on the first matching buffer or :CadEdit)')
  end
  for _, client in ipairs(clients) do
    health.ok(('client %d: root %s, %d buffer(s)'):format(
      client.id,
      client.root_dir or '?',
      vim.tbl_count(client.attached_buffers or {})
    ))
  end
end

return M
