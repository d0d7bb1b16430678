// WidgetHost builds on LuaSandbox and SharedStore; its users get all three with one import.
@_exported import LuaSandbox
@_exported import SharedStore
