// Plain records from rows, direct or through a tree (see row_encoder.hpp).
#include "eventd/query/row_encoder.hpp"

#include "base/guid_text.hpp"

#include <string_view>

#include "eventd/query/planner.hpp"
#include "eventd/query/record.hpp"
#include "kmes/guid.hpp"
#include "msgpack/reader.hpp"
#include "msgpack/writer.hpp"

namespace eventd::query {
namespace {

namespace mp = eventd::msgpack;

// Limits of the direct way; anything beyond them takes the tree way, which reads every payload
// the shim admits (msgpack::kPayloadMaxDepth, record.cpp). The depth is the shim's default
// MaxNestingDepth (PSD-003 §6.1): every payload a default-configured shim accepts is copied
// directly, and the walk's recursion (a key array per level) stays shallow. Keys are checked
// for repeats pairwise, so maps stay small.
constexpr int kMaxDirectDepth = 32;
constexpr uint32_t kMaxDirectKeys = 64;

// No key appears twice among keys[0, n) (the tree keeps only the last of repeated keys).
bool keys_distinct(const std::string_view* keys, size_t n) {
    for (size_t i = 1; i < n; ++i)
        for (size_t j = 0; j < i; ++j)
            if (keys[i] == keys[j]) return false;
    return true;
}

// `depth`: how many containers are open around the value (0 for the payload itself); the
// reader refuses containers past kMaxDirectDepth.
bool copyable_value(mp::Reader& in, int depth);

// Walks the `count` pairs of a map whose header was just read, with `depth` containers open
// around the map: every key a string, none repeated (the tree keeps only the last of repeated
// keys), every value copyable.
// `on_pair(key, start, end)` sees each pair with its value's byte range in the reader.
template <class OnPair>
bool copyable_map(mp::Reader& in, uint32_t count, int depth, OnPair&& on_pair) {
    if (count > kMaxDirectKeys) return false;
    std::string_view keys[kMaxDirectKeys];
    for (uint32_t i = 0; i < count; ++i) {
        if (!in.next_is_string()) return false;
        auto key = in.string();
        if (!key) return false;
        keys[i] = key.value();
        const size_t start = in.pos();
        if (!copyable_value(in, depth + 1)) return false;
        on_pair(key.value(), start, in.pos());
    }
    return keys_distinct(keys, count);
}

// Walks one value and says whether its bytes mean, on the wire, exactly what the tree decoder
// would re-encode: maps as copyable_map says, no float32 (the tree widens it to float64,
// PSD-008 §8.8), nesting within the reader's limit.
bool copyable_value(mp::Reader& in, int depth) {
    auto item = in.next();
    if (!item) return false;
    switch (item->kind) {
        case mp::Kind::float32:
            return false;
        case mp::Kind::array:
            if (!in.check_depth(depth + 1)) return false;
            for (uint32_t i = 0; i < item->count; ++i)
                if (!copyable_value(in, depth + 1)) return false;
            return true;
        case mp::Kind::map:
            if (!in.check_depth(depth + 1)) return false;
            return copyable_map(in, item->count, depth, [](std::string_view, size_t, size_t) {});
        default:
            return true;
    }
}

std::string_view event_type_of(const store::RowView& row) {
    return row.text(store::index_of(store::EventColumn::event_type));
}

// Is `row` the caller's own record (the `self` principal)? Its two token columns.
bool owned_by_caller(const access::CallerAccess& access, const store::RowView& row) {
    return access.owns(row.blob(store::index_of(store::EventColumn::effective_token_guid)),
                       row.blob(store::index_of(store::EventColumn::true_token_guid)));
}

// One header column as a record value (value_from_column in record.cpp, without a tree).
void put_column(std::vector<uint8_t>& out, const store::RowView& row, int col, bool guid) {
    switch (row.type(col)) {
        case store::ValueType::integer:
            mp::put_signed(out, row.integer(col));
            return;
        case store::ValueType::real:
            mp::put_float64(out, row.real(col));
            return;
        case store::ValueType::text:
            mp::put_string(out, row.text(col));
            return;
        case store::ValueType::blob: {
            const auto data = row.blob(col);
            if (guid && data.size() == 16) {
                char text[base::kGuidTextLength];
                base::write_guid_text(std::span<const uint8_t, 16>(data.data(), 16), text);
                mp::put_string(out, std::string_view(text, sizeof text));
            } else {
                mp::put_binary(out, data);
            }
            return;
        }
        case store::ValueType::null:
            mp::put_nil(out);
            return;
    }
}

}  // namespace

std::span<const uint8_t> RowEncoder::encode(const store::RowView& row) {
    out_.clear();
    if (encode_direct(row)) {
        ++direct_;
    } else {
        out_.clear();
        encode_tree(row);
    }
    return out_;
}

void RowEncoder::encode_tree(const store::RowView& row) {
    Record record = record_from_row(row);
    if (!access_.unrestricted()) {
        access_.filter_fields(event_type_of(row), owned_by_caller(access_, row), record);
    }
    if (!select_.empty()) apply_select(record, select_);
    to_msgpack_float64(record, out_);
}

bool RowEncoder::encode_direct(const store::RowView& row) {
    if (!select_.empty()) return false;
    if (!access_.unrestricted()) {
        if (!access_.reads_all_fields(event_type_of(row), owned_by_caller(access_, row))) return false;
    }

    // The payload's top-level pairs, checked before anything is written. A NULL payload adds
    // nothing; anything else must be exactly one map (record.cpp merge_payload keeps other
    // payloads whole as `payload` bytes — the tree way does that).
    struct Pair {
        std::string_view key;
        std::span<const uint8_t> value;
    };
    Pair pairs[kMaxDirectKeys];
    size_t kept = 0;
    const int payload_column = store::index_of(store::EventColumn::payload);
    if (row.type(payload_column) != store::ValueType::null) {
        const std::span<const uint8_t> payload = row.blob(payload_column);
        mp::Reader in(payload, kMaxDirectDepth);
        if (!in.next_is_map()) return false;
        auto map = in.next();
        if (!map) return false;
        const bool copyable = copyable_map(in, map->count, 0, [&](std::string_view key, size_t start, size_t end) {
            // PSD-008 §8.1 field resolution: a header field wins over a payload key of the same name.
            if (!is_header_name(key)) pairs[kept++] = {key, payload.subspan(start, end - start)};
        });
        if (!copyable || !in.at_end()) return false;
    }

    mp::put_map_header(out_, store::kHeaderColumnCount + kept);
    for (int i = store::kFirstHeaderColumn; i < store::kFirstHeaderColumn + store::kHeaderColumnCount; ++i) {
        const store::EventColumnSpec& column = store::kEventColumns[static_cast<size_t>(i)];
        mp::put_string(out_, column.name);
        put_column(out_, row, i, column.kind == store::ColumnKind::guid);
    }
    for (size_t i = 0; i < kept; ++i) {
        mp::put_string(out_, pairs[i].key);
        out_.insert(out_.end(), pairs[i].value.begin(), pairs[i].value.end());
    }
    return true;
}

}  // namespace eventd::query
