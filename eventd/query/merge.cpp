// Shard results combined at the coordinator (PSD-008 §8.6.4); see merge.hpp.
#include "eventd/query/merge.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "kmes/guid.hpp"

namespace eventd::query {
namespace {

// SQLite's sqlite3IntFloatCompare without long double: exact for every pair.
int compare_int_real(int64_t i, double r) {
    if (r != r) return 1;  // NaN (SQLite stores none, but be total)
    if (r < -9223372036854775808.0) return 1;
    if (r >= 9223372036854775808.0) return -1;
    const auto y = static_cast<int64_t>(r);
    if (i < y) return -1;
    if (i > y) return 1;
    const auto s = static_cast<double>(i);
    if (s < r) return -1;
    if (s > r) return 1;
    return 0;
}

int compare_numeric(const SqlValue& a, const SqlValue& b) {
    if (a.type == SQLITE_INTEGER && b.type == SQLITE_INTEGER) return a.i < b.i ? -1 : (a.i > b.i ? 1 : 0);
    if (a.type == SQLITE_FLOAT && b.type == SQLITE_FLOAT) return a.d < b.d ? -1 : (a.d > b.d ? 1 : 0);
    if (a.type == SQLITE_INTEGER) return compare_int_real(a.i, b.d);
    return -compare_int_real(b.i, a.d);
}

unsigned char fold(unsigned char c) { return (c >= 'A' && c <= 'Z') ? static_cast<unsigned char>(c + 32) : c; }

// SQLite's NOCASE collation (sqlite3StrNICmp over the shorter length, then the length).
int compare_nocase(const std::string& a, const std::string& b) {
    const size_t n = std::min(a.size(), b.size());
    const auto* pa = reinterpret_cast<const unsigned char*>(a.data());
    const auto* pb = reinterpret_cast<const unsigned char*>(b.data());
    size_t i = 0;
    while (i < n && pa[i] != 0 && fold(pa[i]) == fold(pb[i])) ++i;
    if (i < n) {
        const int r = static_cast<int>(fold(pa[i])) - static_cast<int>(fold(pb[i]));
        if (r != 0) return r;
    }
    return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
}

int compare_binary(const std::string& a, const std::string& b) {
    const size_t n = std::min(a.size(), b.size());
    const int r = n ? std::memcmp(a.data(), b.data(), n) : 0;
    if (r != 0) return r;
    return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
}

// Type class in SQLite's value order.
int type_rank(int type) {
    switch (type) {
        case SQLITE_NULL: return 0;
        case SQLITE_INTEGER:
        case SQLITE_FLOAT: return 1;
        case SQLITE_TEXT: return 2;
        default: return 3;
    }
}

bool is_numeric(const SqlValue& v) { return v.type == SQLITE_INTEGER || v.type == SQLITE_FLOAT; }

// --- per-shard partial aggregates -----------------------------------------------------------

// Aggregate contexts come from SQLite's allocator (8-byte aligned): the 128-bit sum is kept as
// bytes and copied in and out, never accessed in place.
struct SumState {
    unsigned char int_sum[16];
    int64_t int_count;
    double real_sum;
    int64_t real_count;
};

__int128 load_sum(const SumState& s) {
    __int128 v;
    std::memcpy(&v, s.int_sum, sizeof v);
    return v;
}

void store_sum(SumState& s, __int128 v) { std::memcpy(s.int_sum, &v, sizeof v); }

void sum_step(sqlite3_context* ctx, int, sqlite3_value** argv) {
    const int type = sqlite3_value_type(argv[0]);
    if (type != SQLITE_INTEGER && type != SQLITE_FLOAT) return;  // NULL and non-numeric excluded
    auto* s = static_cast<SumState*>(sqlite3_aggregate_context(ctx, sizeof(SumState)));
    if (!s) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    if (type == SQLITE_INTEGER) {
        store_sum(*s, load_sum(*s) + sqlite3_value_int64(argv[0]));
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

const char* fn_key(const Aggregation& a) {
    if (a.kind != Aggregation::Kind::group) return "count";
    switch (a.fn) {
        case AggregateFn::count: return "count";
        case AggregateFn::sum: return "sum";
        case AggregateFn::avg: return "avg";
        case AggregateFn::min: return "min";
        case AggregateFn::max: return "max";
    }
    return "count";
}

bool is_guid_field(const FieldRef& f) { return f.header && is_guid_column(*f.header); }

}  // namespace

SqlValue column_value(sqlite3_stmt* stmt, int col) {
    SqlValue v;
    v.type = sqlite3_column_type(stmt, col);
    switch (v.type) {
        case SQLITE_INTEGER: v.i = sqlite3_column_int64(stmt, col); break;
        case SQLITE_FLOAT: v.d = sqlite3_column_double(stmt, col); break;
        case SQLITE_TEXT: {
            const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt, col));
            v.bytes.assign(p ? p : "", static_cast<size_t>(sqlite3_column_bytes(stmt, col)));
            break;
        }
        case SQLITE_BLOB: {
            const auto* p = static_cast<const char*>(sqlite3_column_blob(stmt, col));
            const int n = sqlite3_column_bytes(stmt, col);
            if (p && n > 0) v.bytes.assign(p, static_cast<size_t>(n));
            break;
        }
        default: break;
    }
    return v;
}

int compare_values(const SqlValue& a, const SqlValue& b, bool nocase) {
    const int ra = type_rank(a.type), rb = type_rank(b.type);
    if (ra != rb) return ra < rb ? -1 : 1;
    switch (ra) {
        case 0: return 0;
        case 1: return compare_numeric(a, b);
        case 2: return nocase ? compare_nocase(a.bytes, b.bytes) : compare_binary(a.bytes, b.bytes);
        default: return compare_binary(a.bytes, b.bytes);
    }
}

nlohmann::json to_json(const SqlValue& v, bool guid) {
    switch (v.type) {
        case SQLITE_INTEGER: return v.i;
        case SQLITE_FLOAT: return v.d;
        case SQLITE_TEXT: return v.bytes;
        case SQLITE_BLOB:
            if (guid && v.bytes.size() == 16)
                return kmes::guid_text(std::span<const uint8_t, 16>(reinterpret_cast<const uint8_t*>(v.bytes.data()), 16));
            return nlohmann::json::binary(std::vector<uint8_t>(v.bytes.begin(), v.bytes.end()));
        default: return nullptr;
    }
}

kmes::Status register_aggregate_functions(sqlite3* db) {
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
        if (rc != SQLITE_OK) return kmes::Error{EIO, std::string("cannot prepare aggregation: ") + sqlite3_errstr(rc)};
    }
    return {};
}

