-- Tests of the wallpaper widgets (run with `lunette test examples/wallpaper`).

test("the clock shows the next twelve hours", function(t)
  t.at("2026-11-21T09:20:00Z")
  local timeline = t.timeline("Clock")
  t.eq(#timeline.entries, 12)
  t.eq(timeline.entries[1].time, "09:00")
  t.eq(timeline.entries[1].date, t.now())   -- the current hour starts now
  t.eq(timeline.entries[12].time, "20:00")
end)

test("the daily pick changes at midnight", function(t)
  t.at("2026-11-21T09:00:00Z")
  local today = t.timeline("DailyPick", { family = "systemMedium" })
  t.eq(today.policy.after, t.now() + 15 * 3600)   -- the next midnight (UTC)
  t.ok(today.entries[1].name, "a pick has a name")
  t.advance("15h")
  t.ok(t.timeline("DailyPick", { family = "systemMedium" }).entries[1].name ~= today.entries[1].name, "a new pick the next day")
end)

test("the calendar shows the day", function(t)
  t.at("2026-11-21T09:00:00Z")
  t.eq(t.timeline("Calendar").entries[1], { date = t.now(), weekday = "Saturday", day = 21, month = "Nov" })
end)
