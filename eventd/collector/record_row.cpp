#include "eventd/collector/record_row.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/guid_text.hpp"
#include "msgpack/reader.hpp"
#include "msgpack/writer.hpp"
#include "store/event_columns.hpp"
#include "store/row_chain.hpp"

namespace eventd::collector {
namespace {

using msgpack::Item;
using msgpack::Kind;

base::Error bad(const std::string& what) { return base::Error{EINVAL, "not an eventd record: " + what}; }

std::optional<uint64_t> as_unsigned(const Item& item) {
    if (item.kind == Kind::int_unsigned) return item.unsigned_value;
    if (item.kind == Kind::int_signed && item.signed_value >= 0) return static_cast<uint64_t>(item.signed_value);
    return std::nullopt;
}

// The header column a record's key names (store/event_columns.hpp: the names the query
// server serves them by, e.g. effective_token_guid), if it names one.
std::optional<store::EventColumn> header_column(std::string_view key) {
    const auto column = store::column_named(key);
    if (!column || *column == store::EventColumn::id || *column == store::EventColumn::payload) return std::nullopt;
    return column;
}

// One header field's value into the row. nil leaves an optional column NULL.
base::Status read_header(store::EventColumn column, const Item& item, store::EventRow& row, bool& have_boot,
                         bool& have_time, bool& have_type) {
    using C = store::EventColumn;
    const std::string_view key = store::name_of(column);
    const bool nil = item.kind == Kind::nil;
    auto number = [&](uint64_t max) -> base::Result<std::optional<uint64_t>> {
        if (nil) return std::optional<uint64_t>{};
        const auto v = as_unsigned(item);
        if (!v || *v > max) return bad(std::string(key) + " is not an integer from 0 to " + std::to_string(max));
        return std::optional<uint64_t>{*v};
    };
    auto guid = [&]() -> base::Result<std::optional<kmes::Guid>> {
        if (nil) return std::optional<kmes::Guid>{};
        if (item.kind != Kind::string) return bad(std::string(key) + " is not a GUID string");
        const auto g = base::parse_guid(item.bytes);
        if (!g) return bad(std::string(key) + " is not a GUID string");
        return std::optional<kmes::Guid>{*g};
    };
    switch (column) {
        case C::boot_id: {
            auto g = guid();
            if (!g) return g.error();
            if (!*g) return bad("boot_id is nil");
            row.boot_id = **g;
            have_boot = true;
            return {};
        }
        case C::timestamp: {
            auto n = number(INT64_MAX);  // SQLite's integers are signed
            if (!n) return n.error();
            if (!*n) return bad("timestamp is nil");
            row.timestamp = **n;
            have_time = true;
            return {};
        }
        case C::event_type:
            if (item.kind != Kind::string || item.bytes.empty()) return bad("event_type is not a non-empty string");
            row.event_type = std::string(item.bytes);
            have_type = true;
            return {};
        case C::cpu_id: {
            auto n = number(UINT16_MAX);
            if (!n) return n.error();
            if (*n) row.cpu_id = static_cast<uint16_t>(**n);
            return {};
        }
        case C::sequence: {
            auto n = number(INT64_MAX);
            if (!n) return n.error();
            row.sequence = *n;
            return {};
        }
        case C::origin_class: {
            auto n = number(UINT8_MAX);
            if (!n) return n.error();
            if (*n) row.origin_class = static_cast<uint8_t>(**n);
            return {};
        }
        default: {  // the three token columns
            auto g = guid();
            if (!g) return g.error();
            (column == C::effective_token_guid ? row.effective_token
             : column == C::true_token_guid    ? row.true_token
                                               : row.process) = *g;
            return {};
        }
    }
}

// The header of a message body: how many records its array holds, or nullopt for a body that
// is one record (a map: MaxRecordsPerMessage 1, forwarders before packing).
base::Result<std::optional<uint32_t>> message_header(msgpack::Reader& in) {
    if (in.next_is_map()) return std::optional<uint32_t>{};
    auto count = in.array_header();
    if (!count) return bad("neither a record (a msgpack map) nor an array of records");
    if (*count == 0) return bad("an empty array of records");
    return std::optional<uint32_t>{*count};
}

// The array header's count is a peer's word, not an allocation size: one body of 5 bytes
// (`dd ff ff ff ff`) claimed 4 billion records, and reserving them threw std::bad_alloc out of
// the collector's thread — a crash loop, since the message came again after every restart
// (issue 40). No record is shorter than a map header and its three required pairs: at most one
// per kSmallestRecord bytes still in the body can be there.
constexpr size_t kSmallestRecord = 16;
size_t possible_records(uint32_t claimed, const msgpack::Reader& in, std::span<const uint8_t> body) {
    return std::min<size_t>(claimed, (body.size() - std::min(body.size(), in.pos())) / kSmallestRecord + 1);
}

std::string record_of(uint32_t i, uint32_t count) {
    return "record " + std::to_string(i + 1) + " of " + std::to_string(count) + ": ";
}

// One record read from `in`'s position to the end of its map, in one pass: header fields into
// the row's columns, every other key's bytes copied as they came into the payload. `bytes` is
// the reader's buffer; `depth` the nesting of the record's values (1 for a record on its own,
// 2 inside a packed array); `entries` a buffer the caller reuses from record to record.
base::Result<HandoffItem> read_record(msgpack::Reader& in, std::span<const uint8_t> bytes, int depth,
                                      std::string_view host, std::vector<uint8_t>& entries) {
    auto pairs = in.map_header();
    if (!pairs) return bad("not a msgpack map");
    HandoffItem item;
    store::EventRow& row = item.row;
    bool have_boot = false, have_time = false, have_type = false;
    // The payload map: `host` first, then the other keys' bytes as they came.
    entries.clear();
    uint32_t entry_count = 0;
    std::optional<uint64_t> first_sequence, last_sequence;  // of a synthetic.gap
    bool have_host = false, have_event_host = false;
    for (uint32_t i = 0; i < *pairs; ++i) {
        const size_t key_start = in.pos();
        std::optional<std::string_view> key;
        if (in.next_is_string()) {
            auto k = in.string();
            if (!k) return bad(k.error().message);
            key = *k;
        } else if (auto st = in.skip(depth); !st) {
            return bad(st.error().message);
        }
        if (const auto column = key ? header_column(*key) : std::nullopt) {
            auto value = in.next();
            if (!value) return bad(value.error().message);
            if (value->kind == Kind::map || value->kind == Kind::array) return bad(std::string(*key) + " is not a scalar");
            if (auto st = read_header(*column, *value, row, have_boot, have_time, have_type); !st)
                return st.error();
            continue;
        }
        const size_t value_start = in.pos();
        if (auto st = in.skip(depth); !st) return bad(st.error().message);
        const auto value_bytes = bytes.subspan(value_start, in.pos() - value_start);
        if (key && (*key == "first_sequence" || *key == "last_sequence")) {
            msgpack::Reader v(value_bytes, 1);
            if (auto n = v.next(); n)
                (*key == "first_sequence" ? first_sequence : last_sequence) = as_unsigned(*n);
        }
        if (key && *key == "event_host") have_event_host = true;
        if (key && *key == "host") {
            have_host = true;
            msgpack::put_string(entries, "event_host");
        } else {
            entries.insert(entries.end(), bytes.begin() + static_cast<std::ptrdiff_t>(key_start),
                           bytes.begin() + static_cast<std::ptrdiff_t>(value_start));
        }
        entries.insert(entries.end(), value_bytes.begin(), value_bytes.end());
        ++entry_count;
    }
    if (have_host && have_event_host) return bad("both host and event_host in the payload (host is renamed event_host)");
    if (!have_boot || !have_time || !have_type) return bad("boot_id, timestamp or event_type is missing");
    std::vector<uint8_t> payload;
    payload.reserve(entries.size() + host.size() + 16);  // map header, "host", host's string header
    msgpack::put_map_header(payload, entry_count + 1);
    msgpack::put_string(payload, "host");
    msgpack::put_string(payload, host);
    payload.insert(payload.end(), entries.begin(), entries.end());
    row.payload = std::move(payload);
    // The row's part of the shard's chain, hashed on the converter thread rather than on the
    // writer (store/row_chain.hpp); every column is final here.
    row.content_digest = store::row_digest(row);

    if (row.sequence && row.cpu_id) {
        item.accounting = Accounting{*row.cpu_id, *row.sequence, *row.sequence};
    } else if (row.event_type == "synthetic.gap" && row.cpu_id && first_sequence && last_sequence &&
               *first_sequence <= *last_sequence && *last_sequence <= uint64_t(INT64_MAX)) {
        item.accounting = Accounting{*row.cpu_id, *first_sequence, *last_sequence};
    }
    return item;
}

}  // namespace

base::Result<std::vector<std::span<const uint8_t>>> records_of_message(std::span<const uint8_t> body) {
    std::vector<std::span<const uint8_t>> records;
    msgpack::Reader in(body, msgpack::kRecordMaxDepth + 1, msgpack::MapKeys::any);
    auto count = message_header(in);
    if (!count) return count.error();
    if (!*count) {
        records.push_back(body);  // one record; item_from_record checks it ends where the body does
        return records;
    }
    records.reserve(possible_records(**count, in, body));
    for (uint32_t i = 0; i < **count; ++i) {
        const size_t start = in.pos();
        if (auto st = in.skip(1); !st) return bad(record_of(i, **count) + st.error().message);
        records.push_back(body.subspan(start, in.pos() - start));
    }
    if (!in.at_end()) return bad("bytes after the array of records");
    return records;
}

base::Result<HandoffItem> item_from_record(std::span<const uint8_t> record, std::string_view host) {
    msgpack::Reader in(record, msgpack::kRecordMaxDepth, msgpack::MapKeys::any);
    std::vector<uint8_t> entries;
    auto item = read_record(in, record, 1, host, entries);
    if (item && !in.at_end()) return bad("bytes after the record's map");
    return item;
}

// One pass over the body: each record is read where it lies, not cut out first and read again
// (PERFORMANCE.md §12: with the second walk and a buffer grown per record, conversion cost
// 3.5–3.9 msgpack walks; now 2.3).
base::Result<std::vector<HandoffItem>> items_of_message(std::span<const uint8_t> body, std::string_view host) {
    msgpack::Reader in(body, msgpack::kRecordMaxDepth + 1, msgpack::MapKeys::any);
    auto count = message_header(in);
    if (!count) return count.error();
    std::vector<HandoffItem> items;
    if (!*count) {
        auto item = item_from_record(body, host);
        if (!item) return item.error();
        items.push_back(std::move(*item));
        return items;
    }
    std::vector<uint8_t> entries;
    items.reserve(possible_records(**count, in, body));
    for (uint32_t i = 0; i < **count; ++i) {
        auto item = read_record(in, body, 2, host, entries);
        if (!item) return base::Error{item.error().code, record_of(i, **count) + item.error().message};
        items.push_back(std::move(*item));
    }
    if (!in.at_end()) return bad("bytes after the array of records");
    return items;
}

}  // namespace eventd::collector
