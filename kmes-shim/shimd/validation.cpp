#include "validation.hpp"

#include <vector>

namespace kmes::shim {

bool valid_utf8(std::string_view text) {
    const auto* s = reinterpret_cast<const uint8_t*>(text.data());
    const size_t n = text.size();
    size_t i = 0;
    while (i < n) {
        const uint8_t c = s[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        size_t len;
        uint32_t cp;
        if ((c & 0xe0) == 0xc0) {
            len = 2;
            cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            len = 3;
            cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            len = 4;
            cp = c & 0x07;
        } else
            return false;
        if (i + len > n) return false;
        for (size_t k = 1; k < len; ++k) {
            if ((s[i + k] & 0xc0) != 0x80) return false;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        static constexpr uint32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < kMinForLength[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
        i += len;
    }
    return true;
}

namespace {
uint64_t be(const uint8_t* p, int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v = (v << 8) | p[i];
    return v;
}
}  // namespace

bool valid_msgpack(std::span<const uint8_t> bytes, uint32_t max_depth) {
    const uint8_t* p = bytes.data();
    const size_t end = bytes.size();
    size_t pos = 0;
    // Items still expected by each open container, innermost last. Its size is the depth.
    std::vector<uint64_t> open;
    open.reserve(16);
    if (end == 0) return false;
    for (;;) {
        if (pos >= end) return false;  // a value or a container's child is missing
        const uint8_t tag = p[pos++];
        uint64_t skip = 0;      // bytes of data after the tag (and after a length field)
        uint64_t children = 0;  // items of a container
        bool container = false;
        int len_bytes = 0;  // width of a length field that follows the tag
        auto read_len = [&](int width) -> bool {
            if (pos + width > end) return false;
            skip = be(p + pos, width);
            pos += width;
            return true;
        };
        if (tag <= 0x7f || tag >= 0xe0 || tag == 0xc0 || tag == 0xc2 || tag == 0xc3) {
            // fixint, nil, bool: nothing follows
        } else if (tag <= 0x8f) {
            container = true;
            children = uint64_t(tag & 0x0f) * 2;
        } else if (tag <= 0x9f) {
            container = true;
            children = tag & 0x0f;
        } else if (tag <= 0xbf) {
            skip = tag & 0x1f;
        } else
            switch (tag) {
                case 0xc4:
                    len_bytes = 1;
                    break;  // bin 8/16/32
                case 0xc5:
                    len_bytes = 2;
                    break;
                case 0xc6:
                    len_bytes = 4;
                    break;
                case 0xc7:
                    if (!read_len(1)) return false;
                    skip += 1;
                    break;  // ext 8/16/32: + type byte
                case 0xc8:
                    if (!read_len(2)) return false;
                    skip += 1;
                    break;
                case 0xc9:
                    if (!read_len(4)) return false;
                    skip += 1;
                    break;
                case 0xca:
                    skip = 4;
                    break;  // float32
                case 0xcb:
                    skip = 8;
                    break;  // float64
                case 0xcc:
                case 0xd0:
                    skip = 1;
                    break;
                case 0xcd:
                case 0xd1:
                    skip = 2;
                    break;
                case 0xce:
                case 0xd2:
                    skip = 4;
                    break;
                case 0xcf:
                case 0xd3:
                    skip = 8;
                    break;
                case 0xd4:
                    skip = 2;
                    break;  // fixext 1/2/4/8/16: type byte + data
                case 0xd5:
                    skip = 3;
                    break;
                case 0xd6:
                    skip = 5;
                    break;
                case 0xd7:
                    skip = 9;
                    break;
                case 0xd8:
                    skip = 17;
                    break;
                case 0xd9:
                    len_bytes = 1;
                    break;  // str 8/16/32
                case 0xda:
                    len_bytes = 2;
                    break;
                case 0xdb:
                    len_bytes = 4;
                    break;
                case 0xdc:
                case 0xdd: {  // array 16/32
                    const int w = tag == 0xdc ? 2 : 4;
                    if (pos + w > end) return false;
                    container = true;
                    children = be(p + pos, w);
                    pos += w;
                    break;
                }
                case 0xde:
                case 0xdf: {  // map 16/32
                    const int w = tag == 0xde ? 2 : 4;
                    if (pos + w > end) return false;
                    container = true;
                    children = be(p + pos, w) * 2;
                    pos += w;
                    break;
                }
                default:
                    return false;  // 0xc1 is never used
            }
        if (len_bytes && !read_len(len_bytes)) return false;
        if (skip > end - pos) return false;
        pos += skip;

        if (container) {
            if (open.size() + 1 > max_depth) return false;  // nesting deeper than MaxNestingDepth
            if (children > 0) {
                open.push_back(children);
                continue;
            }
        }
        // One item finished: close every container it completes.
        while (!open.empty() && --open.back() == 0) open.pop_back();
        if (open.empty()) return pos == end;  // the single top-level value is complete
    }
}

}  // namespace kmes::shim
