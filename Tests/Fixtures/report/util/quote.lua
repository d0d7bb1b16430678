-- Prices of the next hour, one every 5 minutes, from the app's feed.
local M = {}

function M.read(group)
  if group:get("feed") == "down" then
    error("quote feed is down (the app wrote feed = \"down\")")
  end
  return group:get("symbol") or "LUN"
end

function M.price(symbol, t)
  local step = math.floor(t / 300)
  return 100 + (step * 37 + #symbol * 11) % 23 + ((step * 13) % 10) / 10
end

return M
