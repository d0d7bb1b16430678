#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LunetteSystem

/// A time zone's offsets from UTC, read from the system's tz database: a
/// TZif file (RFC 8536) under `/usr/share/zoneinfo`, its transitions and,
/// past the last of them, the POSIX TZ rule of its footer.
///
/// Why not Foundation's `TimeZone` and `Calendar`: on Linux, making the
/// first of them costs a process ≈ 1.9 M instructions (Foundation's caches
/// instantiate their generic types by name, and ICU loads its zone data),
/// most of `lunette timeline`'s start after Lua's own work; every
/// calendar question after that is thousands more. Here a zone is one file
/// read and a binary search per question. `HostCalendar` falls back to
/// Foundation for a zone with no such file and no fixed offset in its name
/// (no tzdata installed, or a name only ICU knows), and ZoneRulesTests
/// check the two agree.
struct ZoneRules: Sendable {
    /// The zone's name as the host was given it ("Europe/Paris", "UTC").
    let identifier: String
    /// UTC instants (seconds) where the offset changes, ascending.
    private let transitions: [Int64]
    /// The offset (seconds east of UTC) from each transition on.
    private let offsets: [Int32]
    /// The offset before the first transition (TZif's time type 0).
    private let initialOffset: Int32
    /// The rule after the last transition, when the file has one.
    private let rule: PosixRule?
    /// For a fixed offset read from its name ("GMT+0200"), the POSIX TZ
    /// value meaning the same ("<+0200>-2"), for libc's `localtime` (Lua's
    /// `os.date`), which reads "GMT+2" with the opposite sign; nil for a
    /// zone of the database, whose name libc reads itself.
    let posixTZ: String?

    /// A zone with one offset for ever (UTC).
    init(fixed identifier: String, offset: Int32, posixTZ: String? = nil) {
        self.identifier = identifier
        transitions = []
        offsets = []
        initialOffset = offset
        rule = nil
        self.posixTZ = posixTZ
    }

    /// The rules of the tz database's zone `name`, or nil when there is no
    /// such zone file, it is not one this reader understands (TZif with
    /// leap seconds, a footer without a rule it can compute), or the name
    /// is not a zone name (absolute, with "..", or odd characters).
    init?(named name: String, database: String = ZoneRules.database) {
        guard Self.isZoneName(name), let bytes = Self.read(database + "/" + name),
              let parsed = Self.parse(bytes) else { return nil }
        identifier = name
        (transitions, offsets, initialOffset, rule) = parsed
        posixTZ = nil
    }

    /// A fixed offset written as Foundation's `TimeZone(identifier:)`
    /// reads one: "GMT" or "UTC", a sign, then hours (one or two digits),
    /// hours ":" (or ".") minutes (two digits), or four digits "hhmm"; at most 18
    /// hours. Named as Foundation names it: "GMT+0230", "GMT-0500", and
    /// "GMT" for a zero offset. Nil for any other text. (Foundation also
    /// takes 60 minutes as the next hour, "GMT-12:60"; this does not.)
    init?(offsetName name: String) {
        let bytes = Array(name.utf8)
        guard bytes.count >= 5, bytes[0 ..< 3] == Array("GMT".utf8)[...] || bytes[0 ..< 3] == Array("UTC".utf8)[...],
              bytes[3] == UInt8(ascii: "+") || bytes[3] == UInt8(ascii: "-") else { return nil }
        let digits = bytes[4...]
        func number(_ part: ArraySlice<UInt8>) -> Int? {
            guard !part.isEmpty, part.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return part.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        }
        let hours: Int, minutes: Int
        if let colon = digits.firstIndex(where: { $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }) {
            guard (1 ... 2).contains(colon - digits.startIndex), digits.endIndex - colon == 3,
                  let h = number(digits[..<colon]), let m = number(digits[(colon + 1)...]) else { return nil }
            (hours, minutes) = (h, m)
        } else if digits.count == 4, let h = number(digits.prefix(2)), let m = number(digits.suffix(2)) {
            (hours, minutes) = (h, m)
        } else if digits.count <= 2, let h = number(digits) {
            (hours, minutes) = (h, 0)
        } else {
            return nil
        }
        let magnitude = hours * 3600 + minutes * 60
        guard minutes < 60, magnitude <= 18 * 3600 else { return nil }
        let negative = bytes[3] == UInt8(ascii: "-")
        if magnitude == 0 { self.init(fixed: "GMT", offset: 0); return }
        let hhmm = String(hours * 100 + minutes)
        let digits4 = String(repeating: "0", count: 4 - hhmm.utf8.count) + hhmm
        let text = "GMT" + (negative ? "-" : "+") + digits4
        // POSIX counts hours west of Greenwich: the sign flips.
        let posix = "<" + (negative ? "-" : "+") + digits4 + ">" + (negative ? "" : "-") + String(hours) + (minutes > 0 ? ":" + String(minutes / 10) + String(minutes % 10) : "")
        self.init(fixed: text, offset: Int32(negative ? -magnitude : magnitude), posixTZ: posix)
    }

