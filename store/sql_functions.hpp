// The SQL functions eventd's reads call on a shard connection, registered by ShardSnapshot
// (shard_snapshot.hpp) — besides msgpack_extract (msgpack_extract.hpp):
//
//   eventd_visible(event_type, effective_token_guid, true_token_guid)
//                               1 when the reader's row filter (ReadOptions::visible) admits the
//                               row: the caller's access control (PSD-008 §8.6.2 step 5) by type
//                               and, for the `self` principal, by the record's subject tokens.
//                               Evaluated per row. Not deterministic (a policy reload changes it).
//   eventd_num_sum(v)           BLOB partial: NumSumPartial below (numeric values only; the
//                               integer sum is exact in 128 bits)
//   eventd_num_min(v), eventd_num_max(v)
//                               the smallest/largest numeric value, exactly compared; NULL if none
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string_view>

#include "base/result.hpp"

struct sqlite3;

namespace eventd::store {

// What the access check of one row looks at: its type and its subject's two token GUIDs
// (16 bytes each, or empty when the row has none — kernel events without a subject).
struct RowSubject {
    std::string_view event_type;
    std::span<const uint8_t> effective_token;
    std::span<const uint8_t> true_token;
};

// The caller's row filter; empty admits nothing.
using RowFilter = std::function<bool(const RowSubject& row)>;

// eventd_num_sum's partial, as the BLOB it returns. The 128-bit sum is kept as bytes (SQLite's
// allocator aligns to 8) and copied in and out, never accessed in place.
struct NumSumPartial {
    unsigned char int_sum[16];
    int64_t int_count;
    double real_sum;
    int64_t real_count;

    __int128 integer_sum() const {
        __int128 v;
        std::memcpy(&v, int_sum, sizeof v);
        return v;
    }
    void set_integer_sum(__int128 v) { std::memcpy(int_sum, &v, sizeof v); }
    // The partial in a column value; zero when the bytes are not one (a NULL group).
    static NumSumPartial from(std::span<const uint8_t> bytes) {
        NumSumPartial p{};
        if (bytes.size() == sizeof p) std::memcpy(&p, bytes.data(), sizeof p);
        return p;
    }
};

// Register eventd_num_sum/min/max on `db`.
base::Status register_aggregate_functions(sqlite3* db);

// Register eventd_visible on `db`, calling `*filter` (which must outlive the connection).
base::Status register_visibility(sqlite3* db, const RowFilter* filter);

}  // namespace eventd::store
