import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import WidgetHost

/// `lunette store get|set|remove|keys|files`: the app's side of the store, from a shell.
struct Store: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Read and write an app group's store, as the app would.",
        discussion: """
            The store holds what the app and its scripts share: typed values \
            under keys, and files. Values are given and printed as JSON: 42 is an \
            integer, 42.0 a double, "42" a string; bytes are {"$bytes": "<base64>"}. \
            The store root is --store-dir, else $LUNETTE_STORE, else \
            ~/.lunette/store. Reading a group that does not exist yet creates \
            nothing. See docs/store.md.
            Exit status: 0 on success, 1 when a key is missing or the store \
            fails (e.g. the database file is not a store), 2 for usage errors.
            """,
        subcommands: [Get.self, Set.self, Remove.self, Keys.self, Files.self]
    )

    struct Options: ParsableArguments {
        @Option(help: ArgumentHelp("The app group, e.g. group.com.example.tasks.", valueName: "group"))
        var group: String

        @Option(name: .customLong("store-dir"), help: ArgumentHelp("Store root (default: $LUNETTE_STORE, else ~/.lunette/store).", valueName: "dir"))
        var storeDir: String?

        @Flag(help: "Print JSON.")
        var json = false

        func validate() throws {
            if let problem = StoreText.groupProblem(group) { throw ValidationError("--group \(group): \(problem)") }
        }

        /// The group, or nil when reading one that does not exist.
        func open(create: Bool) throws -> StoreGroup? {
            let store = SharedStore(root: storeDir)
            if !create && !store.exists(group) { return nil }
            return try store.group(group, create: create)
        }
    }

    static func validateKey(_ key: String) throws {
        if let problem = StoreText.keyProblem(key) { throw ValidationError("key \(StoreText.quoted(key)): \(problem)") }
    }

    /// Runs `body`, turning store errors into a message on stderr and exit status 1.
    static func reporting(_ body: () throws -> Void) throws {
        do { try body() } catch let error as StoreError {
            FileOutput.standardError.write("lunette store: \(error.message)\n")
            throw ExitCode(1)
        }
    }

    /// Prints `{"group": G, <fields>}` on one line; `fields` writes the rest.
    static func printJSON(group: String, _ fields: (JSONWriter) -> Void) {
        let o = JSONWriter()
        o.object {
            o.field("group", string: group)
            fields(o)
        }
        FileOutput.standardOutput.write(o.text + "\n")
    }

    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "get", abstract: "Print the value under a key.")
        @OptionGroup var options: Options
        @Argument(help: "The key.") var key: String

        func validate() throws { try Store.validateKey(key) }

        func run() throws {
            try Store.reporting {
                let value = try options.open(create: false)?.get(key)
                if options.json {
                    Store.printJSON(group: options.group) { o in
                        o.field("key", string: key)
                        o.field("type", string: value?.kindName)
                        o.key("value")
                        if let value { value.writeJSON(to: o) } else { o.null() }
                    }
                } else if let value {
                    FileOutput.standardOutput.write(value.json + "\n")
                }
                if value == nil {
                    if !options.json { FileOutput.standardError.write("lunette store: no key \(StoreText.quoted(key)) in group \(options.group)\n") }
                    throw ExitCode(1)
                }
            }
        }
    }

    struct Set: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Set a key to a value given as JSON.",
            discussion: "VALUE is JSON: set count 3, set title '\"Buy milk\"', set tags '[\"a\",\"b\"]'. With --string, VALUE is taken as text as it is."
        )
        @OptionGroup var options: Options
        @Argument(help: "The key.") var key: String
        // Every unrecognized word, so that a negative number needs no "--".
        @Argument(parsing: .allUnrecognized, help: "The value, as JSON (or text with --string); -5 works as it is.") var values: [String] = []
        var value: String { values.first ?? "" }
        @Flag(help: "Take VALUE as a string as it is, not as JSON.") var string = false

        func validate() throws {
            try Store.validateKey(key)
            guard values.count == 1 else {
                throw ValidationError(values.isEmpty ? "store set needs a VALUE after the key" : "store set takes one VALUE, got \(values.count): \(values.joined(separator: " ")) (quote a value with spaces)")
            }
        }

        func run() throws {
            let parsed: StoreValue
            if string {
                parsed = .string(value)
            } else {
                do {
                    guard let v = try StoreValue(json: value) else {
                        throw ValidationError("VALUE is null; use 'lunette store remove' to remove a key")
                    }
                    parsed = v
                } catch let error as StoreError {
                    throw ValidationError("VALUE is not JSON (\(error.message)); quote text as JSON ('\"text\"') or pass --string")
                }
            }
            try Store.reporting {
                let group = try options.open(create: true)!
                let sequence = try group.commit(StoreBatch(values: [(key, parsed)]))
                if options.json {
                    Store.printJSON(group: options.group) { o in
                        o.field("key", string: key)
                        o.key("sequence")
                        o.integer(sequence)
                    }
                }
            }
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a key (nothing happens when it is absent).")
        @OptionGroup var options: Options
        @Argument(help: "The key.") var key: String

        func validate() throws { try Store.validateKey(key) }

        func run() throws {
            try Store.reporting {
                guard let group = try options.open(create: false) else { return }
                try group.remove(key)
            }
        }
    }

    struct Keys: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "keys", abstract: "List the keys, sorted by their bytes, one per line.")
        @OptionGroup var options: Options
        @Argument(help: "Only keys that start with this.") var prefix: String = ""

        func run() throws {
            try Store.reporting {
                let keys = try options.open(create: false)?.keys(prefix: prefix) ?? []
                if options.json {
                    Store.printJSON(group: options.group) { o in
                        o.key("keys")
                        o.array(keys) { o.string($0) }
                    }
                } else {
                    FileOutput.standardOutput.write(keys.map { $0 + "\n" }.joined())
                }
            }
        }
    }

    struct Files: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "files", abstract: "List the group's files, sorted by their bytes, one per line.")
        @OptionGroup var options: Options

        func run() throws {
            try Store.reporting {
                let names = try options.open(create: false)?.files() ?? []
                if options.json {
                    Store.printJSON(group: options.group) { o in
                        o.key("files")
                        o.array(names) { o.string($0) }
                    }
                } else {
                    FileOutput.standardOutput.write(names.map { $0 + "\n" }.joined())
                }
            }
        }
    }
}
