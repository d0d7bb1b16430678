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
import Foundation
import SharedStore

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("store-stress: \(message)\n".utf8))
    exit(2)
}

let usage = "usage: store-stress acks ROOT GROUP FIRST | increment ROOT GROUP KEY COUNT [--gate]"
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
    default:
        fail("unknown mode \(args[1]); \(usage)")
    }
} catch {
    fail("\(error)")
}
