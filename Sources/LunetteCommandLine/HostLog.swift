#if canImport(FoundationEssentials)
import FoundationEssentials
import Glibc
#else
import Foundation
#endif
import Logging

/// The host's own log, as both executables set it up: standard error,
/// from the level in $LUNETTE_LOG_LEVEL (trace … critical; default warning).
public enum HostLog {
    public static func bootstrapFromEnvironment() {
        let level = getenv("LUNETTE_LOG_LEVEL").flatMap { Logger.Level(rawValue: String(cString: $0)) } ?? .warning
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}
