#include "json_tagging.hpp"

#include <cmath>

namespace eventctl {

std::string to_hex(const std::vector<uint8_t>& bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const uint8_t b : bytes) {
        out.push_back(kDigits[b >> 4]);
        out.push_back(kDigits[b & 0x0f]);
    }
    return out;
}

int ext_type(const Json::binary_t& binary) {
    // nlohmann stores the msgpack ext type (an int8) as an unsigned subtype: undo that.
    return static_cast<int8_t>(static_cast<uint8_t>(binary.subtype()));
}

Json tag_for_json(const Json& value) {
    switch (value.type()) {
    case Json::value_t::binary: {
        const auto& bin = value.get_binary();
        if (bin.has_subtype()) return Json{{"$extension", Json{{"type", ext_type(bin)}, {"data", to_hex(bin)}}}};
        return Json{{"$binary", to_hex(bin)}};
    }
    case Json::value_t::number_float: {
        const double d = value.get<double>();
        if (std::isnan(d)) return Json{{"$float", "nan"}};
        if (std::isinf(d)) return Json{{"$float", d > 0 ? "+inf" : "-inf"}};
        return value;
    }
    case Json::value_t::object: {
        Json out = Json::object();
        for (const auto& [k, v] : value.items()) out[k] = tag_for_json(v);
        return out;
    }
    case Json::value_t::array: {
        Json out = Json::array();
        for (const auto& v : value) out.push_back(tag_for_json(v));
        return out;
    }
    default:
        return value;
    }
}

namespace {

// Most records hold nothing to tag; they are dumped without building a copy.
bool needs_tagging(const Json& value) {
    switch (value.type()) {
    case Json::value_t::binary: return true;
    case Json::value_t::number_float: return !std::isfinite(value.get<double>());
    case Json::value_t::object:
    case Json::value_t::array:
        for (const auto& v : value) {
            if (needs_tagging(v)) return true;
        }
        return false;
    default: return false;
    }
}

}  // namespace

std::string record_to_json(const Json& record) {
    const auto dump = [](const Json& v) { return v.dump(-1, ' ', false, Json::error_handler_t::replace); };
    return needs_tagging(record) ? dump(tag_for_json(record)) : dump(record);
}

}  // namespace eventctl
