// Sigma's auditd fields in eventd's audit events; the mapping is drawn in audit_fields.hpp.
#include "detection/audit_fields.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>

namespace eventd::detection {
namespace {

using nlohmann::json;

// The PATH record's fields (auditd's `PATH` type): in eventd, keys of every map in `paths`.
constexpr std::array<std::string_view, 14> kPathFields = {"name",   "nametype", "inode",    "dev",  "mode",
                                                          "ouid",   "ogid",     "rdev",     "item", "cap_fp",
                                                          "cap_fi", "cap_fe",   "cap_fver", "obj"};
// Fields auditd writes as ids, which eventd stores with their names beside (<field>_name).
constexpr std::array<std::string_view, 10> kIdFields = {"uid", "euid", "suid", "fsuid", "auid",
                                                        "gid", "egid", "sgid", "fsgid", "ouid"};

bool is_arg_field(std::string_view f, size_t& index) {
    if (f.size() < 2 || f[0] != 'a' ||
        !std::all_of(f.begin() + 1, f.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
        return false;
    index = std::stoul(std::string(f.substr(1)));
    return true;
}

}  // namespace

AuditField map_audit_field(std::string_view sigma_field, const std::vector<std::string>& selection_types) {
    AuditField f;
    f.name = std::string(sigma_field);
    if (sigma_field == "type") {
        f.kind = AuditField::Kind::record_type;
        return f;
    }
    const bool syscall_only =
        !selection_types.empty() && std::all_of(selection_types.begin(), selection_types.end(),
                                                [](const std::string& t) { return t == "SYSCALL"; });
    size_t index = 0;
    if (is_arg_field(sigma_field, index) && !syscall_only) {
        f.kind = AuditField::Kind::argv;
        f.index = index;
        return f;
    }
    if (std::find(kPathFields.begin(), kPathFields.end(), sigma_field) != kPathFields.end()) {
        f.kind = AuditField::Kind::any_path;
        return f;
    }
    // SYSCALL: auditd's interpreted name of the syscall field (ausearch -i, enriched logs).
    if (sigma_field == "SYSCALL") f.name = "syscall";
    if (f.name == "syscall") f.also = "syscall_nr";
    if (std::find(kIdFields.begin(), kIdFields.end(), sigma_field) != kIdFields.end()) {
        f.also = f.name + "_name";
    }
    return f;
}

std::string_view EventView::keep(std::string text) { return made_.emplace_back(std::move(text)); }

EventView::EventView(const json& event) {
    // A scalar's text, or nothing for null, maps and arrays.
    auto text_of = [this](const json& v) -> std::optional<std::string_view> {
        if (v.is_string()) return std::string_view(v.get_ref<const std::string&>());
        if (v.is_number_unsigned()) return keep(std::to_string(v.get<uint64_t>()));
        if (v.is_number_integer()) return keep(std::to_string(v.get<int64_t>()));
        if (v.is_number_float()) return keep(v.dump());
        if (v.is_boolean()) return std::string_view(v.get<bool>() ? "true" : "false");
        return std::nullopt;
    };
    if (!event.is_object()) return;
    for (auto it = event.begin(); it != event.end(); ++it) {
        const std::string_view key = it.key();
        const json& v = it.value();
        if (key == "argv" && v.is_array()) {
            for (const json& a : v) argv_.push_back(text_of(a).value_or(std::string_view()));
        } else if (key == "record_types" && v.is_array()) {
            for (const json& t : v)
                if (auto text = text_of(t)) record_types_.push_back(*text);
        } else if (key == "paths" && v.is_array()) {
            for (const json& p : v) {
                if (!p.is_object()) continue;
                for (auto f = p.begin(); f != p.end(); ++f)
                    if (auto text = text_of(f.value())) paths_[f.key()].push_back(*text);
            }
        } else if (auto text = text_of(v)) {
            Values& values = payload_[key];
            values.push_back(*text);
            // auditd's interpretation of the unset id (it has no name in eventd's events).
            if (v.is_number_unsigned() && v.get<uint64_t>() == 4294967295u &&
                std::find(kIdFields.begin(), kIdFields.end(), key) != kIdFields.end())
                values.push_back("unset");
        }
    }
    add_all(event);
}

void EventView::add_all(const json& v) {
    if (v.is_string()) {
        all_.push_back(v.get_ref<const std::string&>());
    } else if (v.is_number_unsigned()) {
        all_.push_back(keep(std::to_string(v.get<uint64_t>())));
    } else if (v.is_number_integer()) {
        all_.push_back(keep(std::to_string(v.get<int64_t>())));
    } else if (v.is_array() || v.is_object()) {
        for (const json& item : v) add_all(item);
    }
}

std::span<const std::string_view> EventView::values(const AuditField& field) const {
    switch (field.kind) {
        case AuditField::Kind::record_type:
            return record_types_;
        case AuditField::Kind::argv:
            if (field.index < argv_.size()) return std::span(argv_).subspan(field.index, 1);
            return {};
        case AuditField::Kind::any_path: {
            const auto it = paths_.find(field.name);
            return it == paths_.end() ? std::span<const std::string_view>() : it->second;
        }
        case AuditField::Kind::payload: {
            const auto it = payload_.find(field.name);
            return it == payload_.end() ? std::span<const std::string_view>() : it->second;
        }
    }
    return {};
}

bool any_value(const EventView& event, const AuditField& field, const std::function<bool(std::string_view)>& pred) {
    for (std::string_view v : event.values(field))
        if (pred(v)) return true;
    if (field.kind == AuditField::Kind::payload && !field.also.empty()) {
        AuditField also = field;
        also.name = field.also;
        also.also.clear();
        for (std::string_view v : event.values(also))
            if (pred(v)) return true;
    }
    return false;
}

bool has_field(const EventView& event, const AuditField& field) {
    return any_value(event, field, [](std::string_view) { return true; });
}

}  // namespace eventd::detection
