// WidgetHost builds on LuaSandbox, SharedStore and LunetteJSON; its users get all four with one import.
@_exported import LuaSandbox
@_exported import LunetteJSON
@_exported import SharedStore
