import LuaSandbox
import LunetteJSON

extension EvalResult {
    /// One line of JSON: {"file","status","message","traceback","location","limit","elapsedMs","memoryPeakBytes","results","output"}.
    public var jsonLine: String {
        let o = JSONWriter()
        o.object {
            o.field("file", string: file)
            Diagnostic.writeFields(of: diagnostic, to: o)
            o.field("elapsedMs", number: (elapsedMilliseconds * 1000).rounded() / 1000)
            o.field("memoryPeakBytes", integer: memoryPeakBytes)
            o.key("results")
            o.array(results) { $0.writeJSON(to: o) }
            o.field("output", string: output)
        }
        return o.text
    }
}
