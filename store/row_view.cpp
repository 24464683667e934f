#include "row_view.hpp"

#include <sqlite3.h>

namespace eventd::store {

int RowView::column_count() const { return sqlite3_column_count(stmt_); }

ValueType RowView::type(int column) const {
    switch (sqlite3_column_type(stmt_, column)) {
        case SQLITE_INTEGER:
            return ValueType::integer;
        case SQLITE_FLOAT:
            return ValueType::real;
        case SQLITE_TEXT:
            return ValueType::text;
        case SQLITE_BLOB:
            return ValueType::blob;
        default:
            return ValueType::null;
    }
}

int64_t RowView::integer(int column) const { return sqlite3_column_int64(stmt_, column); }

double RowView::real(int column) const { return sqlite3_column_double(stmt_, column); }

std::string_view RowView::text(int column) const {
    // text before bytes (SQLite's documented order: the byte count is then of the UTF-8 form).
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
    if (!p) return {};
    return {p, static_cast<size_t>(sqlite3_column_bytes(stmt_, column))};
}

std::span<const uint8_t> RowView::blob(int column) const {
    const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(stmt_, column));
    if (!p) return {};
    return {p, static_cast<size_t>(sqlite3_column_bytes(stmt_, column))};
}

}  // namespace eventd::store
