import Foundation
import CLuaShims

/// A host-owned thread with a large stack that runs Lua work serially.
///
/// Lua's C code recurses (the parser, metamethods, nested calls) and relies
/// on a generous C stack; Swift's concurrency pool threads have small ones.
/// Drive a `LuaState` from one `LuaThread` (or another thread with at least
/// `LuaState.minimumStackSize` of stack).
public final class LuaThread: @unchecked Sendable {
    /// Default stack: 16 MiB.
    public static let defaultStackSize = 16 << 20

    /// The thread `LuaState` hops to when called from a small stack.
    public static let shared = LuaThread(name: "lunette.lua.shared")

    private let queue = JobQueue()
    private let thread: Thread

    /// Starts the thread. It ends when this object is released, after the
    /// work already given to it.
    public init(name: String = "lunette.lua", stackSize: Int = LuaThread.defaultStackSize) {
        let queue = self.queue
        thread = Thread { queue.runUntilStopped() }
        thread.name = name
        thread.stackSize = stackSize
        thread.start()
    }

    deinit {
        queue.stop()
    }

    /// True when the caller is this thread.
    public var isCurrent: Bool { Thread.current == thread }

    /// Runs `body` on this thread and waits for it (inline when already on it).
    public func sync<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        if isCurrent { return try body() }
        return try withoutActuallyEscaping(body) { (escapable) throws(E) -> T in
            let box = UncheckedBox<Result<T, E>?>(nil)
            let done = DispatchSemaphore(value: 0)
            let work = UncheckedBox<(() throws(E) -> T)?>(escapable)
            enqueue {
                do {  // the closure must be released before the caller resumes
                    let body = work.value!
                    work.value = nil
                    box.value = Result { () throws(E) -> T in try body() }
                }
                done.signal()
            }
            done.wait()
            return try box.value!.get()
        }
    }

    /// Runs `body` on this thread without blocking the caller's thread.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            enqueue { continuation.resume(with: Result { try body() }) }
        }
    }

    private func enqueue(_ job: @escaping () -> Void) {
        queue.add(job)
    }
}

/// The jobs of one LuaThread, shared with the thread itself.
private final class JobQueue: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [() -> Void] = []
    private var stopped = false

    func add(_ job: @escaping () -> Void) {
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }

    func runUntilStopped() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopped { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job()
        }
    }
}

/// Carries a non-Sendable value to a thread that the sender waits for.
final class UncheckedBox<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}
