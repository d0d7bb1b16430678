// store-stress: a store writer for the reliability tests (Tests/SharedStoreTests).
//
//   store-stress acks ROOT GROUP FIRST
//       writes "k<FIRST>", "k<FIRST+1>", … forever (every tenth write a
//       batch of a value and a 4 KB file), printing "ack N" after each
//       commit has returned: a test kills it at random and checks that
//       every acknowledged write survived.
//   store-stress increment ROOT GROUP KEY COUNT [--gate]
//       adds 1 to KEY, COUNT times, each an atomic update. With --gate it
//       first prints "ready" and waits for a line on standard input before
//       it opens the group, so that a test can release several processes
//       at the same moment on a store that does not exist yet.
//   store-stress activities ROOT GROUP BUNDLE
//       rewrites BUNDLE's activity rows forever, each write one
//       transaction of several rows: activity "a" gets record n = k and a
//       k-th push, activity "b" comes and goes; prints "ack k" after each
//       commit. A test kills it and checks the rows agree with each other.
import Foundation
import SharedStore

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("store-stress: \(message)\n".utf8))
    exit(2)
}

let usage = "usage: store-stress acks ROOT GROUP FIRST | increment ROOT GROUP KEY COUNT [--gate] | activities ROOT GROUP BUNDLE"
let args = CommandLine.arguments
guard args.count >= 4 else { fail(usage) }
let store = SharedStore(root: args[2])
do {
    switch args[1] {
    case "acks":
        guard args.count == 5, var n = Int(args[4]) else { fail("acks ROOT GROUP FIRST") }
        let group = try store.group(args[3])
        while true {
            if n % 10 == 0 {
                let file = [UInt8](repeating: UInt8(n % 251), count: 4096)
                try group.commit(StoreBatch(values: [("k\(n)", .integer(Int64(n)))], files: [("f\(n)", file)]))
            } else {
                try group.set("k\(n)", .integer(Int64(n)))
            }
            FileHandle.standardOutput.write(Data("ack \(n)\n".utf8))   // unbuffered: one write(2)
            n += 1
        }
    case "increment":
        let gated = args.count == 7 && args[6] == "--gate"
        guard args.count == 6 || gated, let count = Int(args[5]) else { fail("increment ROOT GROUP KEY COUNT [--gate]") }
        if gated {
            FileHandle.standardOutput.write(Data("ready\n".utf8))
            _ = readLine()   // the test's "go", or end of input
        }
        let group = try store.group(args[3])
        for _ in 0..<count {
            try group.update(args[4]) { old in .integer((old?.integerValue ?? 0) + 1) }
        }
    case "activities":
        guard args.count == 5 else { fail("activities ROOT GROUP BUNDLE") }
        let group = try store.group(args[3])
        while true {
            let k = try group.updateActivities(of: args[4]) { rows -> Int64 in
                var a = rows.activities.first { $0.id == "a" } ?? StoredActivity(id: "a", record: ["n": 0])
                let k = (a.record["n"]?.integerValue ?? 0) + 1
                a.record = ["n": .integer(k)]
                a.pushes.append(["n": .integer(k), "pad": .string(String(repeating: "p", count: Int(k % 64)))])
                rows.activities = [a]
                if k % 2 == 0 { rows.activities.append(StoredActivity(id: "b", record: ["of": .integer(k)], pushes: [["of": .integer(k)]])) }
                rows.nextNumber = k + 1
                return k
            }
            FileHandle.standardOutput.write(Data("ack \(k)\n".utf8))
        }
    default:
        fail("unknown mode \(args[1]); \(usage)")
    }
} catch {
    fail("\(error)")
}