// --- AggregateMerger ------------------------------------------------------------------------

bool AggregateMerger::KeyLess::operator()(const std::vector<SqlValue>& a, const std::vector<SqlValue>& b) const {
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
        const int c = compare_values(a[i], b[i], false);
        if (c != 0) return c < 0;
    }
    return a.size() < b.size();
}

AggregateMerger::AggregateMerger(const Query& q, const Plan& plan) : query_(q), group_columns_(plan.group_columns) {}

void AggregateMerger::add_row(sqlite3_stmt* stmt) {
    const Aggregation& a = query_.aggregation;
    if (a.kind == Aggregation::Kind::count) {
        total_count_ += sqlite3_column_int64(stmt, 0);
        return;
    }
    std::vector<SqlValue> key;
    key.reserve(group_columns_);
    for (size_t i = 0; i < group_columns_; ++i) key.push_back(column_value(stmt, static_cast<int>(i)));
    Partial& p = groups_[std::move(key)];
    const int count_col = static_cast<int>(group_columns_);
    p.count += sqlite3_column_int64(stmt, count_col);
    if (a.kind != Aggregation::Kind::group || a.fn == AggregateFn::count) return;
    const int partial_col = count_col + 1;
    if (a.fn == AggregateFn::sum || a.fn == AggregateFn::avg) {
        SumState s{};
        if (sqlite3_column_bytes(stmt, partial_col) == static_cast<int>(sizeof s)) {
            std::memcpy(&s, sqlite3_column_blob(stmt, partial_col), sizeof s);
        }
        p.int_sum += load_sum(s);
        p.int_count += s.int_count;
        p.real_sum += s.real_sum;
        p.real_count += s.real_count;
        return;
    }
    SqlValue v = column_value(stmt, partial_col);
    if (!is_numeric(v)) return;
    if (p.extreme.type == SQLITE_NULL) {
        p.extreme = v;
        return;
    }
    const int c = compare_numeric(v, p.extreme);
    if (a.fn == AggregateFn::min ? c < 0 : c > 0) p.extreme = v;
}

