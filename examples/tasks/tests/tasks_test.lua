-- Tests of the task-count widget (run with `lunette test examples/tasks`).
local GROUP = "group.com.example.tasks"

test("an empty list shows all done", function(t)
  local timeline = t.timeline("TaskCount")
  t.eq(#timeline.entries, 1)
  t.eq(timeline.entries[1].remaining, 0)
  t.eq(timeline.entries[1].label, "All done")
end)

test("open tasks are counted, done ones are not", function(t)
  t.store(GROUP, { tasks = {
    { title = "Buy milk", done = false },
    { title = "Call Anna", done = true },
    { title = "File taxes", done = false },
  } })
  local entry = t.timeline("TaskCount", { config = { filter = "all" } }).entries[1]
  t.eq(entry.remaining, 2)
  t.eq(entry.label, "2 tasks left")
end)

test("the timeline asks for a reload after 30 minutes", function(t)
  t.at("2026-11-21T09:00:00Z")
  local timeline = t.timeline("TaskCount")
  t.eq(timeline.policy.after - t.now(), 30 * 60)
end)

test("the placeholder needs no store", function(t)
  t.eq(t.placeholder("TaskCount").remaining, 3)
end)

test("Complete marks the first open task done and the widget reloads", function(t)
  t.store(GROUP, { tasks = { { title = "Buy milk", done = false }, { title = "Call Anna", done = false } } })
  local result = t.perform("CompleteTask", {}, { from = "TaskCount" })
  t.eq(result, { dialog = "Done: Buy milk" })
  t.eq(t.get(GROUP, "tasks")[1].done, true)
  local reloads = t.reloads(1)
  t.eq(reloads[#reloads].reason, "intent")
  t.eq(t.shown(1).remaining, 1)
end)

test("the widget reloads every 30 minutes through the day", function(t)
  t.at("2026-11-21T09:00:00Z")
  local widget = t.widget("TaskCount")
  t.advance("2h")
  local counted = 0
  for _, reload in ipairs(t.reloads(widget)) do
    if reload.counted then counted = counted + 1 end
  end
  t.eq(counted, 4)
end)

test("Focus Mode toggles", function(t)
  t.eq(t.control("FocusMode"), false)
  t.eq(t.tap("FocusMode"), true)
end)
