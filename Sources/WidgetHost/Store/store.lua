-- Host glue (Lunette): store.group(id) objects with methods over the Swift
-- functions. Each group object is made once per state (or per resetObjects())
-- and known by identity, so a script cannot forge one; it carries the group's
-- handle to the Swift functions, whose errors point at the script's line.
-- Called with the host's function table; returns the `store` module.
local raw = ...
local error, type, setmetatable = error, type, setmetatable
local ids, objects = {}, {}
-- What this epoch put in `ids` and `objects`: each object and its handle,
-- in pairs, listed before they are put there, so that forgetting them is a
-- loop over an array (no `next`: each would be a call into C, four on
-- every call).
local made, nmade = {}, 0
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
-- Each handle's metatable, made once: scripts cannot reach it (`__metatable`
-- is false, and `__index` is reached only through the metatable), so a new
-- call's object may share it. The object itself is new each call.
local group, epoch, seen, metas = raw.group, raw.epoch, 0, {}
-- Granted ids' handles, as `group` gave them: a handle stands for its group
-- for the binding's life. Used only while a call runs (an odd epoch), when
-- `group` would answer the same (it opens the group's stage for the call,
-- which the methods do too when they find none); at any other time, and for
-- any id not granted, `group` answers, with its error.
local handles = {}
return {
  group = function(id)
    local now = epoch()
    if now ~= seen then
      -- Emptied in place, not made anew: no tables to allocate and collect
      -- on every call. A call may be ended at any instruction, this loop's
      -- too: an entry already forgotten (nil) is skipped the next time, so
      -- the loop can always run again from the start. (A listed key a call
      -- ended by a limit never put in `ids` or `objects` is set to nil there
      -- all the same, which is harmless.)
      for i = 1, nmade, 2 do
        local object, handle = made[i], made[i + 1]
        if object ~= nil then ids[object] = nil end
        if handle ~= nil then objects[handle] = nil end
        made[i], made[i + 1] = nil, nil
      end
      nmade = 0
      seen = now
    end
    local handle = now % 2 == 1 and handles[id] or nil
    local canonical
    if handle == nil then
      handle, canonical = group(id)
      if handle == nil then error(canonical, 2) end
    end
    local object = objects[handle]
    if object == nil then
      local meta = metas[handle]
      if meta == nil then
        -- The methods sit in the object's own index table (one lookup per
        -- call), made by one constructor at its final size (`names` above).
        local m = methods
        local index = { id = canonical, get = m.get, set = m.set, remove = m.remove, keys = m.keys,
                        update = m.update, readFile = m.readFile, writeFile = m.writeFile,
                        removeFile = m.removeFile, files = m.files }
        meta = { __index = index, __newindex = readonly, __metatable = false }
        metas[handle] = meta
      end
      object = setmetatable({}, meta)
      -- Listed first: if a limit ends the call in between, what was put in
      -- the tables is still forgotten with the epoch.
      made[nmade + 1], made[nmade + 2] = object, handle
      nmade = nmade + 2
      ids[object], objects[handle] = handle, object
    end
    -- Known only once its metatable is made (a call ended by a limit in
    -- between leaves the id unknown, not known without one).
    if canonical then handles[canonical] = handle end
    return object
  end,
}
