// Sigma's auditd fields in eventd's audit events; the mapping is drawn in audit_fields.hpp.
#include "detection/audit_fields.hpp"

#include <algorithm>
#include <array>
#include <cctype>

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

bool scalar(const json& v, const std::function<bool(std::string_view)>& pred) {
    if (v.is_string()) return pred(v.get_ref<const std::string&>());
    if (v.is_number_integer())
        return pred(v.is_number_unsigned() ? std::to_string(v.get<uint64_t>()) : std::to_string(v.get<int64_t>()));
    if (v.is_number_float()) return pred(v.dump());
    if (v.is_boolean()) return pred(v.get<bool>() ? "true" : "false");
    return false;
}

const json* member(const json& event, const std::string& key) {
    if (!event.is_object()) return nullptr;
    const auto it = event.find(key);
    return it == event.end() || it->is_null() ? nullptr : &*it;
}

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
        f.id = true;
    }
    return f;
}

bool any_value(const json& event, const AuditField& field, const std::function<bool(std::string_view)>& pred) {
    switch (field.kind) {
        case AuditField::Kind::record_type: {
            const json* types = member(event, "record_types");
            if (!types || !types->is_array()) return false;
            return std::any_of(types->begin(), types->end(), [&](const json& t) { return scalar(t, pred); });
        }
        case AuditField::Kind::argv: {
            const json* argv = member(event, "argv");
            return argv && argv->is_array() && field.index < argv->size() && scalar((*argv)[field.index], pred);
        }
        case AuditField::Kind::any_path: {
            const json* paths = member(event, "paths");
            if (!paths || !paths->is_array()) return false;
            return std::any_of(paths->begin(), paths->end(), [&](const json& p) {
                const json* v = member(p, field.name);
                return v && scalar(*v, pred);
            });
        }
        case AuditField::Kind::payload: {
            const json* v = member(event, field.name);
            if (v && scalar(*v, pred)) return true;
            if (v && field.id && v->is_number_unsigned() && v->get<uint64_t>() == 4294967295u && pred("unset"))
                return true;
            const json* also = field.also.empty() ? nullptr : member(event, field.also);
            return also && scalar(*also, pred);
        }
    }
    return false;
}

bool has_field(const json& event, const AuditField& field) {
    return any_value(event, field, [](std::string_view) { return true; });
}

}  // namespace eventd::detection
