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

}  // namespace

std::optional<std::vector<uint8_t>> without_wide_header(std::span<const uint8_t> record) {
    msgpack::Reader in(record, msgpack::kRecordMaxDepth, msgpack::MapKeys::any);
    auto pairs = in.map_header();
    if (!pairs) return std::nullopt;
    // The pairs to keep, as byte ranges of `record` (key and value copied unchanged).
    std::vector<std::pair<size_t, size_t>> kept;
    size_t marks = 0;
    for (uint32_t i = 0; i < pairs.value(); ++i) {
        const size_t start = in.pos();
        if (!in.next_is_string()) return std::nullopt;
        auto key = in.string();
        if (!key) return std::nullopt;
        const bool wide = is_wide(key.value());
        if (std::find(kWholeRecordMarks.begin(), kWholeRecordMarks.end(), key.value()) != kWholeRecordMarks.end())
            ++marks;
        if (!in.skip(1)) return std::nullopt;
        if (!wide) kept.emplace_back(start, in.pos());
    }
    if (marks != kWholeRecordMarks.size()) return std::nullopt;
    std::vector<uint8_t> out;
    out.reserve(record.size());
    msgpack::put_map_header(out, kept.size());
    for (const auto& [from, to] : kept) out.insert(out.end(), record.begin() + from, record.begin() + to);
    return out;
}

}  // namespace eventctl
