-- Host glue (Lunette): store.group(id) objects with methods over the Swift
-- functions. Each granted group's object is made once per state and known
-- by identity, so a script cannot forge one; it carries the group's handle
-- to the Swift functions, whose errors point at the script's line.
-- An object outlives the call that made it, and later calls are given the
-- same one, so it can hold nothing: its metatable refuses writes and is out
-- of scripts' reach (`__metatable`), and `raw.seal` makes `rawset` refuse it
-- as it refuses the library views. A call cannot tell it from a new object
-- (nothing else of a call reaches the next), and none is made, hashed into
-- the tables below and collected on every call.
-- Called with the host's function table; returns the `store` module.
local raw = ...
local error, type, setmetatable = error, type, setmetatable
-- `ids` holds its objects weakly: one a call ended by a limit left half
-- made (known to `ids`, not yet to `objects`) is collected.
local ids, objects = setmetatable({}, { __mode = "k" }), {}
local methods = {}
local names = { "get", "set", "remove", "keys", "update", "readFile", "writeFile", "removeFile", "files" }
for i = 1, #names do
  local name, f = names[i], raw[names[i]]
  methods[name] = function(self, ...)
    local handle = ids[self]
    if handle == nil then
      error("bad argument #1 to '" .. name .. "' (store group expected, got " .. type(self) ..
            "; call it as g:" .. name .. "(...))", 2)
    end
    return f(handle, ...)
  end
end
local function readonly() error("store group objects are read-only", 2) end
local group, running, seal = raw.group, raw.running, raw.seal
-- Granted ids' handles, as `group` gave them: a handle stands for its group
-- for the binding's life. Used only while a call runs (`running()`), when
-- `group` would answer the same (it opens the group's stage for the call,
-- which the methods do too when they find none); at any other time, and for
-- any id not granted, `group` answers, with its error.
local handles = {}
return {
  group = function(id)
    local handle = running() and handles[id] or nil
    local canonical
    if handle == nil then
      handle, canonical = group(id)
      if handle == nil then error(canonical, 2) end
    end
    local object = objects[handle]
    if object == nil then
      -- The methods sit in the object's own index table (one lookup per
      -- call), made by one constructor at its final size (`names` above).
      local m = methods
      local index = { id = canonical, get = m.get, set = m.set, remove = m.remove, keys = m.keys,
                      update = m.update, readFile = m.readFile, writeFile = m.writeFile,
                      removeFile = m.removeFile, files = m.files }
      object = setmetatable({}, { __index = index, __newindex = readonly, __metatable = false })
      seal(object)
      -- Known by its handle only once it works: a call ended by a limit in
      -- between leaves an object nothing returns, which the next call
      -- makes again.
      ids[object] = handle
      objects[handle] = object
    end
    -- Known only once its object is made (a call ended by a limit in
    -- between leaves the id unknown, not known without one).
    if canonical then handles[canonical] = handle end
    return object
  end,
}
