-- The task-count widget: how many tasks are left, read from the app's store,
-- with a "complete" button (the CompleteTask intent) and a Focus Mode
-- toggle in Control Center.
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

-- The app's tasks as entities, for intents that name one (rule I4).
query {
  id = "Tasks",
  suggested = function()
    local out = {}
    for i, task in ipairs(store.group(GROUP):get("tasks") or {}) do
      if not task.done then out[#out + 1] = { id = tostring(i), title = task.title } end
    end
    return out
  end,
  entities = function(ids)
    local tasks, out = store.group(GROUP):get("tasks") or {}, {}
    for _, id in ipairs(ids) do
      local task = tasks[tonumber(id) or 0]
      if task then out[#out + 1] = { id = id, title = task.title, done = task.done } end
    end
    return out
  end,
}

-- The widget's "complete" button: marks a task done (the first open one
-- when no task is named). After it returns, the host reloads the widget.
intent {
  id = "CompleteTask", title = "Complete Task",
  parameters = { { name = "task", type = "entity", query = "Tasks", optional = true } },
  perform = function(params, ctx)
    local done
    store.group(GROUP):update("tasks", function(tasks)
      tasks = tasks or {}
      for i, task in ipairs(tasks) do
        if not task.done and (params.task == nil or params.task.id == tostring(i)) then
          task.done, done = true, task.title
          break
        end
      end
      return tasks
    end)
    return { dialog = done and ("Done: " .. done) or "Nothing left to do" }
  end,
}

-- Focus mode, a toggle in Control Center: its action gets the new value.
intent {
  id = "SetFocus", title = "Set Focus Mode",
  parameters = { { name = "value", type = "bool" } },
  perform = function(params)
    store.group(GROUP):set("focus", params.value)
    reload.timelines("TaskCount")
  end,
}

control {
  kind = "FocusMode", type = "toggle", displayName = "Focus Mode",
  preview = function() return false end,
  value = function(ctx) return store.group(GROUP):get("focus") == true end,
  action = "SetFocus",
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
    local g = store.group(GROUP)
    local n = remaining(g:get("tasks") or {}, config.filter, now)
    return {
      entries = { { date = now, remaining = n, title = fmt.title(config.filter), label = fmt.count(n),
                    focus = g:get("focus") == true, button = "CompleteTask" } },
      policy = { after = clock.add(now, { minutes = 30 }) },
    }
  end,
}
