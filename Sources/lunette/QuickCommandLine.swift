import ArgumentParser

/// The command lines of the commands run on every save (`timeline`,
/// `check`, `test`), read without ArgumentParser.
///
/// ArgumentParser finds a command's options by reflecting over it
/// (`Mirror`), builds the command's set of arguments several times per
/// line, and parses every line twice more looking for a completion-script
/// request; the first conformance check of each property wrapper's type
/// scans every conformance record of the binary. Reading a line here took
/// `lunette timeline examples/tasks --kind TaskCount` from 25.95 M to
/// 12.55 M instructions (13.87 M were under `parseAsRoot`).
///
/// Each command here reads its plain form: the subcommand, its options as
/// `--name value` (each once, `--config` as often as it is given) and flags
/// as `--name`, and one positional argument, in any order. Anything else —
/// `--name=value`, short names, `--`, `--help`, a value that begins with
/// `-` or is empty, an option given twice, a name it does not know, a
/// value its type refuses, or options that fail their `validate()` — is
/// left to ArgumentParser, which answers as it always has, errors and help
/// included. `QuickCommandLineTests` checks that wherever this reads a
/// command line, ArgumentParser reads the same command from it, every
/// property alike.
enum QuickCommandLine {
    /// The command `arguments` (as `CommandLine.arguments`, program name
    /// first) asks for, or nil when the parser must read them.
    static func command(_ arguments: [String]) -> ParsableCommand? {
        guard arguments.count >= 2 else { return nil }
        var rest = QuickArguments(arguments.dropFirst(2))
        let command: ParsableCommand?
        switch arguments[1] {
        case TimelineCommand.configuration.commandName: command = TimelineCommand(quick: &rest)
        case Check.configuration.commandName: command = Check(quick: &rest)
        case TestCommand.configuration.commandName: command = TestCommand(quick: &rest)
        default: return nil
        }
        guard let command, rest.complete else { return nil }
        return command
    }
}

/// A command line's tokens after the subcommand, taken option by option;
/// `complete` when every token was taken and none was refused.
struct QuickArguments {
    private let tokens: [String]
    private var taken: [Bool]
    private var refused = false

    init(_ tokens: ArraySlice<String>) {
        self.tokens = Array(tokens)
        taken = Array(repeating: false, count: tokens.count)
        // Only long names and plain values: a single `-` starts a short
        // name, `--` ends the options and `=` joins a value to its name,
        // each of which ArgumentParser reads by rules of its own.
        refused = self.tokens.contains { $0.hasPrefix("-") && (!$0.hasPrefix("--") || $0 == "--" || $0.contains("=")) }
    }

    /// Whether every token was taken and nothing was refused.
    var complete: Bool { !refused && !taken.contains(false) }

    /// The values given with `name` (`--name value`), in order.
    mutating func values(_ name: String) -> [String] {
        var found: [String] = []
        for i in tokens.indices where tokens[i] == name && !taken[i] {
            let v = i + 1
            guard v < tokens.count, !taken[v], !tokens[v].isEmpty, !tokens[v].hasPrefix("-") else {
                refused = true
                return []
            }
            taken[i] = true
            taken[v] = true
            found.append(tokens[v])
        }
        return found
    }

    /// The value given with `name`, nil when it is not given (refused when
    /// given twice).
    mutating func value(_ name: String) -> String? {
        let found = values(name)
        if found.count > 1 { refused = true }
        return found.first
    }

    /// The value given with `name` read as `T` reads it from a command line
    /// (refused when `T` does not take it).
    mutating func value<T: ExpressibleByArgument>(_ name: String, as: T.Type) -> T? {
        guard let text = value(name) else { return nil }
        guard let value = T(argument: text) else {
            refused = true
            return nil
        }
        return value
    }

    /// Whether the flag `name` is given (refused when given twice).
    mutating func flag(_ name: String) -> Bool {
        let at = tokens.indices.filter { tokens[$0] == name && !taken[$0] }
        for i in at { taken[i] = true }
        if at.count > 1 { refused = true }
        return !at.isEmpty
    }

    /// The one positional argument: call it after every option, so that
    /// what is left is not an option's value. Refused when none or more
    /// than one is left. (Each command assigns it itself: a helper that set
    /// it through a `WritableKeyPath` would read the wrapped property first,
    /// which traps while it is unset.)
    mutating func positional() -> String? {
        let left = tokens.indices.filter { !taken[$0] }
        guard left.count == 1, !tokens[left[0]].hasPrefix("-"), !tokens[left[0]].isEmpty else {
            refused = true
            return nil
        }
        taken[left[0]] = true
        return tokens[left[0]]
    }

    /// Runs `arguments`' `validate()` on it in place, as the parser does
    /// (so a `validate()` that changed a value would change it here too);
    /// when it fails, the line is refused and the parser says why, in its
    /// words. Each option group runs it as it is read, then the command:
    /// the parser's order.
    mutating func validate<A: ParsableArguments>(_ arguments: inout A) {
        do { try arguments.validate() } catch { refused = true }
    }
}

extension HostOptions {
    init(quick a: inout QuickArguments) {
        self.init()
        policy = a.value("--policy")
        budget = a.value("--budget", as: Int.self)
        budgetScope = a.value("--budget-scope")
        developerMode = a.flag("--dev")
        tz = a.value("--tz")
        pluginPolicy = a.value("--plugin-policy")
        isolation = a.value("--isolation", as: Isolation.self) ?? .inprocess
        a.validate(&self)
    }
}

extension StoreOptions {
    init(quick a: inout QuickArguments) {
        self.init()
        storeDir = a.value("--store-dir")
        a.validate(&self)
    }
}

extension CallCapOption {
    init(quick a: inout QuickArguments) {
        self.init()
        callCap = a.value("--call-cap", as: Double.self) ?? 2
        a.validate(&self)
    }
}

extension TimelineCommand {
    init?(quick a: inout QuickArguments) {
        self.init()
        guard let kind = a.value("--kind") else { return nil }
        self.kind = kind
        family = a.value("--family")
        at = a.value("--at")
        config = a.values("--config")
        storage = StoreOptions(quick: &a)
        json = a.flag("--json")
        host = HostOptions(quick: &a)
        guard let bundle = a.positional() else { return nil }
        self.bundle = bundle
        a.validate(&self)
    }
}

extension Check {
    init?(quick a: inout QuickArguments) {
        self.init()
        json = a.flag("--json")
        at = a.value("--at")
        family = a.value("--family")
        config = a.values("--config")
        storeDir = a.value("--store-dir")
        noLint = a.flag("--no-lint")
        cap = CallCapOption(quick: &a)
        host = HostOptions(quick: &a)
        guard let bundle = a.positional() else { return nil }
        self.bundle = bundle
        a.validate(&self)
    }
}

extension TestCommand {
    init?(quick a: inout QuickArguments) {
        self.init()
        filter = a.value("--filter")
        json = a.flag("--json")
        guard let bundle = a.positional() else { return nil }
        self.bundle = bundle
        a.validate(&self)
    }
}
