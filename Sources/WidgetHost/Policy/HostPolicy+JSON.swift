import SharedStore

extension HostPolicy {
    /// Reads a policy file (`--policy FILE`): a JSON object of the fields
    /// to change, named as the properties are; deadlines are
    /// `{ "soft": s, "hard": s }`. Unknown keys are errors.
    public static func load(_ path: String, over base: HostPolicy = .standard) throws(LocatedError) -> HostPolicy {
        let file = try JSONFile.load(path)
        var reader = try JSONObjectReader(file, file.root)
        return try base.applying(&reader)
    }

    /// `self` with the fields of `reader` (a policy object) applied.
    func applying(_ reader: inout JSONObjectReader) throws(LocatedError) -> HostPolicy {
        var p = self
        func deadline(_ key: String, _ value: inout Deadline) throws(LocatedError) {
            guard var r = try reader.object(key) else { return }
            value.soft = try r.number("soft") ?? value.soft
            value.hard = try r.number("hard") ?? value.hard
            guard value.soft > 0, value.hard > 0 else { throw reader.fail(key, "deadlines must be positive seconds") }
            try r.finish()
        }
        try deadline("placeholderDeadline", &p.placeholderDeadline)
        try deadline("snapshotDeadline", &p.snapshotDeadline)
        try deadline("timelineDeadline", &p.timelineDeadline)
        try deadline("controlDeadline", &p.controlDeadline)
        func nonNegative(_ key: String, _ value: inout Double) throws(LocatedError) {
            guard let v = try reader.number(key) else { return }
            guard v >= 0 else { throw reader.fail(key, "must not be negative, got \(v)") }
            value = v
        }
        func count(_ key: String, _ value: inout Int) throws(LocatedError) {
            guard let v = try reader.integer(key) else { return }
            guard v >= 0 else { throw reader.fail(key, "must not be negative, got \(v)") }
            value = v
        }
        try nonNegative("minimumReloadInterval", &p.minimumReloadInterval)
        try nonNegative("budgetWindow", &p.budgetWindow)
        try nonNegative("intentDeadline", &p.intentDeadline)
        try nonNegative("activityActiveLimit", &p.activityActiveLimit)
        try nonNegative("activityDismissLimit", &p.activityDismissLimit)
        try nonNegative("activityRetention", &p.activityRetention)
        try count("budget", &p.budget)
        try count("entriesWarning", &p.entriesWarning)
        try count("entriesLimit", &p.entriesLimit)
        try count("timelineBytesWarning", &p.timelineBytesWarning)
        try count("timelineBytesLimit", &p.timelineBytesLimit)
        try count("widgetMemoryMB", &p.widgetMemoryMB)
        try count("activityMemoryMB", &p.activityMemoryMB)
        try count("outputBytes", &p.outputBytes)
        try count("activityPayloadBytes", &p.activityPayloadBytes)
        try count("maxActiveActivities", &p.maxActiveActivities)
        try count("activityPushBudget", &p.activityPushBudget)
        try count("activityFrequentPushBudget", &p.activityFrequentPushBudget)
        if let scope = try reader.string("budgetScope") {
            guard let s = BudgetScope(rawValue: scope) else {
                throw reader.fail("budgetScope", "must be one of instance, kind, app; got \"\(scope)\"")
            }
            p.budgetScope = s
        }
        p.developerMode = try reader.boolean("developerMode") ?? p.developerMode
        try reader.finish()
        return p
    }
}
