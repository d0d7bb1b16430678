#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LunetteSystem
import LuaSandbox

/// A plugin's quotas over a rolling window (issue 17): CPU time, calls,
/// log bytes, and failures in a row. (Store bytes are the store's own
/// quota, per app group, enforced when a call commits.) nil: no quota of
/// that kind.
public struct PluginQuotas: Sendable, Equatable {
    /// The rolling window the quotas count over, in seconds of the host's clock.
    public var window: Double
    /// CPU time of the plugin's calls in the window, in seconds.
    public var cpuSeconds: Double?
    /// Calls in the window.
    public var calls: Int?
    /// Bytes the plugin's calls printed or logged in the window.
    public var logBytes: Int?
    /// Calls that failed one after another (any status but `ok`; a refused
    /// call does not count).
    public var failuresInARow: Int?

    public init(window: Double = 3600, cpuSeconds: Double? = 60, calls: Int? = 10_000, logBytes: Int? = 1 << 20,
                failuresInARow: Int? = 10) {
        self.window = window
        self.cpuSeconds = cpuSeconds
        self.calls = calls
        self.logBytes = logBytes
        self.failuresInARow = failuresInARow
    }

    /// Defaults for a plugin host: 60 s of CPU, 10,000 calls and 1 MiB of
    /// log lines per hour, 10 failures in a row.
    public static let standard = PluginQuotas()
}

/// Why and since when a plugin's calls are refused.
public struct Quarantine: Sendable, Equatable, Codable {
    /// What put it there.
    public enum Cause: String, Sendable, Codable, CaseIterable {
        case cpu, calls, logBytes, failures
    }
    public var cause: Cause
    /// When, on the host's clock.
    public var since: Double
    /// Why, in words: "it used 61.2 s of CPU in the last 3600 s, over its quota of 60 s".
    public var reason: String
}

/// What a plugin used in the window.
public struct PluginUsage: Sendable, Equatable {
    public var calls: Int
    public var cpuSeconds: Double
    public var logBytes: Int
    public var failuresInARow: Int
}

/// What a plugin did over its whole life in the host (a release does not
/// reset it): the figures of a plugin summary.
public struct PluginTotals: Sendable, Equatable {
    /// Calls that ran (refused ones are not among them).
    public var calls = 0
    /// Calls that ran and did not end `ok`.
    public var failures = 0
    /// Of the failures: calls whose worker process died (`crashed`).
    public var crashes = 0
    /// Of the failures: calls that ran out of time (`timeout`).
    public var timeouts = 0
    /// Calls refused without running (quarantined).
    public var refused = 0
    /// Times it was quarantined.
    public var quarantines = 0
    /// CPU time of its calls, in seconds.
    public var cpuSeconds = 0.0
    /// The most memory one of its calls held, in bytes.
    public var peakMemory = 0
    public init() {}
}

/// Keeps one plugin's usage against its quotas and its quarantine. Every
/// call of the plugin's runtime asks it first (`admit`) and tells it after
/// (`record`), when `HostServices.ledger` is set: a quarantined plugin's
/// calls are refused with status `refused` and the reason, so its widgets
/// keep their last good entry (rule T10), until the host releases it.
/// Thread-safe: an app's UI may read it while calls run.
public final class PluginLedger: @unchecked Sendable {
    public let plugin: String
    public let quotas: PluginQuotas
    private let lock = FastLock()
    /// Calls in time order; those before `head` have left the window.
    private var recent: [(at: Double, cpu: Double, logBytes: Int)] = []
    private var head = 0
    /// The window's totals, kept as calls come and go (no sum per call).
    private var cpuInWindow = 0.0
    private var logBytesInWindow = 0
    private var callsInWindow: Int { recent.count - head }
    private var failures = 0
    private var lastFailure: String?
    private var current: Quarantine?
    private var lifetime = PluginTotals()
    /// Called (on the calling thread, outside the ledger's lock) when the
    /// plugin is quarantined.
    public var onQuarantine: (@Sendable (Quarantine) -> Void)?

    public init(plugin: String, quotas: PluginQuotas = .standard) {
        self.plugin = plugin
        self.quotas = quotas
    }

    /// Why and since when its calls are refused, or nil.
    public var quarantine: Quarantine? { lock.withLock { current } }

    /// What the plugin did since the ledger was made, releases included.
    public var totals: PluginTotals { lock.withLock { lifetime } }

