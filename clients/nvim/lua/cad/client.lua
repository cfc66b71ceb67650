--- cad.client: starts or reuses the `cad-lsp` client for a buffer (one client per project root)
--- and installs the client-side `cad.applyEdit` command used by the server's code actions.

local compat = require('cad.compat')
local config = require('cad.config')

local M = {}

--- Client-side handler for `cad.applyEdit` (code actions). Client-side commands take precedence
--- over server execution, so this handler must itself forward to the server.
--- Arguments `[{uri, range?}]` (no instruction): prompt for one, then run the edit.
--- Arguments `[{uri, instruction, range?}]`: run the edit directly.
--- @param command lsp.Command
--- @param ctx table handler context (bufnr, client_id)
local function apply_edit_command(command, ctx)
  local args = vim.deepcopy((command.arguments or {})[1] or {})
  local bufnr = args.uri and vim.uri_to_bufnr(args.uri) or ctx.bufnr
  local run = function(instruction)
    if not instruction or vim.trim(instruction) == '' then
      return
    end
    args.instruction = vim.trim(instruction)
    -- Start after the prompt has closed (vim.ui.select/input leave the message area scrolled).
    vim.schedule(function()
      require('cad.request').run(ctx.client_id, bufnr, 'cad.applyEdit', args)
    end)
  end
  if args.instruction and vim.trim(args.instruction) ~= '' then
    run(args.instruction)
  else
    vim.ui.input({ prompt = 'Edit instruction: ' }, run)
  end
end

--- `window/showMessage`: a notice about a running edit waits for that edit's result message
--- (one message per result); anything else goes to Neovim's default handler.
local function show_message(err, params, ctx, cfg)
  if params and require('cad.request').hold_server_message(ctx.client_id, params) then
    return vim.NIL
  end
  return vim.lsp.handlers['window/showMessage'](err, params, ctx, cfg)
end

--- @param bufnr integer
--- @return vim.lsp.Client?
function M.get(bufnr)
  return vim.lsp.get_clients({ bufnr = bufnr, name = config.get().name })[1]
end

--- Also register the handler globally (`vim.lsp.commands`), for code-action pickers that only
--- look there; the per-client entry in `commands` below is the one Neovim itself uses.
local function register_global_command()
  if vim.lsp.commands['cad.applyEdit'] == nil then
    vim.lsp.commands['cad.applyEdit'] = apply_edit_command
  end
end

--- Start (or reuse) the client for `bufnr` and attach it.
--- @param bufnr integer
--- @return integer? client_id
function M.start(bufnr)
  local cfg = config.get()
  register_global_command()
  -- An empty Lua table would be sent as a JSON array; servers expect an object.
  local settings = next(cfg.settings) and vim.deepcopy(cfg.settings) or vim.empty_dict()
  return vim.lsp.start({
    name = cfg.name,
    cmd = cfg.cmd,
    cmd_env = cfg.cmd_env,
    root_dir = compat.root_dir(bufnr, cfg.root_markers),
    init_options = settings,
    -- Answers workspace/configuration for section "cad".
    settings = { cad = settings },
    commands = { ['cad.applyEdit'] = apply_edit_command },
    handlers = { ['window/showMessage'] = show_message },
    on_exit = function(code, signal)
      if code ~= 0 then
        vim.schedule(function()
          vim.notify(
            ('cad: language server `%s` exited with code %d (signal %d); see :checkhealth vim.lsp and %s'):format(
              table.concat(cfg.cmd, ' '),
              code,
              signal,
              vim.lsp.get_log_path()
            ),
            vim.log.levels.ERROR
          )
        end)
      end
    end,
  }, { bufnr = bufnr })
end

--- Call `fn(client)` once the client for `bufnr` is initialized and attached, starting it if needed.
--- @param bufnr integer
--- @param fn fun(client: vim.lsp.Client)
function M.with_client(bufnr, fn)
  local client = M.get(bufnr)
  if client and client.initialized then
    fn(client)
    return
  end
  local id = client and client.id or M.start(bufnr)
  if not id then
    vim.notify(
      ('cad: could not start the language server `%s`; is it installed and on $PATH? (setup({cmd = ...}))'):format(
        table.concat(config.get().cmd, ' ')
      ),
      vim.log.levels.ERROR
    )
    return
  end
  client = vim.lsp.get_client_by_id(id)
  if client and client.initialized and vim.lsp.buf_is_attached(bufnr, id) then
    fn(client)
    return
  end
  vim.api.nvim_create_autocmd('LspAttach', {
    buffer = bufnr,
    callback = function(ev)
      if ev.data.client_id ~= id then
        return false
      end
      fn(assert(vim.lsp.get_client_by_id(id)))
      return true -- delete this autocmd
    end,
  })
end

return M
