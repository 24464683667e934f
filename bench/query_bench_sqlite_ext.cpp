// A loadable SQLite extension with msgpack_extract, for the sqlite3 CLI side of the query
// benchmark (`.load …/query_bench_sqlite_ext`): the hand-written SQL of a payload WHERE then
// calls the very function eventd registers. The CLI links the shared libsqlite3, and so
// does this module, so calling the ordinary API (not the sqlite3ext.h indirection) reaches
// the CLI's own library.
#include <sqlite3.h>

#include "store/msgpack_extract.hpp"

extern "C" __attribute__((visibility("default"))) int sqlite3_extension_init(sqlite3* db, char** error,
                                                                             const sqlite3_api_routines*) {
    if (auto st = eventd::store::register_msgpack_extract(db); !st) {
        *error = sqlite3_mprintf("%s", st.error().message.c_str());
        return SQLITE_ERROR;
    }
    return SQLITE_OK;
}
