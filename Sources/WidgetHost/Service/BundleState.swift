import Foundation
import SharedStore

/// Keeps one bundle's engine and Control Center state in a group's
/// database (`StoreGroup.hostState`), one record per widget, budget window
/// and control, so a service started again continues where it was. Each
/// save writes only what changed since the last one, in one transaction.
///
/// Records (JSON): `engine` (the next widget id), `widget:<id>`
/// (`WidgetState`), `budget:<key>` (reload times in the window),
/// `control:<kind>` (`ControlState`).
struct BundleState {
    let group: StoreGroup
    let bundle: String

    private struct EngineRecord: Codable { var nextID: Int }

    /// The kept state (empty when there is none). A record that does not
    /// decode is an error naming it: nothing is dropped silently, nor
    /// overwritten later.
    func load() throws -> (engine: EngineState, controls: [ControlState]) {
        let records = try group.hostState(of: bundle)
        var engine = EngineState()
        var controls: [ControlState] = []
        let decoder = JSONDecoder()
        func decode<T: Decodable>(_ type: T.Type, _ name: String) throws -> T {
            do {
                return try decoder.decode(type, from: Data(records[name]!))
            } catch {
                throw ServiceError("the kept state of bundle \(bundle) in \(group.path) has a record '\(name)' this host cannot read (\(error)); remove it with `lunette store` or start from a fresh store")
            }
        }
        for name in records.keys.sorted() {
            if name == "engine" {
                engine.nextID = try decode(EngineRecord.self, name).nextID
            } else if name.hasPrefix("widget:") {
                engine.widgets.append(try decode(WidgetState.self, name))
            } else if name.hasPrefix("budget:") {
                engine.budgets[String(name.dropFirst("budget:".count))] = try decode([Double].self, name)
            } else if name.hasPrefix("control:") {
                controls.append(try decode(ControlState.self, name))
            }
        }
        engine.widgets.sort { $0.id < $1.id }   // the order they were added
        return (engine, controls)
    }

    /// Writes what changed.
    func save(_ changes: EngineStateChanges, controls: [ControlState]) throws {
        var records: [(name: String, record: [UInt8]?)] = []
        let encoder = JSONEncoder()
        if let next = changes.nextID { records.append(("engine", try encode(EngineRecord(nextID: next), encoder))) }
        for widget in changes.widgets { records.append(("widget:\(widget.id)", try encode(widget, encoder))) }
        for id in changes.removed { records.append(("widget:\(id)", nil)) }
        for (key, times) in changes.budgets.sorted(by: { $0.key < $1.key }) {
            records.append(("budget:\(key)", times.isEmpty ? nil : try encode(times, encoder)))
        }
        for control in controls { records.append(("control:\(control.kind)", try encode(control, encoder))) }
        try group.writeHostState(of: bundle, records)
    }

    /// Writes the whole state, and deletes records it no longer has (after
    /// a failed save, so nothing that failed to be written stays wrong).
    func replace(with engine: EngineState, controls: [ControlState]) throws {
        let existing = Set(try group.hostState(of: bundle).keys)
        var changes = EngineStateChanges(nextID: engine.nextID, widgets: engine.widgets, budgets: engine.budgets)
        let kept = Set(engine.widgets.map { "widget:\($0.id)" })
        for name in existing where name.hasPrefix("widget:") && !kept.contains(name) {
            if let id = Int(name.dropFirst("widget:".count)) { changes.removed.append(id) }
        }
        for name in existing where name.hasPrefix("budget:") && engine.budgets[String(name.dropFirst("budget:".count))] == nil {
            changes.budgets[String(name.dropFirst("budget:".count))] = []
        }
        try save(changes, controls: controls)
    }

    private func encode<T: Encodable>(_ value: T, _ encoder: JSONEncoder) throws -> [UInt8] {
        [UInt8](try encoder.encode(value))
    }
}
