import LuaSandbox

/// How `lunette check --json` prints findings.
public enum CheckOutput {
    /// Whether the lint ran: "ran", "not installed" (no luacheck on PATH),
    /// "off" (--no-lint) or "failed" (luacheck could not run; a warning says why).
    public enum Lint: String, Sendable { case ran, notInstalled = "not installed", off, failed }

    public static func json(bundle: String, findings: [Finding], lint: Lint = .off) -> String {
        let o = JSONWriter()
        o.object {
            o.field("bundle", string: bundle)
            o.field("ok", bool: !findings.contains { $0.level == .error })
            o.field("lint", string: lint.rawValue)
            o.key("findings")
            o.array(findings) { finding in
                o.object {
                    o.field("level", string: finding.level.rawValue)
                    o.field("kind", string: finding.kind)
                    o.field("check", string: finding.check)
                    o.field("message", string: finding.message)
                    if let file = finding.file {
                        o.key("location")
                        o.object {
                            o.field("file", string: file)
                            if let line = finding.line { o.field("line", integer: line) }
                            if let column = finding.column { o.field("column", integer: column) }
                        }
                    }
                }
            }
        }
        return o.text
    }
}
