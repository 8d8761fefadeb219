-- Drives Neovim (0.7 or later) headless as a user would: open a .te file,
-- which the init.lua (docs/editors.md's snippet) gives the te filetype and
-- attaches `tec lsp` to, wait for the diagnostics, ask for a hover, and
-- write what the editor received as JSON to $OUT.
-- Environment: TE_FILE (the file), HOVER_AT (text at whose first occurrence
-- to hover), OUT (the result file); tec is on PATH.
local file, needle, out = os.getenv('TE_FILE'), os.getenv('HOVER_AT'), os.getenv('OUT')

local function finish(result)
  local f = assert(io.open(out, 'w'))
  f:write(vim.fn.json_encode(result))
  f:close()
  vim.cmd('qall!')
end

vim.cmd('edit ' .. vim.fn.fnameescape(file))
local buf = vim.api.nvim_get_current_buf()

-- The clients attached to buf, as 0.7 to 0.11 tell them.
local function clients_of(b)
  if vim.lsp.get_clients then
    return vim.lsp.get_clients({ bufnr = b })
  end
  return vim.tbl_values(vim.lsp.buf_get_clients(b))
end

-- The init.lua (docs/editors.md's snippet) attaches tec lsp on opening.
if vim.bo[buf].filetype ~= 'te' then
  finish({ error = 'the init.lua did not set the filetype of ' .. file .. ' (it is "' .. vim.bo[buf].filetype .. '")' })
  return
end
if not vim.wait(10000, function() return #clients_of(buf) > 0 end, 50) then
  finish({ error = 'the init.lua attached no language server to ' .. file })
  return
end
local client_id = clients_of(buf)[1].id

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
