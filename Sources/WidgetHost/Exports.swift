// WidgetHost builds on LuaSandbox; its users get both with one import.
@_exported import LuaSandbox
