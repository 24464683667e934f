// Alerts; see alert.hpp.
#include "eventd/detect/alert.hpp"

#include "base/guid_text.hpp"

namespace eventd::detect {

using nlohmann::json;

base::Result<store::EventRow> make_alert(const LoadedRule& loaded, const json& record) {
    const auto& info = loaded.rule.info();
    const auto boot = base::parse_guid(record.value("boot_id", ""));
    const auto timestamp = record.find("timestamp");
    if (!boot || timestamp == record.end() || !timestamp->is_number_unsigned())
        return base::Error{base::ErrorCode::invalid, "the event has no boot_id or timestamp"};
    json fields = json::object();
    const detection::EventView view(record);
    for (const auto& [name, ref] : loaded.rule.field_refs()) {
        json values = json::array();
        detection::any_value(view, ref, [&](std::string_view v) {
            values.push_back(std::string(v));
            return false;  // every value
        });
        fields[name] = std::move(values);
    }
    const json payload = {{"rule_id", info.id},
                          {"title", info.title},
                          {"level", info.level},
                          {"tags", info.tags},
                          {"rule_file", loaded.file},
                          {"event",
                           {{"boot_id", record.value("boot_id", "")},
                            {"cpu_id", record.value("cpu_id", json())},
                            {"sequence", record.value("sequence", json())},
                            {"event_type", record.value("event_type", "")},
                            {"timestamp", *timestamp}}},
                          {"fields", std::move(fields)}};
    store::EventRow row;
    row.boot_id = *boot;
    row.timestamp = timestamp->get<uint64_t>();
    row.event_type = kAlertTypePrefix + info.level;
    row.payload = json::to_msgpack(payload);
    return row;
}

bool is_alert(const store::EventRow& row) { return row.event_type.rfind(kAlertTypePrefix, 0) == 0; }

}  // namespace eventd::detect
