/// Lunette's script API (docs/script-api.md and docs/testing.md): the one
/// description `lunette types` writes out. The names of families,
/// parameter types and schema types come from the host's own enums.
extension ScriptAPI {
    public static let lunette = ScriptAPI(
        aliases: aliases, classes: declarationClasses + callClasses + serviceClasses + testClasses,
        functions: declarations.map { (Scope.bundle, $0) } + [(.tests, testFunction)],
        modules: services,
        baseGlobals: ["assert", "error", "getmetatable", "ipairs", "next", "pairs", "pcall", "print", "rawequal", "rawget",
                      "rawlen", "rawset", "select", "setmetatable", "tonumber", "tostring", "type", "xpcall", "warn", "load",
                      "require", "_G", "_VERSION"],
        removedBaseGlobals: ["dofile", "loadfile", "collectgarbage"],
        libraries: [
            ("string", ["byte", "char", "find", "format", "gmatch", "gsub", "len", "lower", "match", "pack", "packsize", "rep",
                        "reverse", "sub", "unpack", "upper"]),
            ("table", ["concat", "insert", "move", "pack", "remove", "sort", "unpack"]),
            ("math", ["abs", "acos", "asin", "atan", "ceil", "cos", "deg", "exp", "floor", "fmod", "huge", "log", "max",
                      "maxinteger", "min", "mininteger", "modf", "pi", "rad", "random", "randomseed", "sin", "sqrt", "tan",
                      "tointeger", "type", "ult"]),
            ("utf8", ["char", "charpattern", "codepoint", "codes", "len", "offset"]),
            ("coroutine", ["close", "create", "isyieldable", "resume", "running", "status", "wrap", "yield"]),
        ],
        removedLibraries: ["io", "debug", "package"],
        compatibilityFields: [("math", ["atan2", "cosh", "frexp", "ldexp", "log10", "pow", "sinh", "tanh"])])

    // MARK: Aliases

