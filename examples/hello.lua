-- A first Lunette script: `lunette eval examples/hello.lua`.
-- It prints a line and returns a widget entry as plain data.
local function greeting(name)
  return ("Hello, %s!"):format(name)
end

print(greeting("Lunette"), _VERSION)

local now = 1795254600 -- 2026-11-21T09:50:00Z
return {
  date = now,
  title = greeting("widget"),
  remaining = 3,
  tags = { "home", "today" },
}
