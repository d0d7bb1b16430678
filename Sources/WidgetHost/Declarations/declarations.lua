-- Host glue (Lunette): the declaration globals of main.lua.
-- Turns each of widget, intent, query, control and activity into a call of
-- declare(what, id, plain fields, names of function fields, functions...);
-- errors point at the script's line. An activity's updater gets its
-- activity as the `activities` object (with update and finish), not the
-- plain table the host passes. Called with the host's function table.
local raw = ...
local declare, type, pairs, rawget, error, unpack = raw.declare, type, pairs, rawget, error, table.unpack
local function live(updater)
  return function(activity, event)
    local object = activities and type(activity) == "table" and activities.get(activity.id)
    return updater(object or activity, event)
  end
end
local function declarer(what, key)
  return function(t)
    if type(t) ~= "table" then
      error(what .. " expects a table: " .. what .. " { ... }, got " .. type(t), 2)
    end
    local plain, names, fns = {}, {}, {}
    for k, v in pairs(t) do
      if type(v) == "function" then
        if what == "activity" and k == "updater" then v = live(v) end
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
