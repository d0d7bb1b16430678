// The system's SQLite 3 header. Include paths and link flags come from
// pkg-config (sqlite3), so nothing here names a directory.
#include <sqlite3.h>
