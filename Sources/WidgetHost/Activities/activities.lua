-- Host glue (Lunette): the `activities` service. Activities reach scripts
-- as tables { id, type, state, attributes, content = { state, staleDate },
-- relevance } with the methods update and finish. Called with the host's
-- function table; returns the `activities` module.
local raw = ...
local error, type, setmetatable = error, type, setmetatable
local methods = {}
-- One metatable for every activity object, out of scripts' reach
-- (`__metatable`): `methods` lives as long as the state, so a script that
-- could reach it could leave something in it for the next call to find.
local meta = { __index = methods, __metatable = false }
for _, name in ipairs({ "update", "finish" }) do
  local f = raw[name]
  methods[name] = function(self, ...)
    if type(self) ~= "table" or type(self.id) ~= "string" then
      error("bad argument #1 to '" .. name .. "' (activity expected, got " .. type(self) .. "; call it as a:" .. name .. "(...))", 2)
    end
    return setmetatable(f(self.id, ...), meta)
  end
end
local function object(t)
  if t == nil then return nil end
  return setmetatable(t, meta)
end
return {
  request = function(...)
    local t, err, message = raw.request(...)
    if t == nil then return nil, err, message end
    return object(t)
  end,
  get = function(id) return object(raw.get(id)) end,
  list = function(kind)
    local all = raw.list(kind)
    for i = 1, #all do object(all[i]) end
    return all
  end,
  enabled = function() return raw.enabled() end,
}
