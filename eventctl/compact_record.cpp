#include "compact_record.hpp"

#include <algorithm>
#include <array>
#include <string_view>

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
        const bool wide = is_wide(key.value());
        if (!in.skip(1)) return std::nullopt;
        if (!wide) kept.emplace_back(start, in.pos());
    }
    if (marks != kWholeRecordMarks.size()) return std::nullopt;
    const std::optional<std::string> subject = names.subject(true_token, effective_token);
    std::vector<uint8_t> out;
    out.reserve(record.size());
    msgpack::put_map_header(out, kept.size() + (subject ? 1 : 0));
    for (size_t i = 0; i <= kept.size(); ++i) {
        if (subject && subject_at == i) {
            msgpack::put_string(out, kSubjectKey);
            msgpack::put_string(out, *subject);
        }
        if (i < kept.size()) out.insert(out.end(), record.begin() + kept[i].first, record.begin() + kept[i].second);
    }
    return out;
}

}  // namespace eventctl
