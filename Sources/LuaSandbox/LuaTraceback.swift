/// The script's part of a Lua traceback.
///
/// Lua's `luaL_traceback` lists every frame on the stack, the host's too:
/// its glue chunks (compiled as `[host NAME]`, shown by Lua as
/// `[string "[host NAME]"]:LINE: …`) and the anonymous C functions that
/// start a call (`[C]: in ?`). Those frames say nothing to a script's
/// author and change whenever the host's glue does, so every traceback the
/// host records is trimmed here, once, for every output (text, JSON, HTML).
///
/// What stays: the `stack traceback:` header, the script's own frames
/// (`main.lua:12: in …`), the frames of named C functions the script
/// called (`[C]: in function 'error'`, `[C]: in function 'string.rep'`: they
/// say which library call raised), and Lua's `(...tail calls...)` marks
/// between script frames.
public enum LuaTraceback {
    /// The prefixes of a frame of a host glue chunk (compiled as
    /// `[host NAME]` by `LuaState.register(_:glue:)` and `runGlue`).
    static let hostFramePrefixes = ["[host ", "[string \"[host "]

    /// `traceback` without the host's frames; nil when no frame is left
    /// (the error came from the host's own glue, whose message says where).
    public static func scriptFrames(_ traceback: String) -> String? {
        var header: [Substring] = []
        var all: [Substring] = []
        for line in traceback.split(separator: "\n", omittingEmptySubsequences: false) {
            let frame = line.drop { $0 == "\t" || $0 == " " }
            if frame.isEmpty { continue }
            if !line.hasPrefix("\t") && all.isEmpty { header.append(line) } else { all.append(frame) }
        }
        // Innermost first: a C frame belongs to the host when its caller (the next line) does.
        var frames: [Substring] = []
        for (i, frame) in all.enumerated() {
            if isHostFrame(frame) { continue }
            if frame.hasPrefix("[C]:"), i + 1 < all.count, isHostFrame(all[i + 1]) { continue }
            frames.append("\t" + frame)
        }
        // A tail-call mark means something only between two kept frames.
        while let first = frames.first, first.contains("(...tail calls...)") { frames.removeFirst() }
        while let last = frames.last, last.contains("(...tail calls...)") { frames.removeLast() }
        guard frames.contains(where: { !$0.contains("[C]:") }) else { return nil }
        return (header + frames).joined(separator: "\n")
    }

    /// A frame of the host's glue, or an anonymous C function (the host's
    /// call trampolines and the wrappers its glue pushes).
    static func isHostFrame(_ frame: Substring) -> Bool {
        hostFramePrefixes.contains { frame.hasPrefix($0) } || frame.hasPrefix("[C]: in ?")
    }
}
