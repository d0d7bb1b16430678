/// Pushes `LuaValue`s onto a Lua stack.
///
/// Runs in host mode (the state's memory cap is not enforced), where the
/// stack operations used here can only fail by a real out-of-memory, which
/// the allocator turns into an abort rather than a longjmp through Swift.
/// Keys are strings or array indices, never nil or NaN, so raw sets cannot raise.
struct ValuePusher {
    let stack: LuaStack
    let maxDepth: Int

    func push(_ value: LuaValue) throws(PathedValueError) {
        try push(value, depth: 0)
    }

    private func push(_ value: LuaValue, depth: Int) throws(PathedValueError) {
        guard stack.reserve(3) else {
            throw PathedValueError(reason: "out of Lua stack space while pushing the value")
        }
        switch value {
        case .nil:
            stack.pushNil()
        case .boolean(let b):
            stack.push(b)
        case .integer(let i):
            stack.push(i)
        case .number(let d):
            stack.push(d)
        case .string(let s):
            stack.push(s)
        case .table(let t):
            if depth >= maxDepth {
                throw PathedValueError(reason: "tables are nested more than \(maxDepth) deep")
            }
            stack.pushTable(arrayCapacity: t.array.count, fieldCapacity: t.fields.count)
            for (offset, element) in t.array.enumerated() {
                do { try push(element, depth: depth + 1) } catch {
                    stack.pop()
                    throw error.adding(.index(Int64(offset + 1)))
                }
                stack.rawSet(-2, index: Int64(offset + 1))
            }
            for entry in t.fields {
                stack.push(entry.key)
                do { try push(entry.value, depth: depth + 1) } catch {
                    stack.pop(2)
                    throw error.adding(.field(entry.key))
                }
                stack.rawSet(-3)
            }
        }
    }
}
