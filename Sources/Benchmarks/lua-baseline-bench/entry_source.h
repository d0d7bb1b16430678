// The Lua source both benchmarks run (keep in sync with BoundaryBenchmark.swift):
// a function returning a 10-field widget entry.
#define LUNETTE_BENCH_ENTRY_SOURCE \
    "local n = 0\n" \
    "return function()\n" \
    "  n = n + 1\n" \
    "  return { date = 1795254600 + n, title = 'Groceries', subtitle = '3 left', remaining = 3, total = 7,\n" \
    "           progress = 0.42857142857143, done = false, color = 'blue', url = 'lunette://tasks/1', relevance = 0.5 }\n" \
    "end\n"
