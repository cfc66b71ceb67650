--- cad.preview: shows a unified diff from `cad.previewEdit` in a scratch buffer (filetype diff).

local config = require('cad.config')

local M = {}

local seq = 0

--- Open `diff` in a new scratch window; `q` closes it.
--- @param diff string unified diff text
--- @param source_bufnr integer the buffer the diff is about (for the name)
--- @return integer bufnr of the preview buffer
function M.open(diff, source_bufnr)
  seq = seq + 1
  local lines = vim.split(diff, '\n', { plain = true })
  if lines[#lines] == '' then
    table.remove(lines)
  end
  local buf = vim.api.nvim_create_buf(false, true)
  local source = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(source_bufnr), ':t')
  vim.api.nvim_buf_set_name(buf, ('cad://preview/%d/%s'):format(seq, source ~= '' and source or 'buffer'))
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = 'diff'
  vim.cmd(config.get().preview_split)
  vim.api.nvim_win_set_buf(0, buf)
  vim.keymap.set('n', 'q', '<cmd>close<cr>', { buffer = buf, desc = 'cad: close the preview' })
  return buf
end

return M
