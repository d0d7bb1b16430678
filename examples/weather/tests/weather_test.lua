-- Tests of the hourly weather widget (run with `lunette test examples/weather`).
local GROUP = "group.com.example.weather"

test("without a forecast it says so and looks again in an hour", function(t)
  t.at("2026-11-21T09:00:00Z")
  local timeline = t.timeline("HourlyWeather")
  t.eq(timeline.entries[1].sky, "unknown")
  t.contains(timeline.entries[1].note, "Open the app")
  t.eq(timeline.policy.after - t.now(), 3600)
end)

test("one entry per hour ahead, then atEnd", function(t)
  t.at("2026-11-21T09:00:00Z")
  local now = t.now()
  t.store(GROUP, { forecast = { place = "Lyon", hours = {
    { t = now, temp = 11, sky = "cloudy" },
    { t = now + 3600, temp = 13, sky = "sunny" },
    { t = now + 7200, temp = 14, sky = "sunny" },
  } } })
  local timeline = t.timeline("HourlyWeather")
  t.eq(#timeline.entries, 3)
  t.eq(timeline.entries[2].temp, 13)
  t.eq(timeline.policy, "atEnd")
end)

test("an old forecast is out of date", function(t)
  t.at("2026-11-21T09:00:00Z")
  t.store(GROUP, { forecast = { place = "Lyon", hours = { { t = t.now() - 7200, temp = 5, sky = "rain" } } } })
  t.eq(t.timeline("HourlyWeather").entries[1].note, "Forecast out of date")
end)
