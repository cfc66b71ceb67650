--- cad.range: turns a 1-based inclusive line range of a buffer into an LSP Range.
---
--- The range covers whole lines: from column 0 of `line1` to the end of `line2`, so the server
--- edits exactly lines line1..line2 whichever end convention it uses.

local compat = require('cad.compat')

local M = {}

--- @param bufnr integer
--- @param line1 integer first line, 1-based
--- @param line2 integer last line, 1-based, inclusive
--- @param encoding string the client's offset encoding
--- @return lsp.Range
function M.from_lines(bufnr, line1, line2, encoding)
  local count = vim.api.nvim_buf_line_count(bufnr)
  if line1 < 1 or line2 < line1 or line2 > count then
    error(
      ('cad: line range %d,%d is outside buffer %d (1..%d lines)'):format(line1, line2, bufnr, count),
      0
    )
  end
  local last = vim.api.nvim_buf_get_lines(bufnr, line2 - 1, line2, true)[1]
  return {
    start = { line = line1 - 1, character = 0 },
    ['end'] = { line = line2 - 1, character = compat.encoded_len(last, encoding or 'utf-16') },
  }
end

return M
