#include "store/store_position.hpp"

#include <cerrno>
#include <cstring>
#include <span>
#include <vector>

#include "base/base64url.hpp"
#include "base/fnv1a.hpp"

namespace eventd::store {
namespace {

constexpr std::string_view kVersion1 = "1.";
constexpr size_t kFileEntryBytes = 16 + 8;
// A cursor names at most this many files: far above any store (MaxShards is 256, plus
// historical and quarantined files) and small enough that a hostile one costs nothing.
constexpr size_t kMaxFiles = 65536;

base::Error not_a_cursor(const std::string& why) {
    return {EINVAL, "not a cursor eventd wrote (" + why + "); use the `cursor` of an ok frame unchanged"};
}

}  // namespace

FileId legacy_file_id(std::string_view file_name) {
    // Two FNV-1a 64 hashes (different offset bases) of a prefixed name: stable across versions
    // and machines, which is all it needs — names within one store differ.
    FileId id{};
    const uint64_t bases[2] = {base::kFnv1aOffsetBasis, base::kFnv1aSecondBasis};
    for (int half = 0; half < 2; ++half) {
        const uint64_t h = base::fnv1a64(base::fnv1a64(bases[half], "eventd-legacy-file:"), file_name);
        for (int i = 0; i < 8; ++i) id[half * 8 + i] = uint8_t(h >> (8 * i));
    }
    return id;
}

std::vector<uint8_t> position_bytes(const StorePosition& position) {
    std::vector<uint8_t> bytes(position.store.begin(), position.store.end());
    bytes.reserve(16 + position.last_id.size() * kFileEntryBytes);
    for (const auto& [file, last] : position.last_id) {  // std::map: sorted by file id
        bytes.insert(bytes.end(), file.begin(), file.end());
        const auto value = static_cast<uint64_t>(last);
        for (int i = 0; i < 8; ++i) bytes.push_back(uint8_t(value >> (8 * i)));
    }
    return bytes;
}

std::string encode_cursor(const StorePosition& position) {
    return std::string(kVersion1) + base::base64url_encode(position_bytes(position));
}

base::Result<StorePosition> decode_cursor(std::string_view text) {
    const size_t dot = text.find('.');
    if (dot == std::string_view::npos || dot == 0) return not_a_cursor("no version prefix");
    if (text.substr(0, dot + 1) != kVersion1) {
        return base::Error{EINVAL, "cursor version '" + std::string(text.substr(0, dot)) +
                                       "' is not one this eventd reads (a cursor of a newer eventd?)"};
    }
    if (text.size() - kVersion1.size() > (16 + kMaxFiles * kFileEntryBytes) * 4 / 3 + 4) return not_a_cursor("too long");
    const auto bytes = base::base64url_decode(text.substr(kVersion1.size()));
    if (!bytes) return not_a_cursor("not base64url");
    return position_from_bytes(*bytes);
}

base::Result<StorePosition> position_from_bytes(std::span<const uint8_t> bytes_in) {
    const std::span<const uint8_t>* bytes = &bytes_in;
    if (bytes->size() > 16 + kMaxFiles * kFileEntryBytes) return not_a_cursor("too long");
    if (bytes->size() < 16 || (bytes->size() - 16) % kFileEntryBytes != 0) return not_a_cursor("wrong length");

    StorePosition position;
    std::memcpy(position.store.data(), bytes->data(), 16);
    FileId previous{};
    for (size_t at = 16; at < bytes->size(); at += kFileEntryBytes) {
        FileId file;
        std::memcpy(file.data(), bytes->data() + at, 16);
        uint64_t value = 0;
        for (int i = 0; i < 8; ++i) value |= uint64_t((*bytes)[at + 16 + i]) << (8 * i);
        const auto last = static_cast<int64_t>(value);
        if (at > 16 && !(previous < file)) return not_a_cursor("files out of order");
        if (last <= 0) return not_a_cursor("a row id below 1");
        position.last_id.emplace(file, last);
        previous = file;
    }
    return position;
}

}  // namespace eventd::store
