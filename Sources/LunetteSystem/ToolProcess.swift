#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CWorkerShims

/// A program the host runs and reads to its end (luacheck): what
/// Foundation's `Process` and `Pipe` were used for, on `posix_spawn`.
package enum ToolProcess {
    package enum Ending: Equatable, Sendable {
        /// It exited with this status.
        case exited(Int32)
        /// A signal ended it (not ours).
        case killed(Int32)
        /// It ran past the timeout and was stopped (SIGKILL to its process group).
        case timedOut
        /// How it ended could not be read (`waitpid` failed with this errno).
        case lost(Int32)
    }

    package struct CannotStart: Error, CustomStringConvertible {
        package let description: String
    }

    /// Runs `executable` (a path; a relative one is taken from the caller's
    /// current folder, not `directory`) with `arguments` in `directory`, with
    /// `environment`, its standard input /dev/null, its standard error
    /// `errorDescriptor`, and waits for it to end, up to `timeout` seconds.
    /// Returns how it ended and everything it wrote to standard output.
    package static func run(_ executable: String, arguments: [String], environment: [String: String],
                            directory: String, errorDescriptor: Int32, timeout: Double) throws(CannotStart) -> (ending: Ending, output: [UInt8]) {
        var executable = executable
        if !executable.hasPrefix("/"), let here = getcwd(nil, 0) {
            executable = String(cString: here) + "/" + executable
            free(here)
        }
        let argv = ([executable] + arguments).map { strdup($0) }
        let envp = environment.map { strdup("\($0.key)=\($0.value)") }
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }
        var fromChild: Int32 = -1
        let pid = (argv + [nil]).withUnsafeBufferPointer { a in
            (envp + [nil]).withUnsafeBufferPointer { e in
                lunette_spawn_tool(executable, a.baseAddress, e.baseAddress, directory, errorDescriptor, &fromChild)
            }
        }
        guard pid > 0 else { throw CannotStart(description: "cannot start \(executable): \(String(cString: strerror(errno)))") }
        defer { close(fromChild) }
        let deadline = MonotonicClock.nanoseconds() + Int64(min(max(timeout, 0), 1e9) * 1e9)
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        var stopped = false
        reading: while true {
            let left = Double(deadline - MonotonicClock.nanoseconds()) / 1e9
            if left <= 0 {
                kill(-pid, SIGKILL)    // it leads its own process group: its children go too
                stopped = true
                break
            }
            var ready = pollfd(fd: fromChild, events: Int16(POLLIN), revents: 0)
            let waited = poll(&ready, 1, Int32(min(left * 1000 + 1, 60_000)))
            if waited < 0 && errno != EINTR { break }
            if waited <= 0 { continue }
            let n = buffer.withUnsafeMutableBytes { read(fromChild, $0.baseAddress, $0.count) }
            switch n {
            case 0: break reading
            case ..<0: if errno == EINTR || errno == EAGAIN { continue } else { break reading }
            default: output += buffer[0..<n]
            }
        }
        // Its output ended; it may still run (a child kept its own copy of
        // the pipe closed, or it closed standard output and went on): the
        // deadline holds for its exit too.
        var status: Int32 = 0
        while !stopped {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid { return (Self.ending(status), output) }
            if reaped < 0 && errno != EINTR { return (.lost(errno), output) }
            if MonotonicClock.nanoseconds() >= deadline {
                kill(-pid, SIGKILL)
                stopped = true
                break
            }
            HostThread.sleep(0.001)
        }
        // Stopped: reaped now (its group was killed first, so its pid is not reused meanwhile).
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return (.timedOut, output)
    }

    /// How a process ended, from its `waitpid` status.
    private static func ending(_ status: Int32) -> Ending {
        let signal = status & 0x7F
        return signal == 0 ? .exited((status >> 8) & 0xFF) : .killed(signal)
    }
}
