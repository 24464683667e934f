#include "compact_record.hpp"

#include <algorithm>
#include <array>
#include <string_view>

#include "base/reserved_types.hpp"
#include "msgpack/reader.hpp"
#include "msgpack/writer.hpp"

namespace eventctl {
namespace {

namespace msgpack = eventd::msgpack;

constexpr std::array<std::string_view, 7> kWide = {
    "boot_id", "effective_token_guid", "true_token_guid", "process_guid", "origin_class", "cpu_id", "sequence"};
constexpr std::array<std::string_view, 4> kWholeRecordMarks = {"boot_id", "effective_token_guid", "true_token_guid",
                                                               "process_guid"};

bool is_wide(std::string_view key) { return std::find(kWide.begin(), kWide.end(), key) != kWide.end(); }

bool is_token(std::string_view key) { return key == "effective_token_guid" || key == "true_token_guid"; }

// The value at `in` when it is an integer of a byte (not consumed); nullopt for anything else.
std::optional<uint8_t> peek_small_integer(const msgpack::Reader& in) {
    msgpack::Reader peek = in;
    auto item = peek.next();
    if (!item || item->kind != msgpack::Kind::int_unsigned || item->unsigned_value > 255) return std::nullopt;
    return static_cast<uint8_t>(item->unsigned_value);
}

// Who writes a reserved namespace (base/reserved_types.hpp), for the mark of a row that did
// not come from there.
std::string_view product_writer(std::string_view type) {
    switch (base::reserved_namespace(type)) {
        case base::ReservedNamespace::synthetic:
        case base::ReservedNamespace::alert: return "eventd";
        case base::ReservedNamespace::audit: return "kmes-shimd's audit source";
        case base::ReservedNamespace::kmes: return "kmes-shimd";
        case base::ReservedNamespace::bpf: return "a kernel source";
        case base::ReservedNamespace::none: break;
    }
    return "the product";
}

std::string origin_name(std::optional<uint8_t> origin) {
    if (!origin) return "none";
    static constexpr std::array<std::string_view, 5> kNames = {"userspace", "kmes", "kacs", "lcs", "audit"};
    const std::string number = std::to_string(*origin);
    return *origin < kNames.size() ? std::string(kNames[*origin]) + " (" + number + ")" : number;
}

// The value at `in` when it is a string (not consumed); nullopt for anything else (null).
std::optional<std::string_view> peek_string(const msgpack::Reader& in) {
    if (!in.next_is_string()) return std::nullopt;
    msgpack::Reader peek = in;
    auto text = peek.string();
    if (!text) return std::nullopt;
    return text.value();
}

}  // namespace

std::optional<std::vector<uint8_t>> compact_record(std::span<const uint8_t> record, SubjectNames& names) {
    msgpack::Reader in(record, msgpack::kRecordMaxDepth, msgpack::MapKeys::any);
    auto pairs = in.map_header();
    if (!pairs) return std::nullopt;
    // The pairs to keep, as byte ranges of `record` (key and value copied unchanged).
    std::vector<std::pair<size_t, size_t>> kept;
    size_t marks = 0;
    std::optional<std::string_view> true_token, effective_token;
    std::optional<size_t> subject_at;  // where the tokens were, among the kept pairs
    std::optional<std::string_view> event_type;
    std::optional<size_t> type_at;  // the kept pair after event_type's
    std::optional<uint8_t> origin;
    for (uint32_t i = 0; i < pairs.value(); ++i) {
        const size_t start = in.pos();
        if (!in.next_is_string()) return std::nullopt;
        auto key = in.string();
        if (!key) return std::nullopt;
        if (std::find(kWholeRecordMarks.begin(), kWholeRecordMarks.end(), key.value()) != kWholeRecordMarks.end())
            ++marks;
        if (is_token(key.value())) {
            (key.value() == "true_token_guid" ? true_token : effective_token) = peek_string(in);
            if (!subject_at) subject_at = kept.size();
        }
        if (key.value() == "event_type") {
            event_type = peek_string(in);
            type_at = kept.size() + 1;
        }
        if (key.value() == "origin_class") origin = peek_small_integer(in);
        const bool wide = is_wide(key.value());
        if (!in.skip(1)) return std::nullopt;
        if (!wide) kept.emplace_back(start, in.pos());
    }
    if (marks != kWholeRecordMarks.size()) return std::nullopt;
    const std::optional<std::string> subject = names.subject(true_token, effective_token);
    // Issue 39: a row of the product's namespaces that the product did not write (a forgery an
    // older shim let through) shows where it came from, computed from the header alone.
    std::optional<std::string> forged;
    if (event_type && !base::has_product_origin(*event_type, origin)) {
        forged = origin_name(origin) + ", not " + std::string(product_writer(*event_type)) + ": not the product's record";
    }
    std::vector<uint8_t> out;
    out.reserve(record.size());
    msgpack::put_map_header(out, kept.size() + (subject ? 1 : 0) + (forged ? 1 : 0));
    for (size_t i = 0; i <= kept.size(); ++i) {
        if (forged && type_at == i) {
            msgpack::put_string(out, kOriginMarkKey);
            msgpack::put_string(out, *forged);
        }
        if (subject && subject_at == i) {
            msgpack::put_string(out, kSubjectKey);
            msgpack::put_string(out, *subject);
        }
        if (i < kept.size()) out.insert(out.end(), record.begin() + kept[i].first, record.begin() + kept[i].second);
    }
    return out;
}

}  // namespace eventctl
