/// The script API as data: every global a Lunette script sees, every
/// declaration with its fields, the services with their functions, the
/// tables the host passes and expects, and the test API. It is the one
/// source that `lunette types` turns into LuaLS definitions
/// (`LuaTypesWriter`) and a luacheck configuration (`LuacheckConfig`);
/// `ScriptAPIDocTests` holds it against docs/script-api.md and
/// docs/testing.md, and `ScriptAPIRuntimeTests` against what the sandbox
/// really installs, so neither the docs nor the editor types can drift
/// from the host.
public struct ScriptAPI: Sendable {
    /// A type as LuaLS writes it: `string`, `integer`, `lunette.Entry`,
    /// `fun(ctx: lunette.Context): lunette.Entry`, `"atEnd"|"never"`.
    public typealias LuaType = String

    /// A named value: a field of a table, a parameter of a function.
    public struct Field: Sendable, Equatable {
        public var name: String
        public var type: LuaType
        public var optional: Bool
        public var doc: String

        public init(_ name: String, _ type: LuaType, optional: Bool = false, _ doc: String = "") {
            self.name = name
            self.type = type
            self.optional = optional
            self.doc = doc
        }
    }

    /// A value a function returns.
    public struct Return: Sendable, Equatable {
        public var type: LuaType
        public var name: String
        public var doc: String

        public init(_ type: LuaType, _ name: String = "", _ doc: String = "") {
            self.type = type
            self.name = name
            self.doc = doc
        }
    }

    /// A function: a global (`widget`), a module's (`store.group`), or a
    /// method of a class (`get`, called `g:get(key)`).
    public struct Function: Sendable, Equatable {
        public var name: String
        public var doc: String
        public var parameters: [Field]
        public var returns: [Return]
        /// Called with `:` (a method of an object).
        public var isMethod: Bool

        public init(_ name: String, _ doc: String, _ parameters: [Field] = [], returns: [Return] = [], method: Bool = false) {
            self.name = name
            self.doc = doc
            self.parameters = parameters
            self.returns = returns
            self.isMethod = method
        }
    }

    /// A table shape: a declaration's fields, `ctx`, an entry, a store
    /// group (with methods).
    public struct Class: Sendable, Equatable {
        public var name: String
        public var doc: String
        public var fields: [Field]
        public var functions: [Function]
        /// Other string keys are allowed (an entry's own fields).
        public var open: Bool

        public init(_ name: String, _ doc: String, fields: [Field] = [], functions: [Function] = [], open: Bool = false) {
            self.name = name
            self.doc = doc
            self.fields = fields
            self.functions = functions
            self.open = open
        }
    }

    /// A named set of values or types: `lunette.Family`.
    public struct Alias: Sendable, Equatable {
        public var name: String
        public var doc: String
        public var type: LuaType

        public init(_ name: String, _ doc: String, _ type: LuaType) {
            self.name = name
            self.doc = doc
            self.type = type
        }

        /// An alias of string literals: `"a"|"b"`.
        public init(_ name: String, _ doc: String, literals: [String]) {
            self.init(name, doc, literals.map { "\"\($0)\"" }.joined(separator: "|"))
        }
    }

    /// A global table of functions: `store`, `clock`, `t` is not one (it
    /// is an argument), `os` is.
    public struct Module: Sendable, Equatable {
        public var name: String
        public var doc: String
        public var functions: [Function]

        public init(_ name: String, _ doc: String, _ functions: [Function]) {
            self.name = name
            self.doc = doc
            self.functions = functions
        }
    }

    /// Where a global is there: in every bundle file, or in test files only.
    public enum Scope: String, Sendable { case bundle, tests }

    public var aliases: [Alias]
    public var classes: [Class]
    /// Global functions by scope: the declarations, `test`.
    public var functions: [(scope: Scope, function: Function)]
    /// Global tables of functions: the services, and the sandbox's `os`.
    public var modules: [Module]
    /// The base functions and values of Lua the sandbox keeps
    /// (`assert` … `_VERSION`), and those it removes (`dofile` …).
    public var baseGlobals: [String]
    public var removedBaseGlobals: [String]
    /// The standard libraries the sandbox keeps whole or in part, with
    /// their functions and values (for the lint: a misspelt
    /// `string.fromat` is an error).
    public var libraries: [(name: String, fields: [String])]
    /// Libraries the sandbox removes (`io`, `debug`, `package`).
    public var removedLibraries: [String]
    /// Fields a library has with some builds of Lua only: Lua 5.3's
    /// `math.pow` and the like, which Debian's Lua keeps
    /// (LUA_COMPAT_MATHLIB) and others do not. Neither the editor types nor
    /// the lint offer them, so a script stays portable.
    public var compatibilityFields: [(name: String, fields: [String])]

    /// The class named `name`.
    public func `class`(_ name: String) -> Class? { classes.first { $0.name == name } }

    /// The module named `name`.
    public func module(_ name: String) -> Module? { modules.first { $0.name == name } }

    /// The global function named `name`.
    public func function(_ name: String) -> Function? { functions.first { $0.function.name == name }?.function }

    /// Every global a bundle file (or a test file) may read: the base
    /// functions, the libraries, the services and the declarations.
    public func globals(_ scope: Scope) -> [String] {
        var names = baseGlobals + libraries.map(\.name) + modules.map(\.name)
        names += functions.filter { $0.scope == .bundle || $0.scope == scope }.map(\.function.name)
        return names
    }
}
