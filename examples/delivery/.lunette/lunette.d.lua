---@meta lunette
-- Lunette's script API for the Lua language server (LuaLS), written by
-- `lunette types` (Lunette 0.1.0). Do not edit: run `lunette types` again.
-- The reference: docs/script-api.md and docs/testing.md.
-- A definition file only: it is never run.

---A widget family (size).
---@alias lunette.Family "systemSmall"|"systemMedium"|"systemLarge"|"systemExtraLarge"|"accessoryCircular"|"accessoryRectangular"|"accessoryInline"

---The type of an intent parameter.
---@alias lunette.ParameterType "string"|"int"|"number"|"bool"|"date"|"enum"|"entity"

---A Live Activity schema type; a trailing ? makes the field optional.
---@alias lunette.SchemaType "string"|"string?"|"int"|"int?"|"number"|"number?"|"bool"|"bool?"|"date"|"date?"|"table"|"table?"

---A control's type.
---@alias lunette.ControlType "toggle"|"button"

---When the widget is eligible for its next reload (rules T6, T7).
---@alias lunette.Policy "atEnd"|"never"|{ after: number }

---Seconds since 1970-01-01T00:00:00Z (fractions allowed).
---@alias lunette.Date number

---When an ended Live Activity leaves the screen.
---@alias lunette.Dismissal "default"|"immediate"|{ after: number }

---Where a Live Activity is in its life.
---@alias lunette.ActivityPhase "active"|"stale"|"ended"|"dismissed"

