import LuaSandbox

/// What the dev page shows, at one moment: the bundle's version, the last
/// error, each widget's whole timeline and the entry shown now, controls,
/// activities and recent log lines. `Codable`: the page reads it as JSON.
public struct DevSnapshot: Codable, Sendable {
    public var bundle: String?
    public var path: String
    public var version: String?
    /// The host's "now" (the system's clock, stepped ahead by `ahead` seconds).
    public var now: Double
    public var ahead: Double
    public var swaps: Int
    /// Why the last version tried was refused; nil when it runs.
    public var failure: [Problem]?
    /// How long the last version tried took, from the save seen to its new timelines.
    public var lastReloadMilliseconds: Double?
    public var widgets: [Widget]
    public var controls: [Control]
    public var activities: [Activity]
    /// The most recent log lines of every call, oldest first.
    public var logs: [Log]

    public struct Problem: Codable, Sendable {
        public var text: String
        public var file: String?
        public var line: Int?
        public var traceback: String?

        public init(text: String, file: String? = nil, line: Int? = nil, traceback: String? = nil) {
            self.text = text
            self.file = file
            self.line = line
            self.traceback = traceback
        }

        init(_ diagnostic: Diagnostic) {
            text = diagnostic.text
            file = diagnostic.file
            line = diagnostic.line
            traceback = diagnostic.traceback
        }
    }

    public struct Widget: Codable, Sendable {
        public var id: Int
        public var name: String
        public var kind: String
        public var family: String
        /// Every entry of its timeline, in full.
        public var entries: [Entry]
        /// The index in `entries` of the entry shown now (nil: its placeholder).
        public var shown: Int?
        public var placeholder: LuaTable?
        public var policy: String?
        public var lastReload: Double?
        public var nextReload: Double?
        /// Its last call's failure, when the last reload failed.
        public var failure: Problem?
        /// Reloads in the last 24 h that would have counted against the
        /// budget without developer mode (policy and request reloads, B1).
        public var wouldHaveUsed: Int
        public var budget: Int
    }

    public struct Entry: Codable, Sendable {
        public var date: Double
        public var content: LuaTable
    }

    public struct Control: Codable, Sendable {
        public var kind: String
        public var type: String
        public var value: LuaValue?
        public var failure: Problem?
    }

    public struct Activity: Codable, Sendable {
        public var id: String
        public var type: String
        public var phase: String
        public var attributes: LuaTable
        public var state: LuaTable
        public var staleDate: Double?
    }

    public struct Log: Codable, Sendable {
        public var at: Double
        public var level: String
        public var text: String
        /// Which widget's call printed it ("#1 TaskCount").
        public var source: String
    }
}
