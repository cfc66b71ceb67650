-- Copy-as-Decode: Ex commands. The implementation is loaded on first use (lua/cad/).
if vim.g.loaded_cad then
  return
end
vim.g.loaded_cad = true

if vim.fn.has('nvim-0.10') ~= 1 then
  -- Same single message as require('cad') on old versions (said once, whichever runs first).
  require('cad').setup()
  return
end

vim.api.nvim_create_user_command('CadEdit', function(opts)
  require('cad').command('edit', opts)
end, {
  nargs = '*',
  range = true,
  desc = 'Copy-as-Decode: apply an edit instruction to the buffer or the range',
})

vim.api.nvim_create_user_command('CadPreview', function(opts)
  require('cad').command('preview', opts)
end, {
  nargs = '*',
  range = true,
  desc = 'Copy-as-Decode: show the diff an edit instruction would make',
})

vim.api.nvim_create_user_command('CadPaste', function(opts)
  require('cad').command('paste', opts)
end, {
  nargs = '?',
  range = true,
  desc = 'Copy-as-Decode: apply the text of a register (default: the clipboard) as the instruction',
})

vim.api.nvim_create_user_command('CadCancel', function()
  require('cad').cancel()
end, { nargs = 0, desc = 'Copy-as-Decode: cancel the running edit' })
