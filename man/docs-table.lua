-- A pandoc filter for the manual pages: a Div such as
--   ::: {.docs-table file="docs/settings.md" header="flag / TOML key" term="flag"}
--   :::
-- is replaced by the table of that page whose first header cell reads `header`, as a definition
-- list (what man pages use): each row's term, then the other cells under their headers. So the
-- settings and commands of the manual pages are the rows of docs/settings.md, which a unit test
-- holds to the gate's own table of settings: one source, never two copies to keep in step.
--
-- term: "flag" (the row's first code span: `--blocklist`), "key" (its second: `blocklist`), or
-- "cell" (the whole first cell). The source root comes from the metadata field `source-root`.
-- Links become their text (a man page cannot follow a Markdown link).

local stringify = pandoc.utils.stringify

local function unlink(blocks)
  return pandoc.walk_block(pandoc.Div(blocks), {
    Link = function(link) return link.content end,
  }).content
end

local function cell_blocks(cell)
  return cell.contents or cell
end

local function code_spans(blocks)
  local spans = {}
  pandoc.walk_block(pandoc.Div(blocks), {
    Code = function(code) table.insert(spans, code) end,
  })
  return spans
end

local function read_table(path, header)
  local file = io.open(path, "r")
  if not file then
    error("docs-table: cannot read " .. path)
  end
  local document = pandoc.read(file:read("a"), "markdown")
  file:close()
  for _, block in ipairs(document.blocks) do
    if block.t == "Table" then
      local heads = block.head.rows[1].cells
      if stringify(cell_blocks(heads[1])) == header then
        return block
      end
    end
  end
  error("docs-table: no table headed '" .. header .. "' in " .. path)
end

local root = "."

function Meta(meta)
  if meta["source-root"] then
    root = stringify(meta["source-root"])
  end
end

local function as_definitions(div)
  local path = root .. "/" .. div.attributes.file
  local tbl = read_table(path, div.attributes.header)
  local term_kind = div.attributes.term or "cell"
  local heads = tbl.head.rows[1].cells
  local items = {}
  for _, body in ipairs(tbl.bodies) do
    for _, row in ipairs(body.body) do
      local first = cell_blocks(row.cells[1])
      local term
      if term_kind == "cell" then
        term = pandoc.utils.blocks_to_inlines(unlink(first))
      else
        local spans = code_spans(first)
        local span = spans[term_kind == "flag" and 1 or 2]
        if not span then
          error("docs-table: a row without its " .. term_kind .. " in " .. path .. ": " ..
                stringify(first))
        end
        term = {pandoc.Strong({pandoc.Str(span.text)})}
      end
      -- The cells between the first and the last on one line ("variable: X; default: D; ..."),
      -- the key's flag first when the term is the key; the last cell, the meaning, below.
      local facts = {}
      local function add_fact(label, inlines)
        if #facts > 0 then
          table.insert(facts, pandoc.Str(";"))
          table.insert(facts, pandoc.Space())
        end
        table.insert(facts, pandoc.Emph({pandoc.Str(label .. ":")}))
        table.insert(facts, pandoc.Space())
        for _, inline in ipairs(inlines) do table.insert(facts, inline) end
      end
      if term_kind == "key" then
        add_fact("flag", {pandoc.Code(code_spans(first)[1].text)})
      end
      for i = 2, #row.cells - 1 do
        add_fact(stringify(cell_blocks(heads[i])),
                 pandoc.utils.blocks_to_inlines(unlink(cell_blocks(row.cells[i]))))
      end
      local meaning = pandoc.utils.blocks_to_inlines(unlink(cell_blocks(row.cells[#row.cells])))
      local details = {pandoc.Para(meaning)}
      if #facts > 0 then
        table.insert(details, 1, pandoc.Para(facts))
      end
      table.insert(items, {term, {details}})
    end
  end
  return pandoc.DefinitionList(items)
end

function Div(div)
  if div.classes:includes("docs-table") then
    return as_definitions(div)
  end
end

return {{Meta = Meta}, {Div = Div}}
