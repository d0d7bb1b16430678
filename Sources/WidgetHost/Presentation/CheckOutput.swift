import LuaSandbox

/// How `lunette check --json` prints findings.
public enum CheckOutput {
    public static func json(bundle: String, findings: [Finding]) -> String {
        let o = JSONWriter()
        o.object {
            o.field("bundle", string: bundle)
            o.field("ok", bool: !findings.contains { $0.level == .error })
            o.key("findings")
            o.array(findings) { finding in
                o.object {
                    o.field("level", string: finding.level.rawValue)
                    o.field("kind", string: finding.kind)
                    o.field("check", string: finding.check)
                    o.field("message", string: finding.message)
                }
            }
        }
        return o.text
    }
}