    /// Where the tz database lives (`TZDIR` when set, as in glibc).
    static var database: String {
        if let dir = getenv("TZDIR"), dir.pointee != 0 { return String(cString: dir) }
        return "/usr/share/zoneinfo"
    }

    /// The system's zone: its name from `/etc/localtime`'s link into the
    /// database; or, when `/etc/localtime` is a copy (as in many
    /// containers), Debian's `/etc/timezone` when the zone it names has the
    /// same bytes. Nil otherwise (`HostCalendar` then asks Foundation).
    static func system() -> ZoneRules? {
        var buffer = [CChar](repeating: 0, count: 1024)
        let n = readlink("/etc/localtime", &buffer, buffer.count - 1)
        if n > 0 {
            let target = buffer[..<n].map { UInt8(bitPattern: $0) }
            let marker = Array("zoneinfo/".utf8)
            guard let at = (0...max(0, target.count - marker.count)).first(where: { target[$0...].starts(with: marker) }) else { return nil }
            var name = String(decoding: target[(at + marker.count)...], as: UTF8.self)
            // posix/ is the same zone under another folder.
            if name.hasPrefix("posix/") { name.removeFirst(6) }
            return ZoneRules(named: name)
        }
        guard let local = read("/etc/localtime"), let named = read("/etc/timezone") else { return nil }
        let name = String(decoding: named, as: UTF8.self).split(whereSeparator: { $0 == "\n" || $0 == " " }).first.map(String.init) ?? ""
        guard isZoneName(name), read(database + "/" + name) == local else { return nil }
        return ZoneRules(named: name)
    }

    // MARK: Questions

    /// Seconds east of UTC at `t` (whole seconds since 1970, UTC).
    func offset(at t: Int64) -> Int32 {
        if let rule, t > ruleStart { return rule.offset(at: t) }
        let after = transitionsBefore(t, including: true)
        return after == 0 ? initialOffset : offsets[after - 1]
    }

