// eventd's msgpack reader (msgpack/reader.hpp) over arbitrary bytes: stored payloads, request
// frames and reply frames all go through it. Beyond "no crash":
//   - skip() and a walk item by item (next() + check_depth) agree on what is one valid value;
//   - what skip() accepts with string keys, nlohmann's decoder accepts too (record.cpp and the
//     frame decoders hand a value to nlohmann only after skip() said yes);
//   - the shim's emit validator (kmes-shim/shimd/validation.cpp) and the reader agree on
//     whole payloads: a payload the shim stores is one eventd reads whole (PSD-003 §2.1.6).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "check.hpp"
#include "msgpack/reader.hpp"
#include "shimd/validation.hpp"

namespace {

namespace msgpack = eventd::msgpack;

// One value walked item by item, containers opened with check_depth, without recursion:
// what the eventctl writers and the row encoder do. True when it is one valid value.
bool walk(std::span<const uint8_t> bytes, int max_depth, msgpack::MapKeys keys) {
    msgpack::Reader in(bytes, max_depth, keys);
    // Items still expected by each open container; a map's count is doubled (key, value),
    // so a key is due whenever an even number is left.
    struct Open {
        uint64_t left;
        bool map;
    };
    std::vector<Open> open;
    do {
        const bool key_expected = !open.empty() && open.back().map && open.back().left % 2 == 0;
        if (key_expected && keys == msgpack::MapKeys::strings && !in.next_is_string()) return false;
        auto item = in.next();
        if (!item) return false;
        if (!open.empty()) --open.back().left;
        if (item->kind == msgpack::Kind::map || item->kind == msgpack::Kind::array) {
            if (!in.check_depth(static_cast<int>(open.size()) + 1)) return false;
            const bool map = item->kind == msgpack::Kind::map;
            open.push_back(Open{uint64_t{item->count} * (map ? 2 : 1), map});
        }
        while (!open.empty() && open.back().left == 0) open.pop_back();
    } while (!open.empty());
    return in.at_end();
}

bool skip_whole(std::span<const uint8_t> bytes, int max_depth, msgpack::MapKeys keys) {
    msgpack::Reader in(bytes, max_depth, keys);
    return in.skip() && in.at_end();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::span<const uint8_t> bytes(data, size);
    for (const int depth : {1, 32, msgpack::kPayloadMaxDepth}) {
        const bool any_keys = skip_whole(bytes, depth, msgpack::MapKeys::any);
        const bool string_keys = skip_whole(bytes, depth, msgpack::MapKeys::strings);
        FUZZ_CHECK(any_keys == walk(bytes, depth, msgpack::MapKeys::any));
        FUZZ_CHECK(string_keys == walk(bytes, depth, msgpack::MapKeys::strings));
        FUZZ_CHECK(!string_keys || any_keys);
        FUZZ_CHECK(any_keys == kmes::shim::valid_msgpack(bytes, static_cast<uint32_t>(depth)));
        if (string_keys && depth == msgpack::kPayloadMaxDepth) {
            try {
                (void)nlohmann::json::from_msgpack(bytes.begin(), bytes.end());
            } catch (const nlohmann::json::exception& e) {
                FUZZ_FAIL("nlohmann refuses a value the reader accepted", e.what());
            }
        }
    }
    return 0;
}
