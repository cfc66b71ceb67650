--- cad.preview: shows a unified diff from `cad.previewEdit` in a scratch buffer (filetype diff)
--- and applies it on request: `a` in the preview runs `cad.applyPreview`, which applies the
--- program the preview computed (no second decode; rebased if you typed elsewhere meanwhile).

local config = require('cad.config')

local M = {}

local seq = 0

--- Open `diff` in a new scratch window; `q` closes it, `a` applies it (when the server kept it).
--- @param diff string unified diff text
--- @param source_bufnr integer the buffer the diff is about
--- @param result table? the cad.previewEdit result (previewId)
--- @param client_id integer? the client that computed it
--- @return integer bufnr of the preview buffer
function M.open(diff, source_bufnr, result, client_id)
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
  local preview_id = type(result) == 'table' and result.previewId or nil
  if preview_id and client_id then
    vim.b[buf].cad_preview_id = preview_id
    vim.wo.winbar = 'cad preview — a: apply this edit   q: close'
    vim.keymap.set('n', 'a', function()
      M.apply(buf, source_bufnr, client_id)
    end, { buffer = buf, desc = 'cad: apply the previewed edit (no second decode)' })
  end
  return buf
end

--- Apply the preview shown in `buf` to `source_bufnr` and close the preview.
function M.apply(buf, source_bufnr, client_id)
  local preview_id = vim.b[buf].cad_preview_id
  if not preview_id then
    return false
  end
  vim.b[buf].cad_preview_id = nil
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    pcall(vim.api.nvim_win_close, win, false)
  end
  return require('cad.request').run(client_id, source_bufnr, 'cad.applyPreview', {
    uri = vim.uri_from_bufnr(source_bufnr),
    previewId = preview_id,
  })
end

return M
