#include "event_format.hpp"

#include <ctime>

#include <fmt/format.h>

#include "base/display_escape.hpp"
#include "base/guid_text.hpp"
#include "kmes/guid.hpp"
#include "msgpack/reader.hpp"

namespace kmes::tools {

std::string iso_timestamp(uint64_t ns) {
    const time_t secs = static_cast<time_t>(ns / 1'000'000'000u);
    struct tm utc {};
    gmtime_r(&secs, &utc);
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:09}Z", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday,
                       utc.tm_hour, utc.tm_min, utc.tm_sec, ns % 1'000'000'000u);
}

namespace {
std::string hex(std::span<const uint8_t> bytes) {
    std::string out;
    out.reserve(bytes.size() * 2);
    for (uint8_t b : bytes) out += fmt::format("{:02x}", b);
    return out;
}

// Human lines show msgpack bin as "hex:…" instead of nlohmann's {"bytes":[…],"subtype":…}.
// Depth is bounded before nlohmann sees the bytes (add_payload): ring payloads from kernel
// emitters are not validated by the shim, and nlohmann's reader recurses once per level.
void show_binary_as_hex(nlohmann::ordered_json& value) {
    if (value.is_binary()) {
        value = "hex:" + hex(value.get_binary());
        return;
    }
    if (value.is_structured())
        for (auto& child : value) show_binary_as_hex(child);
}

nlohmann::ordered_json guid_or_null(const EventView& event, const Guid& guid) {
    if (!event.has_identity()) return nullptr;
    return base::guid_text(guid);
}
}  // namespace

void add_payload(nlohmann::ordered_json& out, std::span<const uint8_t> payload) {
    if (payload.empty()) {
        out["payload"] = nullptr;
        return;
    }
    // The one msgpack reader checks the nesting first (msgpack::kPayloadMaxDepth, the deepest
    // payload a valid shim configuration admits): a hostile kernel payload of a million nested
    // arrays is reported, not decoded on kmes-tail's stack.
    eventd::msgpack::Reader check(payload, eventd::msgpack::kPayloadMaxDepth);
    if (auto walked = check.skip(); !walked && eventd::msgpack::is_too_deep(walked.error())) {
        out["payload_error"] = walked.error().message;
        out["payload_hex"] = hex(payload);
        return;
    }
    try {
        out["payload"] = nlohmann::ordered_json::from_msgpack(payload.begin(), payload.end());
    } catch (const nlohmann::ordered_json::exception& e) {
        out["payload_error"] = e.what();
        out["payload_hex"] = hex(payload);
    }
}

nlohmann::ordered_json event_json(const EventView& event) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    out["event_size"] = event.event_size();
    out["header_size"] = event.header_size();
    out["timestamp"] = event.timestamp();
    out["sequence"] = event.sequence();
    out["cpu_id"] = event.cpu_id();
    out["origin_class"] = event.origin_class();
    out["type"] = std::string(event.type());
    out["effective_token"] = guid_or_null(event, event.effective_token());
    out["true_token"] = guid_or_null(event, event.true_token());
    out["process"] = guid_or_null(event, event.process());
    add_payload(out, event.payload());
    return out;
}

std::string event_line(const EventView& event) {
    nlohmann::ordered_json payload = nlohmann::ordered_json::object();
    add_payload(payload, event.payload());
    if (payload.contains("payload")) show_binary_as_hex(payload["payload"]);
    std::string shown = payload.contains("payload")
                            ? dump_line(payload["payload"])
                            : "<undecodable msgpack: " + payload["payload_error"].get<std::string>() +
                                  "> hex=" + payload["payload_hex"].get<std::string>();
    // The type is an emitter's text: escaped (base/display_escape.hpp) and quoted when it holds
    // anything that could be misread, so no line can be forged or the terminal steered.
    const std::string_view type = event.type();
    const bool quote = type.empty() || base::needs_display_escape(type) ||
                       type.find_first_of(" =\"") != std::string_view::npos;
    const std::string type_text = quote ? "\"" + base::display_escaped(type, '"') + "\"" : std::string(type);
    return fmt::format("{} cpu={} seq={} origin={} type={} {}", iso_timestamp(event.timestamp()), event.cpu_id(),
                       event.sequence(), unsigned{event.origin_class()}, type_text, shown);
}

nlohmann::ordered_json gap_json(const Gap& gap) {
    return {{"gap",
             {{"cpu_id", gap.cpu_id},
              {"first_sequence", gap.first_sequence},
              {"last_sequence", gap.last_sequence},
              {"count", gap.count()}}}};
}

std::string gap_line(const Gap& gap) {
    return fmt::format("# cpu={} gap: sequences {}..{} lost ({} events)", gap.cpu_id, gap.first_sequence,
                       gap.last_sequence, gap.count());
}

// JSON escapes control characters; C1 and bidirectional controls, which JSON allows raw, become
// \uXXXX too (the same value): a line of kmes-tail never steers the terminal.
std::string dump_line(const nlohmann::ordered_json& value) {
    std::string line = value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    base::escape_json_invisibles(line);
    return line;
}

}  // namespace kmes::tools
