import LuaSandbox

/// What a host keeps of a widget across restarts, as the system keeps its
/// widgets across app launches: where it is, its last good timeline, when
/// it last reloaded and the request it has not answered yet. Its history
/// (reloads, failures, logs) is not kept.
public struct WidgetState: Sendable, Codable, Equatable {
    public var id: Int
    public var kind: String
    public var family: WidgetFamily
    public var values: LuaTable?
    public var addedAt: Double
    public var placeholder: TimelineEntry?
    public var timeline: Timeline?
    /// When `timeline` was loaded (it shows from then on).
    public var timelineAt: Double?
    public var lastReloadAt: Double?
    public var pendingRequestAt: Double?
    public var pendingRequests: Int
}

extension WidgetFamily: Codable {}

/// An engine's lasting state: its widgets on screen, the number the next
/// one gets, and the refresh-budget windows (counted reloads by key).
public struct EngineState: Sendable, Codable, Equatable {
    public var nextID: Int
    /// Widgets on screen, in the order they were added.
    public var widgets: [WidgetState]
    /// Times of counted reloads still in the window, by budget key.
    public var budgets: [String: [Double]]

    public init(nextID: Int = 1, widgets: [WidgetState] = [], budgets: [String: [Double]] = [:]) {
        self.nextID = nextID
        self.widgets = widgets
        self.budgets = budgets
    }
}

/// What changed in an engine's lasting state since it was last asked
/// (`TimelineEngine.takeStateChanges()`): a host writes just this.
public struct EngineStateChanges: Sendable {
    public var nextID: Int?
    /// Widgets added or changed (their whole new state).
    public var widgets: [WidgetState] = []
    /// Widgets removed.
    public var removed: [Int] = []
    /// Budget windows changed; an empty list: the key has nothing left.
    public var budgets: [String: [Double]] = [:]

    public var isEmpty: Bool { nextID == nil && widgets.isEmpty && removed.isEmpty && budgets.isEmpty }
}

extension WidgetInstance {
    /// The part of the instance a host keeps.
    var state: WidgetState {
        WidgetState(id: id, kind: configuration.kind, family: configuration.family, values: configuration.values,
                    addedAt: addedAt, placeholder: placeholder, timeline: timeline, timelineAt: timelineAt,
                    lastReloadAt: lastReloadAt, pendingRequestAt: pendingRequestAt, pendingRequests: pendingRequests)
    }

    /// An instance continuing from a kept state: it shows its placeholder
    /// from when it was added, then its timeline from when it was loaded.
    init(restoring state: WidgetState) {
        self.init(id: state.id, configuration: WidgetConfiguration(kind: state.kind, family: state.family, values: state.values),
                  addedAt: state.addedAt)
        placeholder = state.placeholder
        timeline = state.timeline
        timelineAt = state.timelineAt
        lastReloadAt = state.lastReloadAt
        pendingRequestAt = state.pendingRequestAt
        pendingRequests = state.pendingRequests
        displays.append((state.addedAt, .placeholder(state.placeholder)))
        if let timeline = state.timeline { displays.append((state.timelineAt ?? state.addedAt, .timeline(timeline))) }
    }
}

extension TimelineEngine {
    /// The engine's lasting state now (all of it).
    public var state: EngineState {
        EngineState(nextID: nextID, widgets: instances.filter { $0.removedAt == nil }.map(\.state),
                    budgets: budget.windows(at: now))
    }