    /// How many transitions come before `t` (or at it, `including`): a
    /// binary search.
    private func transitionsBefore(_ t: Int64, including: Bool) -> Int {
        var lo = 0, hi = transitions.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if transitions[mid] < t || (including && transitions[mid] == t) { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// Where the footer's rule takes over: after the last transition.
    private var ruleStart: Int64 { transitions.last ?? Int64.min }

    /// The instant of local wall-clock time `local` (seconds since 1970 as
    /// if the zone were UTC). A time that happens twice (clocks turned
    /// back) is its earlier instant, or the one at offset `prefer` when that
    /// is one of them; a time that does not happen (clocks turned forward)
    /// is read with the offset before the change, which lands it as far past
    /// the change as it was into the gap. These are Foundation's choices
    /// (`Calendar.date(from:)`, `date(byAdding:)`), which the tests compare.
    func instant(local: Int64, prefer: Int32? = nil) -> Int64 {
        // Offsets are within ±26 hours: every instant local can be lies in this window.
        let window: Int64 = 2 * 86_400
        var segmentStart = local - window
        var current = offset(at: segmentStart)
        var found: Int64?
        var gap: Int64?
        func consider(_ offset: Int32, from start: Int64, to end: Int64) {
            let t = local - Int64(offset)
            guard t >= start, t < end else { return }
            if found == nil || offset == prefer { found = t }
        }
        forEachTransition(from: segmentStart, to: local + window) { at, next in
            consider(current, from: segmentStart, to: at)
            // local falls in this change's gap: the wall clock jumped over it.
            if gap == nil, local >= at + Int64(current), local < at + Int64(next) { gap = local - Int64(current) }
            segmentStart = at
            current = next
        }
        consider(current, from: segmentStart, to: local + window + 1)
        return found ?? gap ?? local - Int64(current)
    }

    /// Calls `body` with each change of offset in [from, to): its instant
    /// and the offset after it, in order.
    private func forEachTransition(from: Int64, to: Int64, _ body: (Int64, Int32) -> Void) {
        var i = transitionsBefore(from, including: false)
        while i < transitions.count, transitions[i] < to {
            body(transitions[i], offsets[i])
            i += 1
        }
        guard let rule, to > ruleStart else { return }
        rule.forEachTransition(from: ruleStart == Int64.min ? from : max(from, ruleStart + 1), to: to, body)
    }

    // MARK: Reading TZif

    static func isZoneName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count < 256, !name.hasPrefix("/"), !name.hasSuffix("/") else { return false }
        for part in name.split(separator: "/", omittingEmptySubsequences: false) where part.isEmpty || part == "." || part == ".." {
            return false
        }
        return name.utf8.allSatisfy { c in
            (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39)
                || c == 0x2F || c == 0x5F || c == 0x2D || c == 0x2B  // / _ - +
        }
    }

    /// The whole file at `path` (tz files are a few KB; one over 1 MB is refused).
    static func read(_ path: String) -> [UInt8]? { fileBytes(atPath: path, limit: 1 << 20) }

    private typealias Parsed = (transitions: [Int64], offsets: [Int32], initial: Int32, rule: PosixRule?)

    /// Reads a TZif file of version 2 or later (64-bit times and a footer)
    /// or version 1 (32-bit times only). Nil for anything malformed, and for
    /// files with leap seconds ("right/" zones: their times are not POSIX times).
    private static func parse(_ bytes: [UInt8]) -> Parsed? {
        var reader = ByteReader(bytes: bytes)
        guard let v1 = reader.header() else { return nil }
        if v1.version == 0 {
            return block(&reader, v1, timeSize: 4).map { ($0.transitions, $0.offsets, $0.initial, nil) }
        }
        // Skip the 32-bit block; the 64-bit one follows with its own header.
        guard reader.skip(v1.blockSize(timeSize: 4)), let v2 = reader.header(), v2.version != 0,
              let data = block(&reader, v2, timeSize: 8) else { return nil }
        // The footer: "\n" TZ string "\n".
        guard reader.next() == 0x0A, let end = reader.bytes[reader.i...].firstIndex(of: 0x0A) else { return nil }
        let footer = String(decoding: reader.bytes[reader.i..<end], as: UTF8.self)
        var rule: PosixRule?
        if !footer.isEmpty {
            guard let parsed = PosixRule(footer) else { return nil }
            rule = parsed
        }
        return (data.transitions, data.offsets, data.initial, rule)
    }

    private static func block(_ reader: inout ByteReader, _ header: Header, timeSize: Int) -> (transitions: [Int64], offsets: [Int32], initial: Int32)? {
        guard header.leapCount == 0, header.typeCount > 0, reader.remaining >= header.blockSize(timeSize: timeSize) else { return nil }
        var times: [Int64] = []
        times.reserveCapacity(header.timeCount)
        for _ in 0..<header.timeCount { times.append(timeSize == 8 ? reader.int64() : Int64(reader.int32())) }
        var indices: [Int] = []
        indices.reserveCapacity(header.timeCount)
        for _ in 0..<header.timeCount { indices.append(Int(reader.next())) }
        var typeOffsets: [Int32] = []
        for _ in 0..<header.typeCount {
            typeOffsets.append(reader.int32())
            _ = reader.skip(2)   // isdst, desigidx
        }
        _ = reader.skip(header.charCount + header.standardCount + header.utcCount)
        guard indices.allSatisfy({ $0 < typeOffsets.count }), zip(times, times.dropFirst()).allSatisfy({ $0 < $1 }) else { return nil }
        return (times, indices.map { typeOffsets[$0] }, typeOffsets[0])
    }

    private struct Header {
        var version: UInt8
        var utcCount, standardCount, leapCount, timeCount, typeCount, charCount: Int
        func blockSize(timeSize: Int) -> Int {
            timeCount * (timeSize + 1) + typeCount * 6 + charCount + leapCount * (timeSize + 4) + standardCount + utcCount
        }
    }

    private struct ByteReader {
        let bytes: [UInt8]
        var i = 0
        var remaining: Int { bytes.count - i }
        mutating func next() -> UInt8 {
            guard i < bytes.count else { return 0 }
            defer { i += 1 }
            return bytes[i]
        }
        mutating func skip(_ n: Int) -> Bool {
            guard n >= 0, n <= remaining else { return false }
            i += n
            return true
        }
        mutating func int32() -> Int32 {
            var v: UInt32 = 0
            for _ in 0..<4 { v = v << 8 | UInt32(next()) }
            return Int32(bitPattern: v)
        }
        mutating func int64() -> Int64 {
            var v: UInt64 = 0
            for _ in 0..<8 { v = v << 8 | UInt64(next()) }
            return Int64(bitPattern: v)
        }
        mutating func header() -> Header? {
            guard remaining >= 44, bytes[i] == 0x54, bytes[i + 1] == 0x5A, bytes[i + 2] == 0x69, bytes[i + 3] == 0x66 else { return nil }
            i += 4
            let version = next()
            guard version == 0 || (version >= 0x32 && version <= 0x39) else { return nil }
            i += 15
            let counts = (0..<6).map { _ in Int(UInt32(bitPattern: int32())) }
            guard counts.allSatisfy({ $0 < 1 << 20 }) else { return nil }
            return Header(version: version, utcCount: counts[0], standardCount: counts[1], leapCount: counts[2],
                          timeCount: counts[3], typeCount: counts[4], charCount: counts[5])
        }
    }
}

/// A POSIX TZ rule, as in a TZif footer: "CET-1CEST,M3.5.0,M10.5.0/3",
/// "<-03>3", "AEST-10AEDT,M10.1.0,M4.1.0/3". Offsets here are east of UTC
/// (POSIX writes them west).
struct PosixRule: Sendable, Equatable {
    var standard: Int32
    /// Daylight time's offset and the dates it starts and ends, when it has one.
    var daylight: (offset: Int32, start: Change, end: Change)?

