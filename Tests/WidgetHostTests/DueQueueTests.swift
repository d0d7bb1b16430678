import Testing
@testable import WidgetHost

/// `DueQueue` keeps one entry per instance and moves it when its time
/// changes; these tests hold it to a list that is searched in full.
@Suite struct DueQueueTests {
    /// The earliest (time, then index) of a plain list of times.
    private func earliest(_ times: [Double?]) -> (index: Int, at: Double)? {
        var best: (index: Int, at: Double)?
        for (i, t) in times.enumerated() {
            guard let t else { continue }
            if best == nil || t < best!.at { best = (i, t) }
        }
        return best
    }

    @Test func itAgreesWithASearchOfEveryTimeThroughManyChanges() {
        // A fixed sequence (a linear congruential generator): deterministic.
        var seed: UInt64 = 0x2545_F491_4F6C_DD1D
        func next(_ bound: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(bound))
        }
        var queue = DueQueue()
        var times: [Double?] = Array(repeating: nil, count: 40)
        for step in 0..<5_000 {
            let i = next(times.count)
            switch next(10) {
            case 0: times[i] = nil                       // cleared
            case 1: times[i] = .infinity                 // an infinite time clears too
            default: times[i] = Double(next(50))         // ties are common
            }
            queue.set(i, at: times[i])
            if times[i] == .infinity { times[i] = nil }
            let expected = earliest(times)
            let got = queue.first()
            #expect(got?.index == expected?.index && got?.at == expected?.at, "step \(step)")
            if got?.index != expected?.index { return }
        }
    }

    @Test func aReloadedWidgetMovesBehindTheOthersAndTiesGoToTheFirstAdded() {
        var queue = DueQueue()
        for i in 0..<5 { queue.set(i, at: 100) }
        #expect(queue.first()?.index == 0)
        // Each reload moves the earliest widget's time later, as the engine does.
        var order: [Int] = []
        for _ in 0..<5 {
            let (i, _) = queue.first()!
            order.append(i)
            queue.set(i, at: 200)
        }
        #expect(order == [0, 1, 2, 3, 4])
        #expect(queue.first()?.index == 0 && queue.first()?.at == 200)
        queue.set(3, at: 50)
        #expect(queue.first()?.index == 3)
        for i in 0..<5 { queue.set(i, at: nil) }
        #expect(queue.first() == nil)
    }
}
