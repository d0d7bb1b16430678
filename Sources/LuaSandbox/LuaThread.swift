#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LunetteSystem
import Dispatch
import CLuaShims

/// A host-owned thread with a large stack that runs Lua work serially.
///
/// Lua's C code recurses (the parser, metamethods, nested calls) and relies
/// on a generous C stack; Swift's concurrency pool threads have small ones.
/// Drive a `LuaState` from one `LuaThread` (or another thread with at least
/// `LuaState.minimumStackSize` of stack).
///
/// A `LuaThread` is also a `SerialExecutor`: an actor that owns Lua states
/// can run on it, so its methods (and the Lua calls they make) run on the
/// large stack without blocking a thread of Swift's cooperative pool:
///
/// ```swift
/// actor Widgets {
///     let thread = LuaThread(name: "widgets")
///     nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }
///     let state = try! LuaState()
///     func answer() throws -> [LuaValue] { try state.run("return 6 * 7") }
/// }
/// ```
public final class LuaThread: @unchecked Sendable {
    /// Default stack: 16 MiB.
    public static let defaultStackSize = 16 << 20

    private let queue = JobQueue()
    private let name: String
    private let thread: HostThread.ID

    /// Starts the thread. It ends when this object is released, after the
    /// work already given to it.
    public init(name: String = "lunette.lua", stackSize: Int = LuaThread.defaultStackSize) {
        let queue = self.queue
        self.name = name
        thread = HostThread.start(name: name, stackSize: stackSize) { queue.runUntilStopped() }
    }

    deinit {
        queue.stop()
    }

    /// True when the caller is this thread.
    public var isCurrent: Bool { HostThread.same(HostThread.current, thread) }

    /// Runs `body` on this thread and waits for it (inline when already on it).
    public func sync<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        if isCurrent { return try body() }
        return try withoutActuallyEscaping(body) { (escapable) throws(E) -> T in
            let box = UncheckedBox<Result<T, E>?>(nil)
            let done = DispatchSemaphore(value: 0)
            let work = UncheckedBox<(() throws(E) -> T)?>(escapable)
            add {
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
            add { continuation.resume(with: Result { try body() }) }
        }
    }

    private func add(_ job: @escaping () -> Void) {
        queue.add(job)
    }
}

extension LuaThread: SerialExecutor {
    /// Runs an actor's job on this thread, in order.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.add { job.runSynchronously(on: executor) }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    public func checkIsolated() {
        precondition(isCurrent, "not on LuaThread \(name)")
    }
}

/// Large-stack threads for Lua calls made from small stacks (Swift's
/// cooperative threads, a 512 KiB thread): each call takes an idle thread
/// of the pool, or makes one, up to `limit`; past that it waits for one to
/// be free. Calls from different callers run at the same time; a state's
/// own calls stay one at a time, as its owner makes them.
public final class LuaThreadPool: @unchecked Sendable {
    /// The pool `LuaState` uses: as many threads as the machine has cores, at least 2.
    public static let shared = LuaThreadPool(limit: max(2, ProcessInfo.processInfo.activeProcessorCount))

    public let limit: Int
    private let condition = Condition()
    private var idle: [LuaThread] = []
    private var count = 0

    public init(limit: Int) {
        precondition(limit >= 1, "a LuaThreadPool needs at least one thread")
        self.limit = limit
    }

    /// Threads made so far (at most `limit`).
    public var threads: Int { condition.withLock { count } }

    /// Runs `body` on an idle thread of the pool and waits for it.
    public func sync<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        let thread = take()
        defer { give(thread) }
        return try thread.sync(body)
    }

    private func take() -> LuaThread {
        condition.lock()
        defer { condition.unlock() }
        while idle.isEmpty && count >= limit { condition.wait() }
        if let thread = idle.popLast() { return thread }
        count += 1
        return LuaThread(name: "lunette.lua.pool.\(count)")
    }

    private func give(_ thread: LuaThread) {
        condition.lock()
        idle.append(thread)
        condition.signal()
        condition.unlock()
    }
}

/// The jobs of one LuaThread, shared with the thread itself.
private final class JobQueue: @unchecked Sendable {
    private let condition = Condition()
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
