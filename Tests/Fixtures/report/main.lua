-- A ticker whose entry changes every 5 minutes: the report page's fixture
-- (Tests/browser/report_test.py). It fails while the app's feed is down.
local quote = require("util.quote")
local GROUP = "group.com.example.ticker"

widget {
  kind = "Ticker", families = { "systemSmall", "systemMedium" },
  placeholder = function() return { symbol = "—", price = 0 } end,
  timeline = function(ctx)
    local group = store.group(GROUP)
    local symbol = quote.read(group)
    local now = clock.now()
    local start = now - now % 300
    local entries = {}
    for i = 0, 11 do
      local t = start + i * 300
      entries[#entries + 1] = { date = t, symbol = symbol, price = quote.price(symbol, t),
        note = "quote " .. (i + 1) .. " of 12 for " .. symbol .. ", one every five minutes from the app's feed" }
    end
    -- After the tap, the entries come newest first: the host sorts them and warns (rule T5).
    if group:get("refreshed") then
      for i = 1, #entries // 2 do entries[i], entries[#entries + 1 - i] = entries[#entries + 1 - i], entries[i] end
    end
    log.info("read " .. symbol .. ", " .. #entries .. " entries")
    return { entries = entries, policy = "atEnd" }
  end,
}

intent {
  id = "Refresh", title = "Refresh quotes",
  perform = function(params, ctx)
    store.group(GROUP):set("refreshed", clock.now())
    return { dialog = "Refreshed" }
  end,
}
