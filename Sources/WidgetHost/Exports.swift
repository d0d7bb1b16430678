// WidgetHost builds on LuaSandbox, SharedStore and LunetteJSON; its users get all four with one import.
@_exported import LuaSandbox
@_exported import LunetteJSON
@_exported import SharedStore

/// Lunette's version: what `lunette --version` prints and the editor files
/// `lunette types` writes name.
public enum LunetteVersion {
    public static let current = "0.1.0"
}
