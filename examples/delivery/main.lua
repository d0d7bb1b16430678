-- A food delivery tracked as a Live Activity, from "placed" to "delivered".
--
-- The restaurant's server sends push updates as the order moves on
-- ({ status = "preparing" }, { status = "picked up", driver = "Sam" },
-- { status = "delivered" }); between them the updater counts the ETA down
-- once a minute (tick), and marks the order late when it goes stale.
-- The app starts the activity when the order is placed (the OrderFood
-- intent, or the app in the foreground), and a widget shows the order.

local GROUP = "group.com.example.delivery"

activity {
  type = "Delivery",
  attributes = { orderNumber = "string", restaurant = "string" },   -- fixed at start
  state = { status = "string", eta = "date", driver = "string?", minutesLeft = "int?", late = "bool?" },
  tick = 60,
  updater = function(activity, event)
    local state = activity.content.state
    local new = { status = state.status, eta = state.eta, driver = state.driver, late = state.late, minutesLeft = state.minutesLeft }
    if event.kind == "push" then
      local p = event.payload
      new.status = p.status or new.status
      new.driver = p.driver or new.driver
      if p.etaMinutes then new.eta = clock.add(event.time, { minutes = p.etaMinutes }) end
      if new.status == "delivered" then
        new.minutesLeft = 0
        activity:finish(new, { dismissal = { after = clock.add(event.time, { minutes = 15 }) } })
        store.group(GROUP):update("delivered", function(n) return (n or 0) + 1 end)
        return
      end
      local alert = p.driver and { title = "On its way", body = p.driver .. " picked up your order" } or nil
      -- A new ETA moves the stale date with it: ten minutes' grace.
      activity:update(new, { staleDate = clock.add(new.eta, { minutes = 10 }), alert = alert })
    elseif event.kind == "tick" then
      new.minutesLeft = math.max(0, math.ceil((state.eta - event.time) / 60))
      if new.minutesLeft ~= state.minutesLeft then activity:update(new) end
    elseif event.kind == "stale" then
      new.late = true
      activity:update(new, { relevance = 10 })   -- a late order leads
    elseif event.kind == "event" and event.name == "cancelled" then
      new.status = "cancelled"
      activity:finish(new, { dismissal = "immediate" })
    end
  end,
}

-- The app's "Order" button: places the order and starts its activity.
intent {
  id = "OrderFood", title = "Order Food",
  parameters = {
    { name = "restaurant", type = "string", default = "Noodle Bar" },
    { name = "minutes", type = "int", default = 35 },
  },
  perform = function(params)
    local g = store.group(GROUP)
    local number = g:update("orders", function(n) return (n or 0) + 1 end)
    local eta = clock.add(clock.now(), { minutes = params.minutes })
    local a, err, message = activities.request("Delivery",
      { orderNumber = string.format("A-%03d", number), restaurant = params.restaurant },
      { status = "placed", eta = eta },
      { staleDate = clock.add(eta, { minutes = 10 }), relevance = 1 })
    if not a then return { dialog = "Cannot track the order: " .. err, message = message } end
    reload.timelines("Order")
    return { dialog = "Order " .. a.attributes.orderNumber .. " placed", activity = a.id }
  end,
}

-- A small widget: the order that leads, and how many were delivered. The
-- activity itself shows the live status; the widget refreshes hourly.
widget {
  kind = "Order", displayName = "Your Order", families = { "systemSmall" },
  placeholder = function() return { title = "Noodle Bar", status = "on its way", minutes = 12 } end,
  timeline = function()
    local now = clock.now()
    local lead = activities.list("Delivery")[1]
    local entry = { date = now, delivered = store.group(GROUP):get("delivered") or 0 }
    if lead then
      entry.title = lead.attributes.restaurant
      entry.status = lead.content.state.status
      entry.minutes = lead.content.state.minutesLeft
    end
    return { entries = { entry }, policy = { after = clock.add(now, { hours = 1 }) } }
  end,
}
