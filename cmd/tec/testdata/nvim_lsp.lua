-- Drives Neovim (0.7 or later) headless as a user would: open a .te file,
-- attach `tec lsp` to it, wait for the diagnostics, ask for a hover, and
-- write what the editor received as JSON to $OUT.
-- Environment: TEC (the tec binary), TE_FILE (the file), HOVER_AT (text at
-- whose first occurrence to hover), OUT (the result file).
local tec, file, needle, out = os.getenv('TEC'), os.getenv('TE_FILE'), os.getenv('HOVER_AT'), os.getenv('OUT')

local function finish(result)
  local f = assert(io.open(out, 'w'))
  f:write(vim.fn.json_encode(result))
  f:close()
  vim.cmd('qall!')
end

vim.cmd('edit ' .. vim.fn.fnameescape(file))
local buf = vim.api.nvim_get_current_buf()
vim.bo[buf].filetype = 'te'
local client_id = vim.lsp.start_client({
  name = 'tec',
  cmd = { tec, 'lsp' },
  root_dir = vim.fn.fnamemodify(file, ':p:h'),
})
if not client_id then
  finish({ error = 'vim.lsp.start_client failed' })
  return
end
vim.lsp.buf_attach_client(buf, client_id)

local got = vim.wait(20000, function() return #vim.diagnostic.get(buf) > 0 end, 50)
if not got then
  finish({ error = 'no diagnostics in 20s' })
  return
end
local diagnostics = {}
for _, d in ipairs(vim.diagnostic.get(buf)) do
  table.insert(diagnostics, { lnum = d.lnum, col = d.col, message = d.message, code = d.code, severity = d.severity })
end

-- The position of the first occurrence of needle, 0-based.
local line, col = nil, nil
for i, text in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
  local s = string.find(text, needle, 1, true)
  if s then
    line, col = i - 1, s - 1
    break
  end
end
local hover = vim.NIL
if line then
  local params = { textDocument = { uri = vim.uri_from_bufnr(buf) }, position = { line = line, character = col } }
  local responses = vim.lsp.buf_request_sync(buf, 'textDocument/hover', params, 10000) or {}
  for _, r in pairs(responses) do
    if r.result and r.result.contents then
      hover = r.result.contents.value
    end
  end
end
vim.lsp.stop_client(client_id)
finish({ diagnostics = diagnostics, hover = hover })
