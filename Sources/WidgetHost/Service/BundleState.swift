import SharedStore

/// Keeps one bundle's engine and Control Center state in a group's
/// database (`StoreGroup.hostState`), one record per widget, budget window
/// and control, so a service started again continues where it was. Each
/// save writes only what changed since the last one, in one transaction.
///
/// Records (`StoreValue`s in the store's binary form, `StateRecords`):
/// `engine` (the next widget id), `widget:<id>` (`WidgetState`),
/// `budget:<key>` (reload times in the window), `control:<kind>`
/// (`ControlState`).
struct BundleState {
    let group: StoreGroup
    let bundle: String

    /// The kept state (empty when there is none). A record that does not
    /// decode is an error naming it: nothing is dropped silently, nor
    /// overwritten later.
    func load() throws -> (engine: EngineState, controls: [ControlState]) {
        let records = try readRecords()
        var engine = EngineState()
        var controls: [ControlState] = []
        for name in records.keys.sorted() {
            let value = records[name]!
            do {
                if name == "engine" {
                    engine.nextID = try StateRecords.int(value["nextID"], "nextID")
                } else if name.hasPrefix("widget:") {
                    engine.widgets.append(try StateRecords.widget(value, name))
                } else if name.hasPrefix("budget:") {
                    engine.budgets[String(name.dropFirst("budget:".count))] = try StateRecords.times(value, name)
                } else if name.hasPrefix("control:") {
                    controls.append(try StateRecords.control(value, name))
                }
            } catch {
                throw ServiceError("the kept state of bundle \(bundle) in \(group.path) has a record '\(name)' this host cannot read (\(error)); nothing was changed. \(afresh)")
            }
        }
        engine.widgets.sort { $0.id < $1.id }   // the order they were added
        return (engine, controls)
    }

    /// The records; one that is not a store value is an error that says how to start over.
    private func readRecords() throws -> [String: StoreValue] {
        do {
            return try group.hostState(of: bundle)
        } catch {
            guard error.code == .corruptValue else { throw error }
            throw ServiceError("\(error.message); nothing was changed. \(afresh)")
        }
    }

    /// How to start over, for errors.
    private var afresh: String {
        "To start the bundle's widgets afresh, delete its records: sqlite3 \(group.path) \"DELETE FROM host_state WHERE bundle = '\(bundle)'\""
    }

    /// Writes what changed.
    func save(_ changes: EngineStateChanges, controls: ControlStateChanges) throws {
        var records: [(name: String, record: StoreValue?)] = []
        if let next = changes.nextID { records.append(("engine", .map(["nextID": .integer(Int64(next))]))) }
        for widget in changes.widgets { records.append(("widget:\(widget.id)", StateRecords.encode(widget))) }
        for id in changes.removed { records.append(("widget:\(id)", nil)) }
        for (key, times) in changes.budgets.sorted(by: { $0.key < $1.key }) {
            records.append(("budget:\(key)", times.isEmpty ? nil : StateRecords.encode(times: times)))
        }
        for control in controls.changed { records.append(("control:\(control.kind)", StateRecords.encode(control))) }
        for kind in controls.removed { records.append(("control:\(kind)", nil)) }
        try group.writeHostState(of: bundle, records)
    }

    /// Writes the whole state, and deletes the records it no longer has
    /// (after a failed save, so nothing that failed to be written stays wrong).
    func replace(with engine: EngineState, controls: [ControlState]) throws {
        let existing = try group.hostState(of: bundle).keys
        var changes = EngineStateChanges(nextID: engine.nextID, widgets: engine.widgets, budgets: engine.budgets)
        var controlChanges = ControlStateChanges(changed: controls)
        let widgets = Set(engine.widgets.map { "widget:\($0.id)" }), kinds = Set(controls.map(\.kind))
        for name in existing {
            if name.hasPrefix("widget:"), !widgets.contains(name), let id = Int(name.dropFirst("widget:".count)) {
                changes.removed.append(id)
            } else if name.hasPrefix("budget:"), engine.budgets[String(name.dropFirst("budget:".count))] == nil {
                changes.budgets[String(name.dropFirst("budget:".count))] = []
            } else if name.hasPrefix("control:"), !kinds.contains(String(name.dropFirst("control:".count))) {
                controlChanges.removed.append(String(name.dropFirst("control:".count)))
            }
        }
        try save(changes, controls: controlChanges)
    }
}
