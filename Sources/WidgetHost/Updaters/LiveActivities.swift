import LuaSandbox
import SharedStore

/// The app's side of a bundle's Live Activities, in one object: the
/// manager (start, update, end, list; A1–A9) over the bundle's app-group
/// store, the updaters that run for pushes, events, ticks and stale dates,
/// and the runtime whose scripts see the same activities. What `lunette
/// activity` and the simulator use; an app embeds it the same way.
///
/// ```swift
/// let live = try LiveActivities(bundle: bundle, services: HostServices(store: store))
/// let order = try live.manager.request(type: "Delivery", attributes: ["orderNumber": "A-1"],
///                                      state: ["status": "placed", "eta": .number(eta)], from: .app).get()
/// try live.updaters.push(order.id, payload: ["status": "picked up"])   // the updater runs
/// try live.updaters.runDue()                                           // ticks, stale dates, throttled pushes
/// ```
public final class LiveActivities {
    public let manager: ActivityManager
    public let updaters: ActivityUpdaters
    /// The bundle's runtime, with `services.activities` set to `manager`.
    public let runtime: WidgetRuntime

    /// The activities of `bundle` in `services.store` (which must be set),
    /// in its first app group; `services.activities` when it is set.
    public init(bundle: ScriptBundle, services: HostServices) throws(ActivityError) {
        guard services.store != nil || services.activities != nil else {
            throw ActivityError(refusal: nil, message: "Live Activities need a store: activities live in the bundle's app group")
        }
        guard !bundle.declarations.activities.isEmpty else {
            throw ActivityError(refusal: nil, message: "bundle \(bundle.manifest.id) declares no activity { }")
        }
        let services = try services.withActivities(of: bundle)
        manager = services.activities!
        runtime = WidgetRuntime(bundle: bundle, services: services)
        updaters = ActivityUpdaters(runtime: runtime, manager: manager)
    }

    /// Reads `json`, an object, as the `attributes` or `state` (`what`) of
    /// an activity of `type`: `date` fields may be ISO 8601 dates or times
    /// from now ("+30m") as well as numbers. Errors name `what` and the field.
    public func table(json: String, what: String, type: String) throws(ActivityError) -> LuaTable {
        let value: StoreValue?
        do { value = try StoreValue(json: json) } catch {
            throw ActivityError(refusal: nil, message: "\(what): \(error.message)")
        }
        guard let value, value.mapValue != nil, case .table(var table) = value.lua else {
            throw ActivityError(refusal: nil, message: "\(what): expected a JSON object of the \(what)'s fields, got \(json)")
        }
        guard let declaration = manager.declarations.first(where: { $0.type == type }) else { return table }
        let schema = what == "attributes" ? declaration.attributes : declaration.state
        for field in schema.fields where field.type == .date {
            guard let text = table[LuaString(field.name)].stringValue else { continue }
            switch Durations.instant(text, after: manager.clock.now(), calendar: runtime.services.calendar) {
            case .success(let t): table[LuaString(field.name)] = ClockBinding.date(t)
            case .failure(let error): throw ActivityError(refusal: nil, message: "\(what).\(field.name): \(error.message)")
            }
        }
        return table
    }

    /// Reads `json` as a push's or an event's payload (any JSON value).
    public static func payload(json: String) throws(ActivityError) -> LuaValue {
        do { return try StoreValue(json: json)?.lua ?? .nil } catch {
            throw ActivityError(refusal: nil, message: "payload: \(error.message)")
        }
    }
}