    static let aliases: [Alias] = [
        Alias("lunette.Family", "A widget family (size).", literals: WidgetFamily.allCases.map(\.rawValue)),
        Alias("lunette.ParameterType", "The type of an intent parameter.", literals: ParameterType.allCases.map(\.rawValue)),
        Alias("lunette.SchemaType", "A Live Activity schema type; a trailing ? makes the field optional.",
              literals: SchemaType.allCases.flatMap { [$0.rawValue, $0.rawValue + "?"] }),
        Alias("lunette.ControlType", "A control's type.", literals: ["toggle", "button"]),
        Alias("lunette.Policy", "When the widget is eligible for its next reload (rules T6, T7).",
              #""atEnd"|"never"|{ after: number }"#),
        Alias("lunette.Date", "Seconds since 1970-01-01T00:00:00Z (fractions allowed).", "number"),
        Alias("lunette.Dismissal", "When an ended Live Activity leaves the screen.", #""default"|"immediate"|{ after: number }"#),
        Alias("lunette.ActivityPhase", "Where a Live Activity is in its life.", literals: ActivityPhase.allCases.map(\.rawValue)),
    ]

    // MARK: Declarations

    static let declarations: [Function] = [
        Function("widget", "Declares a widget kind: its families, configuration and providers. Call it at the top level of main.lua.",
                 [Field("spec", "lunette.WidgetDeclaration")]),
        Function("intent", "Declares an intent: an action with typed parameters, or (configuration = true) a widget's settings.",
                 [Field("spec", "lunette.IntentDeclaration")]),
        Function("query", "Declares a query: the options of entity parameters.", [Field("spec", "lunette.QueryDeclaration")]),
        Function("control", "Declares a Control Center control (a toggle or a button).", [Field("spec", "lunette.ControlDeclaration")]),
        Function("activity", "Declares a Live Activity type with its schemas and updater.", [Field("spec", "lunette.ActivityDeclaration")]),
    ]

    static let declarationClasses: [Class] = [
        Class("lunette.WidgetDeclaration", "The fields of widget { … }.", fields: [
            Field("kind", "string", "unique among the bundle's widgets"),
            Field("displayName", "string", optional: true, "shown in the gallery"),
            Field("description", "string", optional: true, "shown in the gallery"),
            Field("families", "lunette.Family[]", optional: true, "the sizes it supports; the first is the default (default: systemSmall, systemMedium, systemLarge)"),
            Field("configuration", "string", optional: true, "the id of a configuration intent: the widget is then configurable"),
            Field("placeholder", "fun(ctx: lunette.Context): lunette.Entry", "an entry to show at once, from sample data, without the store (rule T1)"),
            Field("snapshot", "fun(ctx: lunette.Context, config: table): lunette.Entry", optional: true, "an entry for the gallery (default: the placeholder)"),
            Field("timeline", "fun(ctx: lunette.Context, config: table): lunette.Timeline", "entries and a reload policy (config: the configuration's values; nil for a widget without configuration)"),
        ]),
        Class("lunette.IntentDeclaration", "The fields of intent { … }.", fields: [
            Field("id", "string", "unique among the bundle's intents"),
            Field("title", "string", optional: true),
            Field("description", "string", optional: true),
            Field("configuration", "boolean", optional: true, "true for a widget's configuration intent (default false)"),
            Field("parameters", "lunette.Parameter[]", optional: true, "the typed parameters (default {})"),
            Field("perform", "fun(params: table, ctx: lunette.IntentContext): any", optional: true, "the action; required unless configuration = true"),
        ]),
        Class("lunette.Parameter", "An intent parameter.", fields: [
            Field("name", "string", "unique in the intent"),
            Field("type", "lunette.ParameterType"),
            Field("title", "string", optional: true),
            Field("description", "string", optional: true),
            Field("default", "any", optional: true, "the value when none is given; checked against the type"),
            Field("optional", "boolean", optional: true, "may be left without a value (default false)"),
            Field("values", "string[]", optional: true, "the choices of an enum"),
            Field("query", "string", optional: true, "the id of the query that lists an entity's choices"),
        ]),
        Class("lunette.QueryDeclaration", "The fields of query { … }.", fields: [
            Field("id", "string", "unique among the bundle's queries; what a parameter's query = names"),
            Field("suggested", "fun(): lunette.QueryEntity[]", "the entities to choose from"),
            Field("entities", "fun(ids: string[]): lunette.QueryEntity[]", optional: true, "the entities with these ids (default: picked from suggested())"),
        ]),
        Class("lunette.QueryEntity", "One choice of a query: an id, a title, and fields of its own.", fields: [
            Field("id", "string"),
            Field("title", "string"),
        ], open: true),
        Class("lunette.ControlDeclaration", "The fields of control { … }.", fields: [
            Field("kind", "string", "unique among the bundle's controls; what reload.controls(kind) names"),
            Field("type", "lunette.ControlType"),
            Field("displayName", "string", optional: true),
            Field("preview", "fun(): any", optional: true, "the value shown in the gallery: instant, without the store (C1)"),
            Field("value", "fun(ctx: lunette.ControlContext): any", "the current value; a toggle's is true or false"),
            Field("action", "string", optional: true, "the id of the intent it runs"),
        ]),
        Class("lunette.ActivityDeclaration", "The fields of activity { … }.", fields: [
            Field("type", "string", "unique among the bundle's activities"),
            Field("attributes", "table<string, lunette.SchemaType>", optional: true, "the values fixed at start, e.g. { orderNumber = \"string\" }"),
            Field("state", "table<string, lunette.SchemaType>", optional: true, "the changing content state, e.g. { eta = \"date\" }"),
            Field("tick", "number", optional: true, "seconds between tick events (positive)"),
            Field("updater", "fun(activity: lunette.Activity, event: lunette.ActivityEvent)", "runs once per event"),
        ]),
    ]

    // MARK: What the host passes and expects

    static let callClasses: [Class] = [
        Class("lunette.Context", "What a provider is called with.", fields: [
            Field("kind", "string", "the widget's kind"),
            Field("family", "lunette.Family", "the instance's family"),
            Field("displaySize", "lunette.Size", "points, by family"),
            Field("isPreview", "boolean", "true for a gallery snapshot"),
        ]),
        Class("lunette.Size", "A size in points.", fields: [Field("width", "integer"), Field("height", "integer")]),
        Class("lunette.Entry", "An entry: a date, an optional relevance, and the widget's own fields.", fields: [
            Field("date", "lunette.Date", optional: true, "when it starts to show; required in a timeline"),
            Field("relevance", "lunette.Relevance", optional: true, "rule T12"),
        ], open: true),
        Class("lunette.Relevance", "An entry's relevance (rule T12).", fields: [
            Field("score", "number"),
            Field("duration", "number", optional: true, "seconds, not negative (default 0)"),
        ]),
        Class("lunette.Timeline", "What timeline returns.", fields: [
            Field("entries", "lunette.Entry[]", "each with a date; may be empty"),
            Field("policy", "lunette.Policy", optional: true, "default \"atEnd\""),
        ]),
        Class("lunette.IntentContext", "What perform is called with.", fields: [
            Field("source", "lunette.WidgetSource", optional: true, "the widget whose button or toggle ran it, or nil"),
        ]),
        Class("lunette.WidgetSource", "The widget that ran an intent.", fields: [
            Field("kind", "string"), Field("family", "lunette.Family"), Field("config", "table", optional: true),
        ]),
        Class("lunette.ControlContext", "What a control's value function is called with.", fields: [
            Field("kind", "string"), Field("type", "lunette.ControlType"),
        ]),
        Class("lunette.ActivityEvent", "What an activity's updater is called with.", fields: [
            Field("kind", #""push"|"event"|"tick"|"stale""#),
            Field("time", "lunette.Date", "when it happened (a push: its delivery)"),
            Field("payload", "any", optional: true, "a push's or an event's payload"),
            Field("priority", "integer", optional: true, "a push's priority"),
            Field("name", "string", optional: true, "an event's name"),
        ]),
    ]

    // MARK: Services

    static let services: [Module] = [
        Module("store", "The app group store, shared with the app. A call's writes are all or nothing.", [
            Function("group", "Opens an app group listed in appGroups of bundle.json (not in a placeholder or preview).",
                     [Field("id", "string")], returns: [Return("lunette.StoreGroup")]),
        ]),
        Module("clock", "The host's clock: the system clock, or a virtual one in simulations and tests.", [
            Function("now", "Now.", returns: [Return("lunette.Date")]),
            Function("add", "t moved: days are calendar days, the others fixed seconds.",
                     [Field("t", "lunette.Date"), Field("by", "{ days: integer?, hours: number?, minutes: number?, seconds: number? }")],
                     returns: [Return("lunette.Date")]),
            Function("startOfDay", "The first instant of t's day.", [Field("t", "lunette.Date")], returns: [Return("lunette.Date")]),
            Function("nextMidnight", "The first instant of the day after t's.", [Field("t", "lunette.Date")], returns: [Return("lunette.Date")]),
            Function("components", "t's calendar fields in the host's zone; weekday 1 is Sunday.", [Field("t", "lunette.Date")],
                     returns: [Return("lunette.DateComponents")]),
            Function("iso", "t as UTC ISO 8601 text.", [Field("t", "lunette.Date")], returns: [Return("string")]),
            Function("parse", "ISO 8601 text as a date, or nil and a message.", [Field("text", "string")],
                     returns: [Return("lunette.Date?", "t"), Return("string?", "message")]),
        ]),
        Module("reload", "Asks the host to reload widgets or read controls again (not acknowledged, rule B4).", [
            Function("timelines", "Asks for a reload of every widget of that kind.", [Field("kind", "string")]),
            Function("all", "Asks for a reload of every widget of the bundle."),
            Function("controls", "Asks for that control's value to be read again.", [Field("kind", "string")]),
            Function("allControls", "Asks for every control's value to be read again."),
        ]),
        Module("host", "What the host tells a call about itself.", [
            Function("usage", "The call's memory, time and (in engine-driven timeline calls) refresh budget.", returns: [Return("lunette.Usage")]),
        ]),
        Module("log", "The call's log: each call writes one line, its arguments' tostring separated by tabs.", [
            Function("debug", "A line at the debug level.", [Field("...", "any")]),
            Function("info", "A line at the info level (as print).", [Field("...", "any")]),
            Function("warn", "A line at the warn level.", [Field("...", "any")]),
            Function("error", "A line at the error level.", [Field("...", "any")]),
        ]),
        Module("activities", "Live Activities of the bundle's types (present when the bundle declares an activity).", [
            Function("request", "Starts a Live Activity (only from an intent's perform), or returns nil, the refusal and a message.",
                     [Field("type", "string"), Field("attributes", "table"), Field("state", "table"),
                      Field("options", "{ staleDate: lunette.Date?, relevance: number? }", optional: true)],
                     returns: [Return("lunette.Activity?", "activity"), Return("string?", "refusal"), Return("string?", "message")]),
            Function("list", "The activities of that type on screen, the most relevant first.", [Field("type", "string", optional: true)],
                     returns: [Return("lunette.Activity[]")]),
            Function("get", "The activity with that id, in any phase, or nil.", [Field("id", "string")], returns: [Return("lunette.Activity?")]),
            Function("enabled", "Whether Live Activities are switched on.", returns: [Return("boolean")]),
        ]),
        Module("os", "Three functions of Lua's os, on the host's clock.", [
            Function("time", "math.floor(clock.now()); with a table, Lua's own.", [Field("t", "table", optional: true)], returns: [Return("integer")]),
            Function("date", "Lua's own, t defaulting to the host's clock.", [Field("format", "string", optional: true), Field("t", "number", optional: true)],
                     returns: [Return("string|table")]),
            Function("clock", "The CPU time the call has used, in seconds.", returns: [Return("number")]),
        ]),
    ]

    static let serviceClasses: [Class] = [
        Class("lunette.StoreGroup", "An open app group: call its methods with ':'.", fields: [
            Field("id", "string", "the group's id"),
        ], functions: [
            Function("get", "The value, or nil; sees the call's own staged writes.", [Field("key", "string")], returns: [Return("any")], method: true),
            Function("set", "Stages a write; nil removes the key.", [Field("key", "string"), Field("value", "any")], method: true),
            Function("remove", "Stages a removal.", [Field("key", "string")], method: true),
            Function("keys", "The keys, sorted by their bytes.", [Field("prefix", "string", optional: true)], returns: [Return("string[]")], method: true),
            Function("update", "f(old) gives the new value (nil removes); runs again if another writer changed the key first.",
                     [Field("key", "string"), Field("f", "fun(old: any): any")], returns: [Return("any")], method: true),
            Function("readFile", "The file's bytes, or nil.", [Field("name", "string")], returns: [Return("string?")], method: true),
            Function("writeFile", "Stages a file write.", [Field("name", "string"), Field("bytes", "string|number")], method: true),
            Function("removeFile", "Stages a file removal.", [Field("name", "string")], method: true),
            Function("files", "The file names, sorted.", returns: [Return("string[]")], method: true),
        ]),
        Class("lunette.DateComponents", "Calendar fields of a date, integers.", fields: [
            Field("year", "integer"), Field("month", "integer"), Field("day", "integer"), Field("hour", "integer"),
            Field("minute", "integer"), Field("second", "integer"), Field("weekday", "integer", "1 is Sunday"),
        ]),
        Class("lunette.Usage", "What host.usage() returns.", fields: [
            Field("memory", "{ used: integer, limit: integer }", "bytes"),
            Field("time", "{ elapsed: number, limit: number }", "seconds"),
            Field("budget", "{ used: integer, remaining: integer }", optional: true, "in engine-driven timeline calls only"),
        ]),
        Class("lunette.Activity", "A Live Activity.", fields: [
            Field("id", "string"), Field("type", "string"), Field("state", "lunette.ActivityPhase"),
            Field("attributes", "table"), Field("content", "{ state: table, staleDate: lunette.Date? }"),
            Field("relevance", "number", optional: true),
        ], functions: [
            Function("update", "New content state; options: staleDate, relevance, alert = { title =, body = }.",
                     [Field("state", "table"), Field("options", "{ staleDate: lunette.Date?, relevance: number?, alert: { title: string, body: string }? }", optional: true)],
                     returns: [Return("lunette.Activity")], method: true),
            Function("finish", "Ends it with a final state; dismissal default, immediate or { after = t }.",
                     [Field("state", "table", optional: true), Field("options", "{ dismissal: lunette.Dismissal? }", optional: true)],
                     returns: [Return("lunette.Activity")], method: true),
        ]),
    ]

    // MARK: Tests

    static let testFunction = Function(
        "test", "Declares a test (in a test file): fn gets t, the test API, on a fresh store, clock and host.",
        [Field("name", "string"), Field("fn", "fun(t: lunette.Test)")])

    static let testClasses: [Class] = [
        Class("lunette.Test", "The test API.", functions: [
            Function("at", "Moves the clock to that time (forward only).", [Field("iso", "string")]),
            Function("now", "The clock's time.", returns: [Return("lunette.Date")]),
            Function("advance", "Moves the clock (\"90m\", \"2h\", \"1d\") and runs every reload due on the way.", [Field("duration", "string")]),
            Function("store", "Writes keys in the test's store.", [Field("group", "string"), Field("values", "table<string, any>")]),
            Function("get", "Reads a key of the test's store.", [Field("group", "string"), Field("key", "string")], returns: [Return("any")]),
            Function("timeline", "The timeline as the provider returned it after the host's checks.",
                     [Field("kind", "string"), Field("options", "lunette.TestWidgetOptions", optional: true)], returns: [Return("lunette.Timeline")]),
            Function("snapshot", "The snapshot entry.", [Field("kind", "string"), Field("options", "lunette.TestWidgetOptions", optional: true)],
                     returns: [Return("lunette.Entry")]),
            Function("placeholder", "The placeholder entry.", [Field("kind", "string"), Field("options", "lunette.TestWidgetOptions", optional: true)],
                     returns: [Return("lunette.Entry")]),
            Function("widget", "Puts a widget on screen (its placeholder, then its timeline): its id.",
                     [Field("kind", "string"), Field("options", "lunette.TestWidgetOptions", optional: true)], returns: [Return("integer")]),
            Function("shown", "The entry widget id shows now.", [Field("id", "integer")], returns: [Return("lunette.Entry?")]),
            Function("reloads", "The widget's reloads.", [Field("id", "integer")],
                     returns: [Return("{ at: lunette.Date, reason: string, counted: boolean, status: string }[]")]),
            Function("perform", "Performs an intent (from a widget of that kind: it reloads after, rule I2); what perform returned.",
                     [Field("intent", "string"), Field("params", "table", optional: true), Field("options", "{ from: string? }", optional: true)],
                     returns: [Return("any")]),
            Function("control", "A control's value.", [Field("kind", "string")], returns: [Return("any")]),
            Function("tap", "Taps a control (its action performs): the value after.", [Field("kind", "string")], returns: [Return("any")]),
            Function("activity", "Starts a Live Activity from the app.", [Field("type", "string"), Field("attributes", "table"), Field("state", "table")],
                     returns: [Return("lunette.TestActivity")]),
            Function("push", "Delivers a push to the activity; its updater runs.", [Field("id", "string"), Field("payload", "any")],
                     returns: [Return("lunette.TestActivity")]),
            Function("signal", "Signals an app event to the activity; its updater runs.", [Field("id", "string"), Field("name", "string"), Field("payload", "any", optional: true)],
                     returns: [Return("lunette.TestActivity")]),
            Function("activities", "Every activity.", returns: [Return("lunette.TestActivity[]")]),
            Function("eq", "Deep equality (1 and 1.0 are equal); fails with \"path: expected X, got Y\" at the caller's line.",
                     [Field("got", "any"), Field("expected", "any"), Field("message", "string", optional: true)]),
            Function("ok", "Fails unless value is true (not nil or false); returns it.", [Field("value", "any"), Field("message", "string", optional: true)],
                     returns: [Return("any")]),
            Function("contains", "Fails unless text is a string containing part.", [Field("text", "any"), Field("part", "string"), Field("message", "string", optional: true)]),
        ]),
        Class("lunette.TestWidgetOptions", "Which widget a test asks for.", fields: [
            Field("family", "lunette.Family", optional: true), Field("config", "table", optional: true),
        ]),
        Class("lunette.TestActivity", "A Live Activity as a test sees it.", fields: [
            Field("id", "string"), Field("type", "string"), Field("phase", "lunette.ActivityPhase"),
            Field("attributes", "table"), Field("state", "table"),
        ]),
    ]
}
