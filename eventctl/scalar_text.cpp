#include "scalar_text.hpp"

#include <array>
#include <charconv>
#include <cmath>

#include <nlohmann/json.hpp>

namespace eventctl {

void append_unsigned(std::string& out, uint64_t value) {
    std::array<char, 24> buf;
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), value);
    out.append(buf.data(), r.ptr);
}

void append_signed(std::string& out, int64_t value) {
    std::array<char, 24> buf;
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), value);
    out.append(buf.data(), r.ptr);
}

void append_finite_float(std::string& out, double value) {
    // nlohmann's own Grisu2 conversion, the one its dump() calls (serializer::dump_float, with
    // the same 64-byte buffer): byte for byte the text eventctl printed before, without
    // building a json value and a std::string per number.
    std::array<char, 64> buf;
    char* end = nlohmann::detail::to_chars(buf.data(), buf.data() + buf.size(), value);
    out.append(buf.data(), end);
}

std::string_view non_finite_name(double value) {
    if (std::isnan(value)) return "nan";
    return value > 0 ? "+inf" : "-inf";
}

void append_hex(std::string& out, std::string_view bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    for (const char c : bytes) {
        const auto b = static_cast<uint8_t>(c);
        out.push_back(kDigits[b >> 4]);
        out.push_back(kDigits[b & 0x0f]);
    }
}

}  // namespace eventctl
