--- cad.compat: the few Neovim API differences between 0.10 and >= 0.11 that the plugin touches.
---
--- 0.11 turned LSP client functions into methods (`client:request(...)`) and changed the
--- signature of `vim.str_utfindex`. Everything version-dependent lives here.

local M = {}

M.has_011 = vim.fn.has('nvim-0.11') == 1

--- Call a method of an LSP client object in the style the running Neovim expects.
--- @param client vim.lsp.Client
--- @param name string method name: 'request', 'notify', 'cancel_request', ...
function M.call(client, name, ...)
  if M.has_011 then
    return client[name](client, ...)
  end
  return client[name](...)
end

--- Length of `text` in the units of an LSP position encoding.
--- @param text string
--- @param encoding string 'utf-8' | 'utf-16' | 'utf-32'
--- @return integer
function M.encoded_len(text, encoding)
  if encoding == 'utf-8' then
    return #text
  end
  if M.has_011 then
    return vim.str_utfindex(text, encoding)
  end
  local utf32, utf16 = vim.str_utfindex(text)
  return encoding == 'utf-16' and utf16 or utf32
end

--- Project root of a buffer: nearest ancestor holding a marker, else the file's directory.
--- @param bufnr integer
--- @param markers string[]
--- @return string
function M.root_dir(bufnr, markers)
  local name = vim.api.nvim_buf_get_name(bufnr)
  local root = vim.fs.root and vim.fs.root(bufnr, markers) or nil
  if root then
    return root
  end
  if name ~= '' then
    return vim.fs.dirname(name)
  end
  return vim.fn.getcwd()
end

return M
