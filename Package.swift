// swift-tools-version: 6.0
// Lunette: widget logic as Lua 5.4 scripts, run by a host that emulates the
// iOS widget system. Layers (arrows point down only):
//   lunette → WidgetHost → LuaSandbox → CLuaShims → CLua
import PackageDescription

let package = Package(
    name: "Lunette",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "LuaSandbox", targets: ["LuaSandbox"]),
        .library(name: "WidgetHost", targets: ["WidgetHost"]),
        .executable(name: "lunette", targets: ["lunette"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        // The system's Lua 5.4, found through pkg-config (no hard-coded header paths).
        .systemLibrary(
            name: "CLua",
            pkgConfig: "lua5.4",
            providers: [.apt(["liblua5.4-dev"]), .brew(["lua"])]
        ),
        // The only C code of the project: the boundary pieces that may raise Lua errors.
        .target(name: "CLuaShims", dependencies: ["CLua"]),
        .target(name: "LuaSandbox", dependencies: ["CLua", "CLuaShims"]),
        .target(name: "WidgetHost", dependencies: ["LuaSandbox"]),
        .executableTarget(
            name: "lunette",
            dependencies: [
                "WidgetHost",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Benchmarks (scripts/bench): Lunette's figures and a bare C baseline
        // against the same liblua5.4, measured in the same run.
        .executableTarget(name: "lunette-bench", dependencies: ["LuaSandbox", "CLua"], path: "Sources/Benchmarks/lunette-bench"),
        .executableTarget(name: "lua-baseline-bench", dependencies: ["CLua"], path: "Sources/Benchmarks/lua-baseline-bench"),
        .testTarget(name: "LuaSandboxTests", dependencies: ["LuaSandbox", "CLua", "CLuaShims"]),
        .testTarget(name: "WidgetHostTests", dependencies: ["WidgetHost"]),
    ],
    swiftLanguageModes: [.v6]
)