---The fields of widget { … }.
---@class lunette.WidgetDeclaration
---@field kind string unique among the bundle's widgets
---@field displayName? string shown in the gallery
---@field description? string shown in the gallery
---@field families? lunette.Family[] the sizes it supports; the first is the default (default: systemSmall, systemMedium, systemLarge)
---@field configuration? string the id of a configuration intent: the widget is then configurable
---@field placeholder fun(ctx: lunette.Context): lunette.Entry an entry to show at once, from sample data, without the store (rule T1)
---@field snapshot? fun(ctx: lunette.Context, config: table): lunette.Entry an entry for the gallery (default: the placeholder)
---@field timeline fun(ctx: lunette.Context, config: table): lunette.Timeline entries and a reload policy (config: the configuration's values; nil for a widget without configuration)

---The fields of intent { … }.
---@class lunette.IntentDeclaration
---@field id string unique among the bundle's intents
---@field title? string
---@field description? string
---@field configuration? boolean true for a widget's configuration intent (default false)
---@field parameters? lunette.Parameter[] the typed parameters (default {})
---@field perform? fun(params: table, ctx: lunette.IntentContext): any the action; required unless configuration = true

---An intent parameter.
---@class lunette.Parameter
---@field name string unique in the intent
---@field type lunette.ParameterType
---@field title? string
---@field description? string
---@field default? any the value when none is given; checked against the type
---@field optional? boolean may be left without a value (default false)
---@field values? string[] the choices of an enum
---@field query? string the id of the query that lists an entity's choices

---The fields of query { … }.
---@class lunette.QueryDeclaration
---@field id string unique among the bundle's queries; what a parameter's query = names
---@field suggested fun(): lunette.QueryEntity[] the entities to choose from
---@field entities? fun(ids: string[]): lunette.QueryEntity[] the entities with these ids (default: picked from suggested())

---One choice of a query: an id, a title, and fields of its own.
---@class lunette.QueryEntity
---@field id string
---@field title string
---@field [string] any

---The fields of control { … }.
---@class lunette.ControlDeclaration
---@field kind string unique among the bundle's controls; what reload.controls(kind) names
---@field type lunette.ControlType
---@field displayName? string
---@field preview? fun(): any the value shown in the gallery: instant, without the store (C1)
---@field value fun(ctx: lunette.ControlContext): any the current value; a toggle's is true or false
---@field action? string the id of the intent it runs

---The fields of activity { … }.
---@class lunette.ActivityDeclaration
---@field type string unique among the bundle's activities
---@field attributes? table<string, lunette.SchemaType> the values fixed at start, e.g. { orderNumber = "string" }
---@field state? table<string, lunette.SchemaType> the changing content state, e.g. { eta = "date" }
---@field tick? number seconds between tick events (positive)
---@field updater fun(activity: lunette.Activity, event: lunette.ActivityEvent) runs once per event

---What a provider is called with.
---@class lunette.Context
---@field kind string the widget's kind
---@field family lunette.Family the instance's family
---@field displaySize lunette.Size points, by family
---@field isPreview boolean true for a gallery snapshot

---A size in points.
---@class lunette.Size
---@field width integer
---@field height integer

---An entry: a date, an optional relevance, and the widget's own fields.
---@class lunette.Entry
---@field date? lunette.Date when it starts to show; required in a timeline
---@field relevance? lunette.Relevance rule T12
---@field [string] any

---An entry's relevance (rule T12).
---@class lunette.Relevance
---@field score number
---@field duration? number seconds, not negative (default 0)

---What timeline returns.
---@class lunette.Timeline
---@field entries lunette.Entry[] each with a date; may be empty
---@field policy? lunette.Policy default "atEnd"

---What perform is called with.
---@class lunette.IntentContext
---@field source? lunette.WidgetSource the widget whose button or toggle ran it, or nil

---The widget that ran an intent.
---@class lunette.WidgetSource
---@field kind string
---@field family lunette.Family
---@field config? table

---What a control's value function is called with.
---@class lunette.ControlContext
---@field kind string
---@field type lunette.ControlType

---What an activity's updater is called with.
---@class lunette.ActivityEvent
---@field kind "push"|"event"|"tick"|"stale"
---@field time lunette.Date when it happened (a push: its delivery)
---@field payload? any a push's or an event's payload
---@field priority? integer a push's priority
---@field name? string an event's name

---An open app group: call its methods with ':'.
---@class lunette.StoreGroup
---@field id string the group's id
local StoreGroup = {}

---The value, or nil; sees the call's own staged writes.
---@param key string
---@return any
function StoreGroup:get(key) end

---Stages a write; nil removes the key.
---@param key string
---@param value any
function StoreGroup:set(key, value) end

---Stages a removal.
---@param key string
function StoreGroup:remove(key) end

---The keys, sorted by their bytes.
---@param prefix? string
---@return string[]
function StoreGroup:keys(prefix) end

---f(old) gives the new value (nil removes); runs again if another writer changed the key first.
---@param key string
---@param f fun(old: any): any
---@return any
function StoreGroup:update(key, f) end

---The file's bytes, or nil.
---@param name string
---@return string?
function StoreGroup:readFile(name) end

---Stages a file write.
---@param name string
---@param bytes string|number
function StoreGroup:writeFile(name, bytes) end

---Stages a file removal.
---@param name string
function StoreGroup:removeFile(name) end

---The file names, sorted.
---@return string[]
function StoreGroup:files() end

---Calendar fields of a date, integers.
---@class lunette.DateComponents
---@field year integer
---@field month integer
---@field day integer
---@field hour integer
---@field minute integer
---@field second integer
---@field weekday integer 1 is Sunday

---What host.usage() returns.
---@class lunette.Usage
---@field memory { used: integer, limit: integer } bytes
---@field time { elapsed: number, limit: number } seconds
---@field budget? { used: integer, remaining: integer } in engine-driven timeline calls only

---A Live Activity.
---@class lunette.Activity
---@field id string
---@field type string
---@field state lunette.ActivityPhase
---@field attributes table
---@field content { state: table, staleDate: lunette.Date? }
---@field relevance? number
local Activity = {}

---New content state; options: staleDate, relevance, alert = { title =, body = }.
---@param state table
---@param options? { staleDate: lunette.Date?, relevance: number?, alert: { title: string, body: string }? }
---@return lunette.Activity
function Activity:update(state, options) end

---Ends it with a final state; dismissal default, immediate or { after = t }.
---@param state? table
---@param options? { dismissal: lunette.Dismissal? }
---@return lunette.Activity
function Activity:finish(state, options) end

---The test API.
---@class lunette.Test
local Test = {}

---Moves the clock to that time (forward only).
---@param iso string
function Test.at(iso) end

---The clock's time.
---@return lunette.Date
function Test.now() end

---Moves the clock ("90m", "2h", "1d") and runs every reload due on the way.
---@param duration string
function Test.advance(duration) end

---Writes keys in the test's store.
---@param group string
---@param values table<string, any>
function Test.store(group, values) end

---Reads a key of the test's store.
---@param group string
---@param key string
---@return any
function Test.get(group, key) end

---The timeline as the provider returned it after the host's checks.
---@param kind string
---@param options? lunette.TestWidgetOptions
---@return lunette.Timeline
function Test.timeline(kind, options) end

---The snapshot entry.
---@param kind string
---@param options? lunette.TestWidgetOptions
---@return lunette.Entry
function Test.snapshot(kind, options) end

---The placeholder entry.
---@param kind string
---@param options? lunette.TestWidgetOptions
---@return lunette.Entry
function Test.placeholder(kind, options) end

---Puts a widget on screen (its placeholder, then its timeline): its id.
---@param kind string
---@param options? lunette.TestWidgetOptions
---@return integer
function Test.widget(kind, options) end

---The entry widget id shows now.
---@param id integer
---@return lunette.Entry?
function Test.shown(id) end

---The widget's reloads.
---@param id integer
---@return { at: lunette.Date, reason: string, counted: boolean, status: string }[]
function Test.reloads(id) end

---Performs an intent (from a widget of that kind: it reloads after, rule I2); what perform returned.
---@param intent string
---@param params? table
---@param options? { from: string? }
---@return any
function Test.perform(intent, params, options) end

---A control's value.
---@param kind string
---@return any
function Test.control(kind) end

---Taps a control (its action performs): the value after.
---@param kind string
---@return any
function Test.tap(kind) end

---Starts a Live Activity from the app.
---@param type string
---@param attributes table
---@param state table
---@return lunette.TestActivity
function Test.activity(type, attributes, state) end

---Delivers a push to the activity; its updater runs.
---@param id string
---@param payload any
---@return lunette.TestActivity
function Test.push(id, payload) end

---Signals an app event to the activity; its updater runs.
---@param id string
---@param name string
---@param payload? any
---@return lunette.TestActivity
function Test.signal(id, name, payload) end

---Every activity.
---@return lunette.TestActivity[]
function Test.activities() end

---Deep equality (1 and 1.0 are equal); fails with "path: expected X, got Y" at the caller's line.
---@param got any
---@param expected any
---@param message? string
function Test.eq(got, expected, message) end

---Fails unless value is true (not nil or false); returns it.
---@param value any
---@param message? string
---@return any
function Test.ok(value, message) end

---Fails unless text is a string containing part.
---@param text any
---@param part string
---@param message? string
function Test.contains(text, part, message) end

---Which widget a test asks for.
---@class lunette.TestWidgetOptions
---@field family? lunette.Family
---@field config? table

---A Live Activity as a test sees it.
---@class lunette.TestActivity
---@field id string
---@field type string
---@field phase lunette.ActivityPhase
---@field attributes table
---@field state table

---Declares a widget kind: its families, configuration and providers. Call it at the top level of main.lua.
---@param spec lunette.WidgetDeclaration
function widget(spec) end

---Declares an intent: an action with typed parameters, or (configuration = true) a widget's settings.
---@param spec lunette.IntentDeclaration
function intent(spec) end

---Declares a query: the options of entity parameters.
---@param spec lunette.QueryDeclaration
function query(spec) end

---Declares a Control Center control (a toggle or a button).
---@param spec lunette.ControlDeclaration
function control(spec) end

---Declares a Live Activity type with its schemas and updater.
---@param spec lunette.ActivityDeclaration
function activity(spec) end

---Declares a test (in a test file): fn gets t, the test API, on a fresh store, clock and host. (Test files only: tests/*.lua, *_test.lua.)
---@param name string
---@param fn fun(t: lunette.Test)
function test(name, fn) end

---The app group store, shared with the app. A call's writes are all or nothing.
store = {}

---Opens an app group listed in appGroups of bundle.json (not in a placeholder or preview).
---@param id string
---@return lunette.StoreGroup
function store.group(id) end

---The host's clock: the system clock, or a virtual one in simulations and tests.
clock = {}

---Now.
---@return lunette.Date
function clock.now() end

---t moved: days are calendar days, the others fixed seconds.
---@param t lunette.Date
---@param by { days: integer?, hours: number?, minutes: number?, seconds: number? }
---@return lunette.Date
function clock.add(t, by) end

---The first instant of t's day.
---@param t lunette.Date
---@return lunette.Date
function clock.startOfDay(t) end

---The first instant of the day after t's.
---@param t lunette.Date
---@return lunette.Date
function clock.nextMidnight(t) end

---t's calendar fields in the host's zone; weekday 1 is Sunday.
---@param t lunette.Date
---@return lunette.DateComponents
function clock.components(t) end

---t as UTC ISO 8601 text.
---@param t lunette.Date
---@return string
function clock.iso(t) end

---ISO 8601 text as a date, or nil and a message.
---@param text string
---@return lunette.Date? t
---@return string? message
function clock.parse(text) end

---Asks the host to reload widgets or read controls again (not acknowledged, rule B4).
reload = {}

---Asks for a reload of every widget of that kind.
---@param kind string
function reload.timelines(kind) end

---Asks for a reload of every widget of the bundle.
function reload.all() end

---Asks for that control's value to be read again.
---@param kind string
function reload.controls(kind) end

---Asks for every control's value to be read again.
function reload.allControls() end

---What the host tells a call about itself.
host = {}

---The call's memory, time and (in engine-driven timeline calls) refresh budget.
---@return lunette.Usage
function host.usage() end

---The call's log: each call writes one line, its arguments' tostring separated by tabs.
log = {}

---A line at the debug level.
---@param ... any
function log.debug(...) end

---A line at the info level (as print).
---@param ... any
function log.info(...) end

---A line at the warn level.
---@param ... any
function log.warn(...) end

---A line at the error level.
---@param ... any
function log.error(...) end

---Live Activities of the bundle's types (present when the bundle declares an activity).
activities = {}

---Starts a Live Activity (only from an intent's perform), or returns nil, the refusal and a message.
---@param type string
---@param attributes table
---@param state table
---@param options? { staleDate: lunette.Date?, relevance: number? }
---@return lunette.Activity? activity
---@return string? refusal
---@return string? message
function activities.request(type, attributes, state, options) end

---The activities of that type on screen, the most relevant first.
---@param type? string
---@return lunette.Activity[]
function activities.list(type) end

---The activity with that id, in any phase, or nil.
---@param id string
---@return lunette.Activity?
function activities.get(id) end

---Whether Live Activities are switched on.
---@return boolean
function activities.enabled() end

---Three functions of Lua's os, on the host's clock.
os = {}

---math.floor(clock.now()); with a table, Lua's own.
---@param t? table
---@return integer
function os.time(t) end

---Lua's own, t defaulting to the host's clock.
---@param format? string
---@param t? number
---@return string|table
function os.date(format, t) end

---The CPU time the call has used, in seconds.
---@return number
function os.clock() end
