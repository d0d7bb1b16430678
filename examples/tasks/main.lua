-- The task-count widget: how many tasks are left, read from the app's store.
-- The app keeps its tasks under "tasks" in the app group, as an array of
-- { title = "...", done = false, due = <date or nil> }.
local fmt = require("util.fmt")

local GROUP = "group.com.example.tasks"

intent {
  id = "TaskListConfig", title = "Configure Task Widget", configuration = true,
  parameters = {
    { name = "filter", type = "enum", values = { "today", "week", "all" }, default = "today" },
    { name = "showCompleted", type = "bool", default = false },
  },
}

-- Tasks that count for the filter, as of `now`.
local function remaining(tasks, filter, now)
  local limit = nil
  if filter == "today" then limit = clock.nextMidnight(now)
  elseif filter == "week" then limit = clock.add(clock.startOfDay(now), { days = 7 }) end
  local n = 0
  for _, task in ipairs(tasks) do
    if not task.done and (limit == nil or task.due == nil or task.due < limit) then n = n + 1 end
  end
  return n
end

widget {
  kind = "TaskCount",
  displayName = "Task Counter", description = "Remaining tasks",
  families = { "systemSmall", "systemMedium" },
  configuration = "TaskListConfig",

  placeholder = function(ctx)
    return { remaining = 3, title = "Today", label = fmt.count(3) }
  end,

  snapshot = function(ctx, config)
    return { remaining = 2, title = fmt.title(config.filter), label = fmt.count(2) }
  end,

  timeline = function(ctx, config)
    local now = clock.now()
    local tasks = store.group(GROUP):get("tasks") or {}
    local n = remaining(tasks, config.filter, now)
    return {
      entries = { { date = now, remaining = n, title = fmt.title(config.filter), label = fmt.count(n) } },
      policy = { after = clock.add(now, { minutes = 30 }) },
    }
  end,
}
