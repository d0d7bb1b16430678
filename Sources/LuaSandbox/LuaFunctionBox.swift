import CLuaShims

/// The Swift side of the trampoline: keeps a Swift function body alive for
/// its state and runs it when a script calls it.
///
/// The C trampoline (`lunette_trampoline` in CLuaShims) enters `invoke` in
/// host mode and, after it has returned, raises what it asked for — or the
/// call's kill, if one happened while the body ran, whatever the body did
/// with that error. No Lua error ever unwinds this frame.
final class LuaFunctionBox {
    unowned(unsafe) let state: LuaState
    let name: String
    let body: Body

    /// What the function returns: any number of results in an array, or
    /// exactly one, pushed without an array.
    enum Body {
        case results(LuaFunctionBody)
        case one(LuaOneResultBody)

        /// The body as a `LuaFunctionBody`.
        var results: LuaFunctionBody {
            switch self {
            case .results(let body): return body
            case .one(let body): return { arguments in [try body(arguments)] }
            }
        }
    }
    /// Called from a host glue wrapper (see `register(_:glue:)`).
    let viaWrapper: Bool
    /// Runs while the state closes (the log sink); every other function
    /// refuses then, because its host may already be gone.
    let runsWhileClosing: Bool
    /// Its calls are not counted as effects (`LuaModule.replayable`).
    let replayable: Bool

    init(state: LuaState, name: String, viaWrapper: Bool, runsWhileClosing: Bool = false, replayable: Bool = false,
         body: Body) {
        self.state = state
        self.name = name
        self.viaWrapper = viaWrapper
        self.runsWhileClosing = runsWhileClosing
        self.replayable = replayable
        self.body = body
    }

    /// Installs the C trampoline's entry point (once per process).
    static let installDispatcher: Void = {
        LuaLifecycle.setDispatch { L, raw in
            let box = Unmanaged<LuaFunctionBox>.fromOpaque(raw!).takeUnretainedValue()
            return box.invoke(LuaStack(L!))
        }
    }()

    /// Runs the body; returns the number of results pushed, or a LUNETTE_RAISE
    /// code with the error value on top. Never raises itself.
    func invoke(_ stack: LuaStack) -> Int32 {
        if state.isClosing && !runsWhileClosing { return refuseWhileClosing(stack) }
        if !replayable { state.host.pointee.effects &+= 1 }
        let saved = state.current
        state.current = stack.L
        defer { state.current = saved }
        let arguments = LuaArguments(state: state, stack: stack, count: Int(stack.top), functionName: name, argumentOffset: viaWrapper ? 1 : 0)
        let results: [LuaValue]
        do {
            switch body {
            case .results(let body):
                results = try body(arguments)
            case .one(let body):
                return push(one: try body(arguments), on: stack)
            }
        } catch let error as LuaFunctionError {
            return raise(stack, error.message, where: error.addsPosition)
        } catch let error as LuaError {
            return reraise(stack, error)
        } catch {
            return raise(stack, String(describing: error), where: true)
        }
        let base = stack.top
        guard stack.reserve(results.count + 1) else {
            return raise(stack, "'\(name)' returned too many results (\(results.count))", where: true)
        }
        let pusher = ValuePusher(stack: stack, maxDepth: state.conversionLimits.maxDepth)
        for (i, result) in results.enumerated() {
            if let raised = push(result, root: results.count == 1 ? "result" : "result #\(i + 1)", with: pusher, base: base) {
                return raised
            }
        }
        return Int32(results.count)
    }

    @inline(never)
    private func refuseWhileClosing(_ stack: LuaStack) -> Int32 {
        raise(stack, "'\(name)' cannot run while the Lua state closes", where: true)
    }

    /// Pushes the one result of a `.one` body; returns 1, or a raise code.
    private func push(one result: LuaValue, on stack: LuaStack) -> Int32 {
        let base = stack.top
        guard stack.reserve(2) else {
            return raise(stack, "'\(name)': out of Lua stack space for its result", where: true)
        }
        return push(result, root: "result", with: ValuePusher(stack: stack, maxDepth: state.conversionLimits.maxDepth), base: base) ?? 1
    }

    /// Pushes `result` (named `root` in an error); nil when it is pushed,
    /// else the raise code, with the stack back at `base`.
    private func push(_ result: LuaValue, root: @autoclosure () -> String, with pusher: ValuePusher, base: Int32) -> Int32? {
        do { try pusher.push(result) } catch {
            pusher.stack.setTop(base)
            return raise(pusher.stack, badValue(error, root()), where: true)
        }
        return nil
    }

    @inline(never)
    private func badValue(_ error: PathedValueError, _ root: String) -> String {
        "'\(name)' returned a bad value: \(error.rooted(at: root))"
    }

    @inline(never)
    private func raise(_ stack: LuaStack, _ message: String, where: Bool) -> Int32 {
        stack.push(message)
        return `where` ? (viaWrapper ? LUNETTE_RAISE_WHERE_CALLER : LUNETTE_RAISE_WHERE) : LUNETTE_RAISE
    }

    /// Passes an error from a nested call on to the script, keeping its
    /// innermost traceback and, for non-string errors, the error object.
    @inline(never)
    private func reraise(_ stack: LuaStack, _ error: LuaError) -> Int32 {
        switch error {
        case .runtime(let e):
            if let value = e.value, (try? ValuePusher(stack: stack, maxDepth: state.conversionLimits.maxDepth).push(value)) != nil {
                // pushed the original error object
            } else {
                stack.push(e.message)
            }
            if let traceback = e.traceback {
                stack.push(traceback)
                stack.keepTraceback()
            }
            return LUNETTE_RAISE
        default:
            stack.push(error.message)
            return LUNETTE_RAISE
        }
    }
}
