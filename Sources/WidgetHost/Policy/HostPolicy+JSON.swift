import SharedStore

extension HostPolicy {
    /// Reads a policy file (`--policy FILE`): a JSON object of the fields
    /// to change, named as the properties are; deadlines are
    /// `{ "soft": s, "hard": s }`. Unknown keys are errors. Every problem
    /// is reported, each at its line and column.
    public static func load(_ path: String, over base: HostPolicy = .standard) throws(LocatedErrors) -> HostPolicy {
        let file = try JSONFile.load(path)
        var reader = try JSONObjectReader.topLevel(of: file)
        let policy = base.applying(&reader)
        try file.check()
        return policy
    }

    /// `self` with the fields of `reader` (a policy object) applied; a
    /// field with a problem (reported to the reader's file) is left as it is.
    func applying(_ reader: inout JSONObjectReader) -> HostPolicy {
        var p = self
        func deadline(_ key: String, _ value: inout Deadline) {
            guard var r = reader.object(key) else { return }
            let soft = r.number("soft") ?? value.soft
            let hard = r.number("hard") ?? value.hard
            if soft > 0, hard > 0 {
                value.soft = soft
                value.hard = hard
            } else {
                reader.report(key, "deadlines must be positive seconds")
            }
            r.finish()
        }
        deadline("placeholderDeadline", &p.placeholderDeadline)
        deadline("snapshotDeadline", &p.snapshotDeadline)
        deadline("timelineDeadline", &p.timelineDeadline)
        deadline("controlDeadline", &p.controlDeadline)
        func nonNegative(_ key: String, _ value: inout Double) {
            guard let v = reader.number(key) else { return }
            guard v >= 0 else { return reader.report(key, "must not be negative, got \(v)") }
            value = v
        }
        func count(_ key: String, _ value: inout Int) {
            guard let v = reader.integer(key) else { return }
            guard v >= 0 else { return reader.report(key, "must not be negative, got \(v)") }
            value = v
        }
        nonNegative("minimumReloadInterval", &p.minimumReloadInterval)
        nonNegative("budgetWindow", &p.budgetWindow)
        nonNegative("intentDeadline", &p.intentDeadline)
        nonNegative("activityActiveLimit", &p.activityActiveLimit)
        nonNegative("activityDismissLimit", &p.activityDismissLimit)
        nonNegative("activityRetention", &p.activityRetention)
        count("budget", &p.budget)
        count("entriesWarning", &p.entriesWarning)
        count("entriesLimit", &p.entriesLimit)
        count("timelineBytesWarning", &p.timelineBytesWarning)
        count("timelineBytesLimit", &p.timelineBytesLimit)
        count("widgetMemoryMB", &p.widgetMemoryMB)
        count("activityMemoryMB", &p.activityMemoryMB)
        count("outputBytes", &p.outputBytes)
        count("activityPayloadBytes", &p.activityPayloadBytes)
        count("maxActiveActivities", &p.maxActiveActivities)
        count("activityPushBudget", &p.activityPushBudget)
        count("activityFrequentPushBudget", &p.activityFrequentPushBudget)
        if let scope = reader.string("budgetScope") {
            if let s = BudgetScope(rawValue: scope) {
                p.budgetScope = s
            } else {
                reader.report("budgetScope", "must be one of instance, kind, app; got \"\(scope)\"")
            }
        }
        p.developerMode = reader.boolean("developerMode") ?? p.developerMode
        reader.finish()
        return p
    }
}
