-- Text helpers for the task widget.
local fmt = {}

local titles = { today = "Today", week = "This Week", all = "All Tasks" }

function fmt.title(filter)
  return titles[filter] or "Tasks"
end

function fmt.count(n)
  if n == 0 then return "All done" end
  if n == 1 then return "1 task left" end
  return n .. " tasks left"
end

return fmt
