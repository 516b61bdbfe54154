local out = assert(io.open(vim.env.CUDALINT_NVIM_OUT, "w"))
local function log(...) out:write(table.concat({...}, " "), "\n"); out:flush() end
-- `nvim --headless` runs this with the file to lint as its buffer; CUDALINT_PYTHON runs the server,
-- CUDALINT_NVIM_OUT receives what the editor saw (one line per event).
local python = vim.env.CUDALINT_PYTHON
local client_id = vim.lsp.start_client({
  name = "cudalint",
  cmd = { python, "-m", "cudalint", "server" },
  root_dir = vim.fn.getcwd(),
  flags = { debounce_text_changes = 0 },
})
vim.lsp.buf_attach_client(0, client_id)
local function ours()
  local found = {}
  for _, d in ipairs(vim.diagnostic.get(0)) do
    if d.source == "cudalint" then table.insert(found, d) end
  end
  return found
end
local ok = vim.wait(60000, function() return #ours() > 0 end, 50)
for _, d in ipairs(ours()) do
  log("diagnostic", tostring(d.lnum + 1), tostring(d.col + 1), tostring(d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)), d.message)
end
if not ok then log("timeout waiting for a diagnostic") end
-- put the write before the import, as the rule's doc says
vim.api.nvim_buf_set_lines(0, 0, -1, false, {
  "import os",
  "",
  'os.environ["CUDA_VISIBLE_DEVICES"] = "1"',
  "",
  "import torch",
  "",
  "torch.cuda.is_available()",
})
local cleared = vim.wait(60000, function() return #ours() == 0 end, 50)
log("cleared", tostring(cleared))
out:close()
vim.lsp.stop_client(client_id, true)
vim.cmd("qa!")
