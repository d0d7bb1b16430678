-- Tests of the delivery bundle (run with `lunette test examples/delivery`).

test("with no order the widget shows only the count delivered", function(t)
  local entry = t.timeline("Order").entries[1]
  t.eq(entry.delivered, 0)
  t.eq(entry.status, nil)
end)

test("ordering starts a Live Activity that the widget shows", function(t)
  t.at("2026-11-21T12:00:00Z")
  local result = t.perform("OrderFood", { restaurant = "Pho House", minutes = 20 })
  t.eq(result.dialog, "Order A-001 placed")
  local entry = t.timeline("Order").entries[1]
  t.eq(entry.title, "Pho House")
  t.eq(entry.status, "placed")
end)

test("orders are numbered", function(t)
  t.perform("OrderFood", {})
  t.eq(t.perform("OrderFood", {}).dialog, "Order A-002 placed")
  t.eq(t.get("group.com.example.delivery", "orders"), 2)
end)

test("pushes move the order along, and delivery ends it", function(t)
  t.at("2026-11-21T12:00:00Z")
  local order = t.activity("Delivery", { orderNumber = "A-1", restaurant = "Noodle Bar" },
                           { status = "placed", eta = t.now() + 1800 })
  local after = t.push(order.id, { status = "picked up", driver = "Sam" })
  t.eq(after.state.status, "picked up")
  t.eq(after.state.driver, "Sam")
  after = t.push(order.id, { status = "delivered" })
  t.eq(after.phase, "ended")
  t.eq(t.get("group.com.example.delivery", "delivered"), 1)
end)

test("the ETA counts down once a minute", function(t)
  t.at("2026-11-21T12:00:00Z")
  local order = t.activity("Delivery", { orderNumber = "A-1", restaurant = "Noodle Bar" },
                           { status = "placed", eta = t.now() + 1800 })
  t.advance("10m")
  t.eq(t.activities()[1].id, order.id)
  t.eq(t.activities()[1].state.minutesLeft, 20)
end)
