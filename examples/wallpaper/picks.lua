-- The wallpapers the daily pick chooses from.
return {
  { name = "Fjord at dawn", color = "#5b7fa6" },
  { name = "Dunes", color = "#d8a657" },
  { name = "Cedar forest", color = "#3f6b4a" },
  { name = "Harbour lights", color = "#2d3a5a" },
  { name = "Lavender field", color = "#8d7bb8" },
  { name = "Salt flats", color = "#e6e1d6" },
  { name = "Basalt coast", color = "#3b3b3f" },
}
