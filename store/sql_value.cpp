#include "sql_value.hpp"

#include <algorithm>
#include <cstring>

namespace eventd::store {
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

}  // namespace

int compare_numeric(const SqlValue& a, const SqlValue& b) {
    if (a.type == ValueType::integer && b.type == ValueType::integer) return a.i < b.i ? -1 : (a.i > b.i ? 1 : 0);
    if (a.type == ValueType::real && b.type == ValueType::real) return a.d < b.d ? -1 : (a.d > b.d ? 1 : 0);
    if (a.type == ValueType::integer) return compare_int_real(a.i, b.d);
    return -compare_int_real(b.i, a.d);
}

namespace {

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
int type_rank(ValueType type) {
    switch (type) {
        case ValueType::null:
            return 0;
        case ValueType::integer:
        case ValueType::real:
            return 1;
        case ValueType::text:
            return 2;
        default:
            return 3;
    }
}

}  // namespace

SqlValue value_at(const RowView& row, int col) {
    SqlValue v;
    v.type = row.type(col);
    switch (v.type) {
        case ValueType::integer:
            v.i = row.integer(col);
            break;
        case ValueType::real:
            v.d = row.real(col);
            break;
        case ValueType::text:
            v.bytes.assign(row.text(col));
            break;
        case ValueType::blob: {
            const auto b = row.blob(col);
            v.bytes.assign(reinterpret_cast<const char*>(b.data()), b.size());
            break;
        }
        case ValueType::null:
            break;
    }
    return v;
}

int compare_values(const SqlValue& a, const SqlValue& b, bool nocase) {
    const int ra = type_rank(a.type), rb = type_rank(b.type);
    if (ra != rb) return ra < rb ? -1 : 1;
    switch (ra) {
        case 0:
            return 0;
        case 1:
            return compare_numeric(a, b);
        case 2:
            return nocase ? compare_nocase(a.bytes, b.bytes) : compare_binary(a.bytes, b.bytes);
        default:
            return compare_binary(a.bytes, b.bytes);
    }
}

}  // namespace eventd::store
