-- Three wallpaper widgets whose reload policies fit the refresh budget:
--   Clock      one entry per hour for the next 12 hours, reloads at the end
--   DailyPick  a wallpaper a day, reloads at the next midnight
--   Calendar   today's date, reloads at the next midnight
-- The configuration's cadence "every15Minutes" makes each of them reload
-- every 15 minutes instead: the budget (40 a day) runs out in the
-- afternoon. Compare: lunette simulate examples/wallpaper --scenario
-- examples/wallpaper/scenario-15min.json
local picks = require("picks")

local WEEKDAYS = { "Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday" }
local MONTHS = { "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" }

intent {
  id = "WallpaperConfig", title = "Wallpaper Widget", configuration = true,
  parameters = {
    { name = "cadence", type = "enum", values = { "budgetAware", "every15Minutes" }, default = "budgetAware" },
  },
}

-- The policy: the budget-aware one, or every 15 minutes.
local function policy(config, now, budgetAware)
  if config.cadence == "every15Minutes" then
    return { after = clock.add(now, { minutes = 15 }) }
  end
  return budgetAware
end

local function pickFor(t)
  local c = clock.components(t)
  local day = math.floor(clock.startOfDay(t) / 86400)
  return picks[day % #picks + 1], c
end

widget {
  kind = "Clock", displayName = "Hour Clock", description = "The hour, in large type",
  families = { "systemSmall", "accessoryCircular" },
  configuration = "WallpaperConfig",
  placeholder = function(ctx) return { time = "09:00" } end,
  timeline = function(ctx, config)
    local now = clock.now()
    local hour = clock.add(clock.startOfDay(now), { hours = clock.components(now).hour })
    local entries = {}
    for i = 0, 11 do
      local t = clock.add(hour, { hours = i })
      local c = clock.components(t)
      entries[#entries + 1] = { date = math.max(t, now), time = string.format("%02d:00", c.hour) }
    end
    return { entries = entries, policy = policy(config, now, "atEnd") }
  end,
}

widget {
  kind = "DailyPick", displayName = "Daily Wallpaper", description = "A new wallpaper every day",
  families = { "systemMedium", "systemLarge" },
  configuration = "WallpaperConfig",
  placeholder = function(ctx) return { name = picks[1].name, color = picks[1].color } end,
  timeline = function(ctx, config)
    local now = clock.now()
    local pick = pickFor(now)
    return {
      entries = { { date = now, name = pick.name, color = pick.color } },
      policy = policy(config, now, { after = clock.nextMidnight(now) }),
    }
  end,
}

widget {
  kind = "Calendar", displayName = "Today", description = "The date on your wallpaper",
  families = { "systemSmall", "accessoryRectangular" },
  configuration = "WallpaperConfig",
  placeholder = function(ctx) return { weekday = "Monday", day = 1, month = "Jan" } end,
  timeline = function(ctx, config)
    local now = clock.now()
    local c = clock.components(now)
    return {
      entries = { { date = now, weekday = WEEKDAYS[c.weekday], day = c.day, month = MONTHS[c.month] } },
      policy = policy(config, now, { after = clock.nextMidnight(now) }),
    }
  end,
}
