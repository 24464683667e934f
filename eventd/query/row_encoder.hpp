// Rows of a plain query → wire records (PSD-008 §8.8), as msgpack bytes ready for a reply
// frame. One place for the steps every plain record goes through, in the initial result
// (executor.cpp) and in a stream's live phase (live_feed.cpp):
//
//   row (every events column) ─► header fields + payload map merged ─► access field filter
//                              ─► SELECT ─► msgpack (floats float64)
//
// Two ways to the same bytes' meaning:
//   direct — no SELECT and the caller reads every field of the row's type (root, or a grant
//            without a field list): the header columns are encoded from the row and the payload
//            map's values are copied byte for byte after one checking walk. No tree, no
//            allocation per record. This is what makes large plain results cheap (PERFORMANCE §6).
//   tree   — everything else, and any payload the direct way does not take exactly as the tree
//            decoder would (not a map, non-string or repeated keys, float32 values that must be
//            widened, deep nesting, trailing bytes): record_from_row, filter_fields,
//            apply_select, to_msgpack_float64 (record.hpp).
// Both give a client the same record: the same keys with the same values. Key order differs:
// direct records list the header fields first, then the payload keys as stored; tree records
// come with their keys sorted.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "eventd/access/policy.hpp"
#include "eventd/query_language/ast.hpp"
#include "store/row_view.hpp"

namespace eventd::query {

class RowEncoder {
public:
    // `select` and `access` must outlive the encoder (access may be reset() in between).
    RowEncoder(const std::vector<FieldRef>& select, access::CallerAccess& access) : select_(select), access_(access) {}

    // The record of `row` (a rows/live row, store/read_plan.hpp); the bytes stay valid until
    // the next call.
    std::span<const uint8_t> encode(const store::RowView& row);

    // How many records took the direct way (tests and benchmarks check the fast path is used).
    uint64_t direct_count() const { return direct_; }

private:
    bool encode_direct(const store::RowView& row);
    void encode_tree(const store::RowView& row);

    const std::vector<FieldRef>& select_;
    access::CallerAccess& access_;
    std::vector<uint8_t> out_;
    uint64_t direct_ = 0;
};

}  // namespace eventd::query
