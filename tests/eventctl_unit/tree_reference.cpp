#include "tree_reference.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "base/display_escape.hpp"
#include "eventctl/pretty_format.hpp"
#include "eventctl/time_text.hpp"

namespace eventctl::test {
namespace {

using Json = nlohmann::ordered_json;

std::string hex(const std::vector<uint8_t>& bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    for (const uint8_t b : bytes) {
        out.push_back(kDigits[b >> 4]);
        out.push_back(kDigits[b & 0x0f]);
    }
    return out;
}

// nlohmann keeps the msgpack ext type (an int8) as an unsigned subtype.
int ext_type(const Json::binary_t& bin) { return static_cast<int8_t>(static_cast<uint8_t>(bin.subtype())); }

// `value` with binaries, extensions and non-finite floats replaced by the tagged objects the JSON
// writer prints ($binary, $extension, $float).
Json with_type_tags(const Json& value) {
    switch (value.type()) {
        case Json::value_t::binary: {
            const auto& bin = value.get_binary();
            if (bin.has_subtype()) return Json{{"$extension", Json{{"type", ext_type(bin)}, {"data", hex(bin)}}}};
            return Json{{"$binary", hex(bin)}};
        }
        case Json::value_t::number_float: {
            const double d = value.get<double>();
            if (std::isnan(d)) return Json{{"$float", "nan"}};
            if (std::isinf(d)) return Json{{"$float", d > 0 ? "+inf" : "-inf"}};
            return value;
        }
        case Json::value_t::object: {
            Json out = Json::object();
            for (const auto& [k, v] : value.items()) out[k] = with_type_tags(v);
            return out;
        }
        case Json::value_t::array: {
            Json out = Json::array();
            for (const auto& v : value) out.push_back(with_type_tags(v));
            return out;
        }
        default:
            return value;
    }
}

// Strings and keys go through pretty_string/pretty_key, whose rules did not change (their own
// cases are in pretty_record_test.cpp); the structure and every other value as the tree code did.
std::string pretty_value(const Json& value) {
    switch (value.type()) {
        case Json::value_t::null:
            return "null";
        case Json::value_t::boolean:
            return value.get<bool>() ? "true" : "false";
        case Json::value_t::string:
            return pretty_string(value.get_ref<const std::string&>());
        case Json::value_t::number_float: {
            const double d = value.get<double>();
            if (std::isnan(d)) return "nan";
            if (std::isinf(d)) return d > 0 ? "+inf" : "-inf";
            return value.dump();
        }
        case Json::value_t::binary: {
            const auto& bin = value.get_binary();
            if (bin.has_subtype()) return "ext(" + std::to_string(ext_type(bin)) + "):" + hex(bin);
            return "bin:" + hex(bin);
        }
        case Json::value_t::object: {
            std::string out = "{";
            bool first = true;
            for (const auto& [k, v] : value.items()) {
                if (!first) out += ',';
                first = false;
                out += pretty_string(k) + ":" + pretty_value(v);
            }
            return out + "}";
        }
        case Json::value_t::array: {
            std::string out = "[";
            bool first = true;
            for (const auto& v : value) {
                if (!first) out += ',';
                first = false;
                out += pretty_value(v);
            }
            return out + "]";
        }
        default:
            return value.dump();  // integers
    }
}

}  // namespace

// nlohmann's text, with C1 and bidirectional controls as \uXXXX (issue 39: the same JSON value,
// nothing invisible on a terminal; base/display_escape.hpp).
std::string reference_json(const Bytes& record) {
    std::string json = with_type_tags(Json::from_msgpack(record)).dump(-1, ' ', false, Json::error_handler_t::replace);
    base::escape_json_invisibles(json);
    return json;
}

std::string reference_pretty(const Bytes& record) {
    const Json tree = Json::from_msgpack(record);
    std::string line;
    for (const auto& [k, v] : tree.items()) {
        if (!line.empty()) line += ' ';
        // Event times (pretty_format.hpp): integers under `timestamp` and `*_timestamp`.
        const bool time_key = k == "timestamp" || (k.size() > 10 && k.ends_with("_timestamp"));
        if (time_key && v.is_number_integer() && (v.is_number_unsigned() ? v.get<uint64_t>() <= INT64_MAX : true)) {
            line += pretty_key(k) + "=" + rfc3339(v.get<int64_t>(), TimeZone::utc);
            continue;
        }
        line += pretty_key(k) + "=" + pretty_value(v);
    }
    return line;
}

}  // namespace eventctl::test
