import LuaSandbox

extension ScenarioEvent {
    /// The event as the report marks it: its type, a short label and the
    /// widget kind it is about.
    var mark: EventMark {
        func make(_ type: String, _ label: String, kind: String? = nil) -> EventMark {
            EventMark(at: at, type: type, label: label, kind: kind)
        }
        switch kind {
        case .appForeground(let kind): return make("appForeground", "app in foreground" + (kind.map { " (\($0))" } ?? ""), kind: kind)
        case .storeSet(_, let key, let value):   // one app's groups: the key says enough on an axis
            return make("storeSet", value == nil ? "store: remove \(key)" : "store: set \(key)")
        case .reloadTimelines(let kind): return make("reloadTimelines", "app asks reload of \(kind)", kind: kind)
        case .reloadAll: return make("reloadAll", "app asks reload of all")
        case .widgetAdded(let widget): return make("widgetAdded", "added \(widget.kind) · \(widget.family.rawValue)", kind: widget.kind)
        case .widgetRemoved(let kind, let family):
            return make("widgetRemoved", "removed \(kind)" + (family.map { " · \($0.rawValue)" } ?? ""), kind: kind)
        case .localeChange: return make("localeChange", "locale change")
        case .significantTimeChange: return make("significantTimeChange", "significant time change")
        case .timeZoneChange(let zone): return make("timeZoneChange", "time zone → \(zone)")
        case .tap(let kind, _, _, let intent, _): return make("tap", "tap \(kind): \(intent)", kind: kind)
        case .perform(let intent, _): return make("perform", "app performs \(intent)")
        case .controlAdded(let kind): return make("controlAdded", "control added: \(kind)")
        case .controlTap(let kind): return make("controlTap", "control tap: \(kind)")
        case .reloadControls(let kind): return make("reloadControls", "app asks control values" + (kind.map { " of \($0)" } ?? ""))
        case .startActivity(let type, _, _, _, _): return make("startActivity", "start activity \(type)")
        case .push(let activity, _, let priority): return make("push", "push to \(activity) (priority \(priority))")
        case .activityEvent(let activity, let name, _): return make("activityEvent", "event \(name) to \(activity)")
        case .endActivity(let activity, _, _): return make("endActivity", "end \(activity)")
        case .activitiesEnabled(let value): return make("activitiesEnabled", "Live Activities \(value ? "on" : "off")")
        }
    }
}
