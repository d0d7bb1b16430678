import Foundation
import Testing
@testable import WidgetHost

/// The shared hostile scripts, run as a widget's timeline provider: each
/// call ends as the attack's header says, the pooled sandbox is not
/// poisoned, and a plain widget of the same bundle still answers. One at a
/// time: each attack races its deadline, so it must not share the cores
/// with the others.
@Suite("Hostile scripts as widget providers", .serialized)
struct WidgetAttackTests {
    @Test(arguments: Attacks.files.map(\.lastPathComponent))
    func anAttackEndsAndTheNextCallStillWorks(_ name: String) throws {
        let file = try #require(Attacks.byName[name])
        let attack = try String(contentsOf: file, encoding: .utf8)
        let fixture = try BundleFixture(main: """
            widget { kind = "Attack", placeholder = function() return {} end,
              timeline = function() require("attack"); return { entries = {} } end }
            widget { kind = "Fine", placeholder = function() return {} end,
              timeline = function() return { entries = { { date = clock.now(), secret = rawget(_ENV, "leaked_secret") or "none" } } } end }
            """, manifest: #"{ "id": "com.example.attack", "appGroups": ["group.attack"] }"#,
            files: ["attack.lua": attack])
        // Loops end at a short deadline; memory bombs need a few hundred ms
        // of CPU to reach the 30 MB cap, so they get 5 s, which a busy
        // machine cannot turn into a timeout.
        let expectsMemory = Attacks.expected[name] == ["memory"]
        let hard = expectsMemory ? 5.0 : 0.3
        var policy = HostPolicy()
        policy.timelineDeadline = .init(soft: 0.1, hard: hard)
        let (runtime, _) = try fixture.runtime(policy: policy)
        let started = ContinuousClock.now
        let outcome = runtime.timeline(try runtime.configuration(kind: "Attack")).outcome
        let elapsed = ContinuousClock.now - started
        #expect(elapsed < .milliseconds(Int(hard * 1000) + 400), "\(name) took \(elapsed)")
        if let allowed = Attacks.expected[name] {
            let status = outcome.status == .ok ? "ok" : (outcome.status == .invalid ? "error" : outcome.status.rawValue)
            // 40 floods the log: in a widget the output cap ends it as an error.
            #expect(allowed.contains(status), "\(name) ended \(status): \(outcome.message ?? "")")
        }
        for _ in 0..<2 {
            let fine = runtime.timeline(try runtime.configuration(kind: "Fine"))
            #expect(fine.outcome.status == .ok, "\(name) broke the next call: \(fine.outcome.message ?? "")")
            #expect(fine.value?.entries.first?.content["secret"] == "none", "\(name) left a global behind")
        }
    }
}
