#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CWorkerShims

/// A thread of the host's own, with the stack size it asks for: what
/// Foundation's `Thread` was used for, on pthreads directly.
package enum HostThread {
    /// The calling thread's identity, to compare with `start`'s answer.
    package typealias ID = pthread_t

    /// Starts `body` on a new detached thread with `stackSize` bytes of
    /// stack (rounded up to the page size), named `name` where the system
    /// keeps names (15 bytes on Linux). Returns the thread's identity.
    /// A thread that cannot be made is a fatal error, as it was with
    /// Foundation's `Thread`: the host cannot run without it.
    @discardableResult
    package static func start(name: String, stackSize: Int, _ body: @escaping @Sendable () -> Void) -> ID {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        let page = max(4096, Int(sysconf(Int32(_SC_PAGESIZE))))
        let size = max(stackSize, Int(PTHREAD_STACK_MIN) + page)
        pthread_attr_setstacksize(&attributes, (size + page - 1) / page * page)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        let context = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        #if canImport(Darwin)
        var thread: pthread_t?
        #else
        var thread = pthread_t()
        #endif
        let result = pthread_create(&thread, &attributes, { context in HostThread.run(context) }, context)
        guard result == 0 else {
            Unmanaged<Start>.fromOpaque(context).release()
            fatalError("cannot start the thread \(name): error \(result)")
        }
        #if canImport(Darwin)
        return thread!
        #else
        return thread
        #endif
    }

    /// The calling thread.
    package static var current: ID { pthread_self() }

    /// Whether two identities are the same thread.
    package static func same(_ a: ID, _ b: ID) -> Bool { pthread_equal(a, b) != 0 }

    /// Sleeps the calling thread for `seconds`.
    package static func sleep(_ seconds: Double) {
        guard seconds > 0 else { return }
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        var left = timespec()
        while nanosleep(&request, &left) != 0 && errno == EINTR { request = left }
    }

    private static func run(_ context: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
        let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
        lunette_name_this_thread(start.name)
        start.body()
        return nil
    }

    private final class Start {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
}
