// swift-tools-version: 6.0
// Lunette: widget logic as Lua 5.4 scripts, run by a host that emulates the
// iOS widget system. Layers (arrows point down only):
//   lunette, lunette-dev → DevPage (Hummingbird; lunette-dev only) → WidgetHost → (LuaSandbox → CLuaShims → CLua, SharedStore → CSQLite)
//   CLuaShims takes its lock from CFastLock (C, no dependencies); LuaSandbox, SharedStore and
//   WidgetHost their locks, threads and child processes from LunetteSystem (no Foundation classes).
//   LuaSandbox, SharedStore and WidgetHost write and read JSON through LunetteJSON.
import PackageDescription

let package = Package(
    name: "Lunette",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "LuaSandbox", targets: ["LuaSandbox"]),
        .library(name: "SharedStore", targets: ["SharedStore"]),
        .library(name: "WidgetHost", targets: ["WidgetHost"]),
        .executable(name: "lunette", targets: ["lunette"]),
        .executable(name: "lunette-dev", targets: ["lunette-dev"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        // The dev page's HTTP server (lunette dev): routes and server-sent events.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0"),
    ],
    targets: [
        // The system's Lua 5.4, found through pkg-config (no hard-coded header paths).
        .systemLibrary(
            name: "CLua",
            pkgConfig: "lua5.4",
            providers: [.apt(["liblua5.4-dev"]), .brew(["lua"])]
        ),
        // The project's C code: the boundary pieces that may raise Lua errors (CLuaShims),
        // and the worker's lockdown (CWorkerShims).
        .target(name: "CLuaShims", dependencies: ["CLua", "CFastLock"]),
        // What a worker process drops once it is ready: no_new_privs and a
        // seccomp filter (Linux; stubs elsewhere). prctl is variadic: C it is.
        .target(name: "CWorkerShims"),
        // C fast paths of the widget host's Swift functions (clock.add, clock.now, the store glue's running() and get): the
        // common calls answered without entering Swift (LuaFastPath).
        .target(name: "CHostFastPaths", dependencies: ["CLua"]),
        // The one JSON layer (docs/json.md): escaper, number formatter, bytes,
        // writer and a located parser. No dependencies, so the store and the
        // sandbox can share it and stay independent of each other.
        .target(name: "LunetteJSON"),
        .target(name: "LuaSandbox", dependencies: ["CLua", "CLuaShims", "LunetteJSON", "LunetteSystem"]),
        // The system's SQLite 3, found through pkg-config.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        // A lock for the short critical sections of every call (C11 atomics
        // and a futex: ThreadSanitizer sees it, as it does not the standard
        // library's Mutex).
        .target(name: "CFastLock"),
        // The host's locks, condition and threads on that lock and pthreads,
        // so that no module the CLI links needs Foundation's classes (one
        // referenced links all of Foundation and ICU in: docs/ARCHITECTURE.md).
        .target(name: "LunetteSystem", dependencies: ["CFastLock", "CWorkerShims"]),
        // The app-group store: no Lua inside, so an app can link it alone.
        .target(name: "SharedStore", dependencies: ["CSQLite", "LunetteSystem", "LunetteJSON"]),
        // The host's own log (swift-log): details a script must not see,
        // such as database paths, go there; scripts' log lines too. Its
        // figures (calls, durations, kills, reloads, pushes) go to swift-metrics.
        .target(
            name: "WidgetHost",
            dependencies: ["LuaSandbox", "SharedStore", "LunetteJSON", "LunetteSystem", "CWorkerShims", "CHostFastPaths", .product(name: "Logging", package: "swift-log"),
                           .product(name: "CoreMetrics", package: "swift-metrics")],
            // The host's Lua glue, beside the service each belongs to, in the binary as text
            // (embedInCode) and compiled (the CompileGlue plugin: no process compiles it again).
            resources: [
                .embedInCode("Declarations/declarations.lua"),
                .embedInCode("Runtime/bundle.lua"),
                .embedInCode("Store/store.lua"),
                .embedInCode("Activities/activities.lua"),
            ],
            plugins: ["CompileGlue"]
        ),
        // The page `lunette dev` serves: the dev loop's state over HTTP, kept
        // out of WidgetHost so that apps embedding the host link no server.
        .target(name: "DevPage", dependencies: ["WidgetHost", .product(name: "Hummingbird", package: "hummingbird"),
                                                .product(name: "Logging", package: "swift-log")]),
        // What the two command-line executables share: `lunette dev`'s
        // options and help, the host log's set-up.
        .target(name: "LunetteCommandLine", dependencies: ["LunetteSystem", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                                                           .product(name: "Logging", package: "swift-log")]),
        .executableTarget(
            name: "lunette",
            dependencies: [
                "WidgetHost",
                "LunetteCommandLine",
                "LunetteSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // `lunette dev`'s loop and page: `lunette dev` checks its options,
        // then execs this executable beside it. Kept apart so that no other
        // command links SwiftNIO and Hummingbird (about 2,100 of the 8,400
        // protocol conformance records the runtime scans at start).
        .executableTarget(
            name: "lunette-dev",
            dependencies: [
                "WidgetHost",
                "DevPage",
                "LunetteCommandLine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Benchmarks (scripts/bench): Lunette's figures and a bare C baseline
        // against the same liblua5.4, measured in the same run.
        .executableTarget(name: "lunette-bench", dependencies: ["LuaSandbox", "WidgetHost", "SharedStore", "CLua", "CSQLite", "CMachineProbe"], path: "Sources/Benchmarks/lunette-bench"),
        // The machine's side of the widget figures: the processor's front
        // end against code size, and a fresh page (C and assembly).
        .target(name: "CMachineProbe", path: "Sources/Benchmarks/machine-probe"),
        // A store writer for the reliability tests: prints an acknowledgement
        // after each commit returns, so a test can kill it at any moment.
        .executableTarget(name: "store-stress", dependencies: ["SharedStore"], path: "Sources/Tools/store-stress"),
        // Compiles the host's Lua glue at build time, for the CompileGlue plugin (C: Lua's own API).
        .executableTarget(name: "lunette-glue-compiler", dependencies: ["CLua"], path: "Sources/Tools/lunette-glue-compiler"),
        .plugin(name: "CompileGlue", capability: .buildTool(), dependencies: ["lunette-glue-compiler"]),
        .executableTarget(name: "lua-baseline-bench", dependencies: ["CLua"], path: "Sources/Benchmarks/lua-baseline-bench"),
        // Programs that embed the host as users do (docs/embedding.md); the
        // test command builds them and ExampleProgramTests runs them.
        .executableTarget(name: "lunette-example-app", dependencies: ["WidgetHost", "SharedStore",
                          .product(name: "ArgumentParser", package: "swift-argument-parser"), .product(name: "Logging", package: "swift-log")],
                          path: "examples/embed-app"),
        .executableTarget(name: "lunette-example-server", dependencies: ["WidgetHost", "SharedStore",
                          .product(name: "ArgumentParser", package: "swift-argument-parser"), .product(name: "Logging", package: "swift-log")],
                          path: "examples/embed-server"),
        .testTarget(name: "LunetteJSONTests", dependencies: ["LunetteJSON"]),
        .testTarget(name: "MachineProbeTests", dependencies: ["CMachineProbe"]),
        .testTarget(name: "LuaSandboxTests", dependencies: ["LuaSandbox", "LunetteJSON", "CLua", "CLuaShims"]),
        .testTarget(name: "SharedStoreTests", dependencies: ["SharedStore", "CSQLite"]),
        .testTarget(name: "LunetteSystemTests", dependencies: ["LunetteSystem", "CLuaShims"]),
        .testTarget(name: "LunetteCLITests", dependencies: ["lunette", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        .testTarget(name: "WidgetHostTests", dependencies: ["WidgetHost", "SharedStore", "DevPage", .product(name: "Logging", package: "swift-log"),
                                                            .product(name: "CoreMetrics", package: "swift-metrics"),
                                                            .product(name: "MetricsTestKit", package: "swift-metrics")]),
    ],
    swiftLanguageModes: [.v6]
)