    /// Continues from `state` (an engine that has no widgets yet): its
    /// widgets are on screen again with their timelines, requests and
    /// budgets, and reload when they would have. A widget whose kind or
    /// family the bundle no longer declares is dropped; the returned notes
    /// say which and why.
    @discardableResult
    public func restore(_ state: EngineState) -> [String] {
        precondition(instances.isEmpty, "restore(_:) continues an engine that has no widgets yet")
        var notes: [String] = []
        for widget in state.widgets {
            if let problem = undeclared(id: widget.id, kind: widget.kind, family: widget.family) {
                notes.append(problem)
                recordRemoval(widget.id)
                continue
            }
            insert(WidgetInstance(restoring: widget))
        }
        nextID = max(state.nextID, (instances.map(\.id).max() ?? 0) + 1)
        // A dropped widget's own budget window goes with it.
        var budgets = state.budgets
        for key in budgets.keys where key.hasPrefix("instance:") {
            if let id = Int(key.dropFirst("instance:".count)), position(of: id) == nil {
                budgets[key] = nil
                recordBudgetChange(key)
            }
        }
        for (key, times) in budgets { budget.restore(key, times.sorted()) }
        for i in instances.indices { schedule(i) }
        return notes
    }

    /// Why a widget of `kind` in `family` cannot go on with this bundle, or nil.
    private func undeclared(id: Int, kind: String, family: WidgetFamily) -> String? {
        guard let declaration = runtime.bundle.declarations.widget(kind) else {
            return "widget #\(id) (\(kind)) was dropped: the bundle no longer declares that kind"
        }
        guard declaration.families.contains(family) else {
            return "widget #\(id) (\(kind)) was dropped: the kind no longer supports \(family.rawValue)"
        }
        return nil
    }

    /// `instance`'s configuration under this version's configuration intent:
    /// the values of parameters it still declares (when they still check),
    /// defaults for the others. A note when a value had to be dropped.
    private func reconfigured(_ instance: WidgetInstance) -> (WidgetConfiguration, String?) {
        let old = instance.configuration
        let values = old.values?.namedFields ?? [:]
        let declared = runtime.bundle.declarations.widget(old.kind).flatMap(\.configuration)
            .flatMap { runtime.bundle.declarations.intent($0) }.map { Set($0.parameters.map(\.name)) } ?? []
        let kept = values.filter { declared.contains($0.key) }
        if let configuration = try? runtime.configuration(kind: old.kind, family: old.family, values: kept) {
            let dropped = Set(values.keys).subtracting(kept.keys).sorted()
            return (configuration, dropped.isEmpty ? nil : "widget #\(instance.id) (\(old.kind)): configuration values \(dropped.joined(separator: ", ")) are no longer declared")
        }
        let defaults = (try? runtime.configuration(kind: old.kind, family: old.family)) ?? old
        return (defaults, "widget #\(instance.id) (\(old.kind)): its configuration values no longer check; it takes the defaults")
    }

    /// Takes over the screen of `old`, an engine of an earlier version of
    /// the bundle (an engine that has no widgets yet): its widgets with
    /// their history and timelines, its budgets, performances and ids. A
    /// widget whose kind or family this version no longer declares is
    /// removed; the returned notes say which.
    @discardableResult
    public func takeOver(from old: TimelineEngine) -> [String] {
        precondition(instances.isEmpty, "takeOver(from:) continues an engine that has no widgets yet")
        var notes: [String] = []
        budget = old.budget
        performances = old.performances
        nextID = old.nextID
        historyRetention = old.historyRetention
        logLinesKept = old.logLinesKept
        lastTrim = old.lastTrim
        for var instance in old.instances {
            if instance.removedAt == nil, let problem = undeclared(id: instance.id, kind: instance.configuration.kind,
                                                                  family: instance.configuration.family) {
                notes.append(problem)
                instance.removedAt = now
                instance.displays.append((now, .removed))
                recordRemoval(instance.id)
                if policy.budgetScope == .instance { budget.restore("instance:\(instance.id)", []); recordBudgetChange("instance:\(instance.id)") }
            } else if instance.removedAt == nil {
                // Its configuration under this version's parameters: the values
                // it still declares are kept, new ones take their defaults.
                let (configuration, note) = reconfigured(instance)
                if let note { notes.append(note) }
                if configuration != instance.configuration {
                    instance.configuration = configuration
                    insert(instance)
                    recordChange(instances.count - 1)
                    continue
                }
            }
            insert(instance)
        }
        for i in instances.indices { schedule(i) }
        return notes
    }
}