    static func == (a: PosixRule, b: PosixRule) -> Bool {
        a.standard == b.standard && a.daylight?.offset == b.daylight?.offset
            && a.daylight?.start == b.daylight?.start && a.daylight?.end == b.daylight?.end
    }

    /// A yearly change: a day of the year and a local time of day (seconds,
    /// which may be negative or past 24 hours).
    struct Change: Sendable, Equatable {
        enum Day: Sendable, Equatable {
            /// Jn: 1…365, February 29 never counted.
            case julian(Int)
            /// n: 0…365, February 29 counted in leap years.
            case zeroBased(Int)
            /// Mm.w.d: weekday d (0 = Sunday) of week w (5 = the last) of month m.
            case monthWeek(month: Int, week: Int, weekday: Int)
        }
        var day: Day
        var time: Int64

        /// Days since 1970-01-01 of this change's date in `year`.
        func days(in year: Int) -> Int64 {
            let january1 = ISODate.daysFromCivil(year: year, month: 1, day: 1)
            let leap = ISODate.daysIn(month: 2, year: year) == 29
            switch day {
            case .julian(let n):
                return january1 + Int64(n - 1) + (leap && n >= 60 ? 1 : 0)
            case .zeroBased(let n):
                return january1 + Int64(n)
            case .monthWeek(let month, let week, let weekday):
                let first = ISODate.daysFromCivil(year: year, month: month, day: 1)
                var day = 1 + (weekday - ISODate.weekday(ofDay: first) + 7) % 7 + (week - 1) * 7
                let length = ISODate.daysIn(month: month, year: year)
                while day > length { day -= 7 }
                return first + Int64(day - 1)
            }
        }
    }

    init?(_ text: String) {
        var p = Parser(bytes: Array(text.utf8))
        guard p.name(), let std = p.offset() else { return nil }
        standard = -std
        if p.atEnd { daylight = nil; return }
        guard p.name() else { return nil }
        var dst = standard + 3600
        if let given = p.offset() { dst = -given }
        // A daylight time with no rule (POSIX's implementation-defined default) is not computed here.
        guard p.skip(0x2C), let start = p.change(), p.skip(0x2C), let end = p.change(), p.atEnd else { return nil }
        // "Daylight time all year" (zic writes it as a start on January 1 and an
        // end after the year's last hour) would need the two years' changes
        // ordered otherwise; no zone's footer has it today, and such a zone
        // falls back to Foundation.
        let startsJan1 = start.days(in: 2001) == ISODate.daysFromCivil(year: 2001, month: 1, day: 1) && start.time <= 0
        let endsDec31 = end.days(in: 2001) == ISODate.daysFromCivil(year: 2001, month: 12, day: 31) && end.time >= 86_400
        if startsJan1 && endsDec31 { return nil }
        daylight = (dst, start, end)
    }

