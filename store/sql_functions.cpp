#include "sql_functions.hpp"

#include <sqlite3.h>

#include <cerrno>
#include <string>

#include "sql_value.hpp"

namespace eventd::store {
namespace {

using SumState = NumSumPartial;

void sum_step(sqlite3_context* ctx, int, sqlite3_value** argv) {
    const int type = sqlite3_value_type(argv[0]);
    if (type != SQLITE_INTEGER && type != SQLITE_FLOAT) return;  // NULL and non-numeric excluded
    auto* s = static_cast<SumState*>(sqlite3_aggregate_context(ctx, sizeof(SumState)));
    if (!s) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    if (type == SQLITE_INTEGER) {
        s->set_integer_sum(s->integer_sum() + sqlite3_value_int64(argv[0]));
        ++s->int_count;
    } else {
        s->real_sum += sqlite3_value_double(argv[0]);
        ++s->real_count;
    }
}

void sum_final(sqlite3_context* ctx) {
    SumState zero{};
    const auto* s = static_cast<SumState*>(sqlite3_aggregate_context(ctx, 0));
    if (!s) s = &zero;
    sqlite3_result_blob(ctx, s, sizeof(SumState), SQLITE_TRANSIENT);
}

struct ExtremeState {
    int set;
    int type;
    int64_t i;
    double d;
};

template <bool kMax>
void extreme_step(sqlite3_context* ctx, int, sqlite3_value** argv) {
    const int type = sqlite3_value_type(argv[0]);
    if (type != SQLITE_INTEGER && type != SQLITE_FLOAT) return;
    auto* s = static_cast<ExtremeState*>(sqlite3_aggregate_context(ctx, sizeof(ExtremeState)));
    if (!s) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    SqlValue v = type == SQLITE_INTEGER ? SqlValue::integer(sqlite3_value_int64(argv[0]))
                                        : SqlValue::real(sqlite3_value_double(argv[0]));
    if (s->set) {
        SqlValue cur = s->type == SQLITE_INTEGER ? SqlValue::integer(s->i) : SqlValue::real(s->d);
        const int c = compare_numeric(v, cur);
        if (kMax ? c <= 0 : c >= 0) return;
    }
    s->set = 1;
    s->type = type;
    s->i = v.i;
    s->d = v.d;
}

void extreme_final(sqlite3_context* ctx) {
    const auto* s = static_cast<ExtremeState*>(sqlite3_aggregate_context(ctx, 0));
    if (!s || !s->set) {
        sqlite3_result_null(ctx);
    } else if (s->type == SQLITE_INTEGER) {
        sqlite3_result_int64(ctx, s->i);
    } else {
        sqlite3_result_double(ctx, s->d);
    }
}

std::span<const uint8_t> blob_of(sqlite3_value* value) {
    if (sqlite3_value_type(value) != SQLITE_BLOB) return {};
    const auto* data = static_cast<const uint8_t*>(sqlite3_value_blob(value));
    return {data, static_cast<size_t>(sqlite3_value_bytes(value))};
}

void visible_function(sqlite3_context* ctx, int, sqlite3_value** argv) {
    const auto* filter = static_cast<const RowFilter*>(sqlite3_user_data(ctx));
    const auto* text = reinterpret_cast<const char*>(sqlite3_value_text(argv[0]));
    if (!text || !filter || !*filter) {
        sqlite3_result_int(ctx, 0);
        return;
    }
    try {
        const std::string_view type(text, static_cast<size_t>(sqlite3_value_bytes(argv[0])));
        sqlite3_result_int(ctx, (*filter)(RowSubject{type, blob_of(argv[1]), blob_of(argv[2])}) ? 1 : 0);
    } catch (...) {
        // No exception crosses SQLite's C frames: the statement fails instead.
        sqlite3_result_error_nomem(ctx);
    }
}

}  // namespace

base::Status register_aggregate_functions(sqlite3* db) {
    struct Fn {
        const char* name;
        void (*step)(sqlite3_context*, int, sqlite3_value**);
        void (*final)(sqlite3_context*);
    };
    const Fn fns[] = {{"eventd_num_sum", sum_step, sum_final},
                      {"eventd_num_min", extreme_step<false>, extreme_final},
                      {"eventd_num_max", extreme_step<true>, extreme_final}};
    for (const Fn& f : fns) {
        const int rc = sqlite3_create_function_v2(db, f.name, 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
                                                  nullptr, nullptr, f.step, f.final, nullptr);
        if (rc != SQLITE_OK) return base::Error{EIO, std::string("cannot prepare aggregation: ") + sqlite3_errstr(rc)};
    }
    return {};
}

base::Status register_visibility(sqlite3* db, const RowFilter* filter) {
    const int rc =
        sqlite3_create_function_v2(db, "eventd_visible", 3, SQLITE_UTF8 | SQLITE_DIRECTONLY,
                                   const_cast<RowFilter*>(filter), visible_function, nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) return base::Error{EIO, std::string("cannot prepare the access check: ") + sqlite3_errstr(rc)};
    return {};
}

}  // namespace eventd::store