    /// Lets its calls run again, with a fresh window and no failures counted.
    public func release() {
        lock.withLock {
            current = nil
            recent = []
            head = 0
            cpuInWindow = 0
            logBytesInWindow = 0
            failures = 0
            lastFailure = nil
        }
    }

    /// What it used in the window ending at `now`.
    public func usage(at now: Double) -> PluginUsage {
        lock.withLock {
            prune(now)
            return PluginUsage(calls: callsInWindow, cpuSeconds: cpuInWindow, logBytes: logBytesInWindow, failuresInARow: failures)
        }
    }

    /// nil when a call may run at `now`; else the refusal, which says why
    /// and since when (status `refused`).
    public func admit(at now: Double) -> Diagnostic? {
        var newly: Quarantine?
        let refusal: Diagnostic? = lock.withLock {
            if current == nil, let calls = quotas.calls {
                prune(now)
                if callsInWindow >= calls {
                    current = Quarantine(cause: .calls, since: now,
                                         reason: "it made \(callsInWindow) calls in the last \(Self.seconds(quotas.window)), its quota")
                    newly = current
                    lifetime.quarantines += 1
                }
            }
            guard let current else { return nil }
            lifetime.refused += 1
            return Diagnostic(.refused, "plugin \(plugin) is quarantined since \(ISODate.format(current.since)): \(current.reason); the host can release it")
        }
        if let newly { onQuarantine?(newly) }
        return refusal
    }

    /// Counts a call that ran, at `now`; quarantines the plugin when the
    /// call takes it over a quota.
    public func record(_ outcome: CallOutcome, at now: Double) {
        guard outcome.status != .refused else { return }
        let newly: Quarantine? = lock.withLock {
            let logged = outcome.logs.reduce(0) { $0 + $1.text.utf8.count + 1 }
            recent.append((now, outcome.cpuTime, logged))
            cpuInWindow += outcome.cpuTime
            logBytesInWindow += logged
            lifetime.calls += 1
            lifetime.cpuSeconds += outcome.cpuTime
            lifetime.peakMemory = max(lifetime.peakMemory, outcome.memoryPeak)
            if !outcome.succeeded {
                lifetime.failures += 1
                if outcome.status == .crashed { lifetime.crashes += 1 }
                if outcome.status == .timeout { lifetime.timeouts += 1 }
            }
            if outcome.succeeded {
                failures = 0
            } else {
                failures += 1
                lastFailure = outcome.diagnostic?.message
            }
            guard current == nil else { return nil }
            prune(now)
            let cpu = cpuInWindow, loggedInWindow = logBytesInWindow
            if let limit = quotas.failuresInARow, failures >= limit {
                current = Quarantine(cause: .failures, since: now,
                                     reason: "\(failures) calls failed in a row (the last: \(lastFailure ?? "?"))")
            } else if let limit = quotas.cpuSeconds, cpu > limit {
                current = Quarantine(cause: .cpu, since: now,
                                     reason: "it used \(fixedText(cpu, decimals: 1)) s of CPU in the last \(Self.seconds(quotas.window)), over its quota of \(cFormat("%g", limit)) s")
            } else if let limit = quotas.logBytes, loggedInWindow > limit {
                current = Quarantine(cause: .logBytes, since: now,
                                     reason: "it logged \(loggedInWindow) bytes in the last \(Self.seconds(quotas.window)), over its quota of \(limit)")
            }
            if current != nil { lifetime.quarantines += 1 }
            return current
        }
        if let newly { onQuarantine?(newly) }
    }

    /// Drops what is older than the window (called with the lock held):
    /// each call leaves once, and the array is compacted now and then.
    private func prune(_ now: Double) {
        let start = now - quotas.window
        while head < recent.count, recent[head].at <= start {
            cpuInWindow -= recent[head].cpu
            logBytesInWindow -= recent[head].logBytes
            head += 1
        }
        if head == recent.count {
            recent.removeAll(keepingCapacity: true)
            head = 0
            cpuInWindow = 0   // no drift from adding and taking away floats
        } else if head >= 1024, head * 2 >= recent.count {
            recent.removeFirst(head)
            head = 0
        }
    }

    static func seconds(_ window: Double) -> String {
        window.truncatingRemainder(dividingBy: 3600) == 0 ? "\(Int(window / 3600)) h" : "\(cFormat("%g", window)) s"
    }
}
