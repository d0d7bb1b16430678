-- Host glue (Lunette): require, load and the per-call entry point of a bundle.
-- Runs with the state's own globals as _ENV (where the libraries and host
-- modules live). Each call's globals are a table that reads through to them;
-- _G, load and require work on the call's table. Called with the host's
-- function table (compile, absent, setenv); returns the function that
-- begins a call, the function that returns what a snapshot of main.lua's
-- work starts from, and the one that returns the glue's own objects (which
-- a snapshot leaves alone).
local raw = ...
local setenv, compile, absent = raw.setenv, raw.compile, raw.absent
local base, stock_load, select, setmetatable, error, pcall, host_require =
  _ENV, load, select, setmetatable, error, pcall, require
local globals_meta = { __index = base, __metatable = false }
local current, loaded, loading, compiled = nil, {}, {}, {}

-- load without an environment loads into the call's globals.
base.load = function(...)
  if select("#", ...) >= 4 then return stock_load(...) end
  local chunk, name, mode = ...
  return stock_load(chunk, name, mode, current)
end

-- require: the bundle's module (util.format is util/format.lua), run
-- once per call in the call's globals; else a host module.
base.require = function(name)
  if type(name) ~= "string" then
    error("bad argument #1 to 'require' (string expected, got " .. type(name) .. ")", 2)
  end
  local value = loaded[name]
  if value ~= nil then return value end
  local f = compiled[name]
  if f == nil then
    -- The module's chunk, compiled by the host into compiled[name].
    local found, message = compile(compiled, name, name)
    if found == nil then error(message, 0) end
    if not found then
      local why = absent(name)
      if why then error("module '" .. name .. "' is not available: " .. why, 2) end
      local ok, host = pcall(host_require, name)
      if ok then return host end
      error("module '" .. name .. "' not found: no " .. name:gsub("%.", "/") .. ".lua in the bundle, and no host module of that name", 2)
    end
    f = compiled[name]
  end
  if loading[name] then error("module '" .. name .. "' is required while it loads (a require cycle)", 2) end
  loading[name] = true
  setenv(f, current)
  value = f(name)
  loading[name] = nil
  if value == nil then value = true end
  loaded[name] = value
  return value
end

local holder = {}
local found, message = compile(holder, "main")
if not found then error(message, 0) end
local main = holder.main

-- A call begins: new globals, modules to load again, main.lua.
local function begin()
  current = setmetatable({}, globals_meta)
  current._G = current
  loaded, loading = {}, {}
  setenv(main, current)
  return main()
end
-- The call's globals and modules: with the declared functions, all that
-- main.lua's work can be reached from.
local function roots() return current, loaded, loading end
local function host_objects() return globals_meta, raw end
return begin, roots, host_objects
