-- Hourly weather: one entry per hour from the forecast the app saved,
-- reloading when the last entry has passed (policy atEnd).
-- The app keeps { hours = { { t = <date>, temp = 12, sky = "cloudy" }, ... },
-- place = "Lyon" } under "forecast".
local GROUP = "group.com.example.weather"

widget {
  kind = "HourlyWeather", displayName = "Weather", description = "The next hours",
  families = { "systemSmall", "systemMedium" },
  placeholder = function(ctx) return { place = "Lyon", temp = 12, sky = "cloudy" } end,
  snapshot = function(ctx) return { place = "Lyon", temp = 14, sky = "sunny" } end,
  timeline = function(ctx)
    local now = clock.now()
    local forecast = store.group(GROUP):get("forecast")
    if forecast == nil then
      -- No forecast yet: say so, and look again in an hour.
      return { entries = { { date = now, place = "—", sky = "unknown", note = "Open the app to load the forecast" } },
               policy = { after = clock.add(now, { hours = 1 }) } }
    end
    local entries = {}
    for _, hour in ipairs(forecast.hours) do
      if hour.t + 3600 > now and #entries < 12 then
        entries[#entries + 1] = { date = math.max(hour.t, now), place = forecast.place, temp = hour.temp, sky = hour.sky }
      end
    end
    if #entries == 0 then
      return { entries = { { date = now, place = forecast.place, sky = "unknown", note = "Forecast out of date" } },
               policy = { after = clock.add(now, { hours = 1 }) } }
    end
    -- atEnd only when the last entry is still ahead: a last entry dated now
    -- would make the widget eligible at once, and reload every 5 minutes.
    if entries[#entries].date <= now then
      return { entries = entries, policy = { after = clock.add(now, { hours = 1 }) } }
    end
    return { entries = entries, policy = "atEnd" }
  end,
}
