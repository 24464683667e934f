// Typed access to the current row of a read (shard_snapshot.hpp): what eventd/query sees of a
// shard's rows, without SQLite's API. Views are valid until the cursor moves.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

struct sqlite3_stmt;

namespace eventd::store {

// SQLite's storage classes, in SQLite's cross-type order (NULL < numbers < text < blob).
enum class ValueType { null, integer, real, text, blob };

class RowView {
public:
    explicit RowView(sqlite3_stmt* stmt) : stmt_(stmt) {}

    int column_count() const;
    ValueType type(int column) const;
    int64_t integer(int column) const;  // INTEGER (others converted as SQLite does)
    double real(int column) const;
    std::string_view text(int column) const;          // "" for NULL
    std::span<const uint8_t> blob(int column) const;  // empty for NULL or a zero-length blob

private:
    sqlite3_stmt* stmt_;
};

}  // namespace eventd::store
