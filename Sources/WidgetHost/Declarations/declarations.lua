-- Host glue (Lunette): the declaration globals of main.lua.
-- Turns each of widget, intent, query, control and activity into a call of
-- declare(what, id, plain fields, names of function fields, functions...);
-- errors point at the script's line. Called with the host's function table.
local raw = ...
local declare, type, pairs, rawget, error, unpack = raw.declare, type, pairs, rawget, error, table.unpack
local function declarer(what, key)
  return function(t)
    if type(t) ~= "table" then
      error(what .. " expects a table: " .. what .. " { ... }, got " .. type(t), 2)
    end
    local plain, names, fns = {}, {}, {}
    for k, v in pairs(t) do
      if type(v) == "function" then
        names[#names + 1] = k
        fns[#fns + 1] = v
      else
        plain[k] = v
      end
    end
    return declare(what, rawget(t, key), plain, names, unpack(fns))
  end
end
widget, intent, query, control, activity = declarer("widget", "kind"), declarer("intent", "id"),
  declarer("query", "id"), declarer("control", "kind"), declarer("activity", "type")