    /// Seconds east of UTC at `t`: the offset after the last change at or
    /// before it (a year has two; the window holds at least one).
    func offset(at t: Int64) -> Int32 {
        var result = standard
        forEachTransition(from: t - 400 * 86_400, to: t + 1) { _, offset in result = offset }
        return result
    }

    /// Calls `body` with each change in [from, to), in order (each year's
    /// two, year after year; nothing allocated).
    func forEachTransition(from: Int64, to: Int64, _ body: (Int64, Int32) -> Void) {
        guard let daylight, from < to else { return }
        let first = ISODate.civil(fromDays: ISODate.floorDiv(from, 86_400)).0 - 1
        let last = ISODate.civil(fromDays: ISODate.floorDiv(to, 86_400)).0 + 1
        for year in first...last {
            // A change's time is local time before it (daylight starts at standard time).
            let start = (daylight.start.days(in: year) * 86_400 + daylight.start.time - Int64(standard), daylight.offset)
            let end = (daylight.end.days(in: year) * 86_400 + daylight.end.time - Int64(daylight.offset), standard)
            let (a, b) = start.0 <= end.0 ? (start, end) : (end, start)
            if a.0 >= from && a.0 < to { body(a.0, a.1) }
            if b.0 >= from && b.0 < to { body(b.0, b.1) }
        }
    }


    private struct Parser {
        let bytes: [UInt8]
        var i = 0
        var atEnd: Bool { i == bytes.count }
        func peek() -> UInt8? { i < bytes.count ? bytes[i] : nil }
        mutating func skip(_ c: UInt8) -> Bool {
            guard peek() == c else { return false }
            i += 1
            return true
        }
        /// A zone abbreviation: three or more letters, or anything in <…>.
        mutating func name() -> Bool {
            if skip(0x3C) {
                let start = i
                while let c = peek(), c != 0x3E { i += 1 }
                guard skip(0x3E) else { return false }
                return i - start >= 4
            }
            let start = i
            while let c = peek(), (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) { i += 1 }
            return i - start >= 3
        }
        mutating func number() -> Int? {
            var value = 0, digits = 0
            while let c = peek(), c >= 0x30, c <= 0x39, digits < 4 {
                value = value * 10 + Int(c - 0x30)
                digits += 1
                i += 1
            }
            return digits == 0 ? nil : value
        }
        /// [+-]hh[:mm[:ss]] as seconds (signed as written).
        mutating func offset() -> Int32? {
            var sign: Int64 = 1
            if skip(0x2D) { sign = -1 } else { _ = skip(0x2B) }
            guard let h = number(), h <= 167 else { return nil }
            var seconds = Int64(h) * 3600
            if skip(0x3A) {
                guard let m = number(), m < 60 else { return nil }
                seconds += Int64(m) * 60
                if skip(0x3A) {
                    guard let s = number(), s < 60 else { return nil }
                    seconds += Int64(s)
                }
            }
            return Int32(sign * seconds)
        }
        mutating func change() -> PosixRule.Change? {
            let day: PosixRule.Change.Day
            if skip(0x4A) {
                guard let n = number(), (1...365).contains(n) else { return nil }
                day = .julian(n)
            } else if skip(0x4D) {
                guard let m = number(), (1...12).contains(m), skip(0x2E), let w = number(), (1...5).contains(w),
                      skip(0x2E), let d = number(), (0...6).contains(d) else { return nil }
                day = .monthWeek(month: m, week: w, weekday: d)
            } else {
                guard let n = number(), (0...365).contains(n) else { return nil }
                day = .zeroBased(n)
            }
            var time: Int64 = 7200
            if skip(0x2F) {
                guard let t = offset() else { return nil }
                time = Int64(t)
            }
            return PosixRule.Change(day: day, time: time)
        }
    }
}