std::vector<Record> AggregateMerger::finish() const {
    const Aggregation& a = query_.aggregation;
    const uint64_t skip = query_.skip.value_or(0);
    const uint64_t take = query_.take.value_or(std::numeric_limits<uint64_t>::max());
    std::vector<Record> out;

    auto select = [&](Record& r) {
        if (query_.select.empty()) return;
        Record kept = Record::object();
        for (const FieldRef& f : query_.select) {
            auto it = r.find(f.name);
            if (it != r.end()) kept[f.name] = *it;
        }
        r = std::move(kept);
    };

    if (a.kind == Aggregation::Kind::count) {
        if (skip == 0 && take > 0) {
            Record r = {{"count", total_count_}};
            select(r);
            out.push_back(std::move(r));
        }
        return out;
    }

    // One output row per group: its keys and the aggregate value.
    struct Row {
        const std::vector<SqlValue>* keys;
        SqlValue value;
    };
    const bool counts = a.kind == Aggregation::Kind::count_by || a.kind == Aggregation::Kind::top_by ||
                        (a.kind == Aggregation::Kind::group && a.fn == AggregateFn::count);
    std::vector<Row> rows;
    rows.reserve(groups_.size());
    for (const auto& [keys, p] : groups_) {
        Row row{&keys, {}};
        if (counts) {
            row.value = SqlValue::integer(p.count);
        } else if (a.kind == Aggregation::Kind::group) {
            const int64_t n = p.int_count + p.real_count;
            switch (a.fn) {
                case AggregateFn::sum:
                    if (n == 0) break;
                    if (p.real_count == 0 && p.int_sum >= std::numeric_limits<int64_t>::min() &&
                        p.int_sum <= std::numeric_limits<int64_t>::max()) {
                        row.value = SqlValue::integer(static_cast<int64_t>(p.int_sum));
                    } else {
                        row.value = SqlValue::real(static_cast<double>(static_cast<long double>(p.int_sum) + p.real_sum));
                    }
                    break;
                case AggregateFn::avg:
                    if (n == 0) break;
                    row.value = SqlValue::real(static_cast<double>(
                        (static_cast<long double>(p.int_sum) + p.real_sum) / static_cast<long double>(n)));
                    break;
                default:
                    row.value = p.extreme;
                    break;
            }
        }
        rows.push_back(std::move(row));
    }

    // Keys ascending (NOCASE for text), then exactly, so "Foo" and "foo" keep a fixed order.
    auto keys_ascending = [](const Row& x, const Row& y) {
        for (int pass = 0; pass < 2; ++pass) {
            for (size_t i = 0; i < x.keys->size(); ++i) {
                const int c = compare_values((*x.keys)[i], (*y.keys)[i], pass == 0);
                if (c != 0) return c;
            }
        }
        return 0;
    };
    auto default_order = [&](const Row& x, const Row& y) {
        if (counts) {
            const int c = compare_values(x.value, y.value, false);
            if (c != 0) return c > 0;  // count descending
        }
        return keys_ascending(x, y) < 0;
    };
    std::sort(rows.begin(), rows.end(), default_order);
    if (a.kind == Aggregation::Kind::top_by && rows.size() > a.top_n) rows.resize(a.top_n);

    if (!query_.sort.empty()) {
        // Explicit SORT on output keys (validated by the planner); the default order breaks ties.
        struct Term {
            int key;  // group key index, or -1 for the aggregate value
            bool descending;
        };
        std::vector<Term> terms;
        for (const SortKey& k : query_.sort) {
            int index = -1;
            for (size_t i = 0; i < a.fields.size(); ++i) {
                if (a.fields[i].name == k.field.name) {
                    index = static_cast<int>(i);
                    break;
                }
            }
            terms.push_back({index, k.descending});
        }
        std::stable_sort(rows.begin(), rows.end(), [&](const Row& x, const Row& y) {
            for (const Term& t : terms) {
                const SqlValue& vx = t.key < 0 ? x.value : (*x.keys)[static_cast<size_t>(t.key)];
                const SqlValue& vy = t.key < 0 ? y.value : (*y.keys)[static_cast<size_t>(t.key)];
                int c = compare_values(vx, vy, true);
                if (t.descending) c = -c;
                if (c != 0) return c < 0;
            }
            return false;
        });
    }

    const char* value_key = fn_key(a);
    for (size_t i = static_cast<size_t>(std::min<uint64_t>(skip, rows.size())); i < rows.size(); ++i) {
        if (out.size() >= take) break;
        const Row& row = rows[i];
        Record r = Record::object();
        for (size_t k = 0; k < a.fields.size() && k < row.keys->size(); ++k) {
            r[a.fields[k].name] = to_json((*row.keys)[k], is_guid_field(a.fields[k]));
        }
        if (a.kind != Aggregation::Kind::distinct) r[value_key] = to_json(row.value, false);
        select(r);
        out.push_back(std::move(r));
    }
    return out;
}

}  // namespace eventd::query
