// Policy::parse: the `Security` object of eventd.json → a Policy (DESIGN.md §2 mapping of the
// registry SDs of PSD-008 §9.1.6). Structure errors are errors (the daemon then denies
// everything, DESIGN.md §3.6). A name that does not resolve — no such user or group, or a
// lookup that failed — leaves a warning and never widens access (issue 39): in an allow entry
// or an admin list its principal is dropped; in a deny entry it becomes `everyone`, since the
// entry might have covered anyone (ACCESS-CONTROL.md "Names that do not resolve").
#include <cerrno>
#include <charconv>
#include <chrono>
#include <string>

#include "eventd/access/fields.hpp"
#include "eventd/access/names.hpp"
#include "eventd/access/policy.hpp"

namespace eventd::access {
namespace {

using nlohmann::json;

// §9.1.7 default ("SYSTEM and Administrators"): root always; group adm stands for the
// Administrators group, as for Security.Admins.
const json& default_events() {
    static const json value = json::parse(R"({"*": [{"allow": ["group:adm"]}]})");
    return value;
}
const json& default_admins() {
    static const json value = json::parse(R"(["group:adm"])");
    return value;
}

std::string type_name(const json& value) { return value.type_name(); }

uint64_t wall_clock_ns() {
    return uint64_t(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count());
}

base::Error invalid(std::string message) { return base::Error{EINVAL, std::move(message)}; }

bool has_space_or_control(std::string_view text) {
    return std::any_of(text.begin(), text.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u <= 0x20 || u == 0x7f;
    });
}

// "*" or dot-separated non-empty components without '*', blanks or control characters.
std::optional<std::string> pattern_problem(const std::string& pattern) {
    if (pattern == "*") return std::nullopt;
    if (pattern.empty()) return "a pattern cannot be empty (use \"*\" for every event type)";
    if (pattern.find('*') != std::string::npos) {
        const size_t star = pattern.find('*');
        std::string parent = pattern.substr(0, star);
        while (!parent.empty() && parent.back() == '.') parent.pop_back();
        std::string hint = parent.empty()
                               ? std::string()
                               : "; '" + parent + "' already covers " + parent + " and every " + parent + ".… type";
        return "'*' is only valid as the whole pattern (patterns are dot-separated prefixes, not globs)" + hint;
    }
    if (has_space_or_control(pattern)) return "a pattern cannot contain blanks or control characters";
    if (pattern.front() == '.' || pattern.back() == '.' || pattern.find("..") != std::string::npos) {
        return "empty component (patterns are dot-separated names such as kacs or kacs.access_denied)";
    }
    return std::nullopt;
}

std::optional<std::string> field_problem(const std::string& field) {
    if (field.empty()) return "a field name cannot be empty";
    if (field.find('*') != std::string::npos)
        return "fields take no wildcard (use \"payload\" for every payload field)";
    if (field.front() == '.' || field.back() == '.' || field.find("..") != std::string::npos) {
        return "empty path component (payload paths look like source.name)";
    }
    return std::nullopt;
}

std::optional<uint32_t> parse_id(std::string_view digits) {
    uint32_t value = 0;
    if (digits.empty()) return std::nullopt;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
    if (value == static_cast<uint32_t>(-1)) return std::nullopt;  // (uid_t)-1 means "no id"
    return value;
}

// Where a principal is written: an entry of Security.Events may name `self` (the record's
// subject); a list of administrators may not — there is no record to be the subject of. A name
// that does not resolve is dropped from an allow entry or an admin list, and denies everyone
// in a deny entry.
enum class PrincipalPlace { allow_entry, deny_entry, admin_list };

// nullopt (no error) when a user or group name does not resolve in an allow entry or an admin
// list: the principal is dropped. In a deny entry such a name is `everyone` (fail closed).
// Either way the principal as written ("user:late") is added to `unresolved`.
base::Result<std::optional<Policy::Principal>> parse_principal(const json& value, const std::string& where,
                                                               PrincipalPlace place, std::vector<std::string>& warnings,
                                                               std::vector<std::string>& unresolved) {
    using Kind = Policy::Principal::Kind;
    const std::string expected = place != PrincipalPlace::admin_list
                                     ? "principals are uid:N, user:NAME, gid:N, group:NAME, everyone or self"
                                     : "principals are uid:N, user:NAME, gid:N, group:NAME or everyone";
    if (!value.is_string()) return invalid(where + ": " + expected + ", got " + value.dump());
    const std::string text = value.get<std::string>();
    if (text == "everyone") return std::optional(Policy::Principal{Kind::everyone, 0});
    if (text == "self") {
        if (place == PrincipalPlace::admin_list) {
            return invalid(where + ": principal 'self' matches the subject of a record and is only valid in " +
                           "Security.Events entries; " + expected);
        }
        return std::optional(Policy::Principal{Kind::self, 0});
    }
    const size_t colon = text.find(':');
    if (colon == std::string::npos) return invalid(where + ": principal '" + text + "': " + expected);
    const std::string kind = text.substr(0, colon);
    const std::string rest = text.substr(colon + 1);
    if (kind == "uid" || kind == "gid") {
        const auto id = parse_id(rest);
        if (!id) return invalid(where + ": principal '" + text + "': " + kind + " needs a decimal id");
        return std::optional(Policy::Principal{kind == "uid" ? Kind::uid : Kind::gid, *id});
    }
    if (kind == "user" || kind == "group") {
        if (rest.empty()) return invalid(where + ": principal '" + text + "': " + kind + " needs a name");
        const auto id = kind == "user" ? uid_of_user(rest) : gid_of_group(rest);
        if (id.ok() && id.value()) return std::optional(Policy::Principal{kind == "user" ? Kind::uid : Kind::gid, **id});
        const std::string why = id.ok() ? "unknown " + kind + " '" + rest + "'" : id.error().message;
        unresolved.push_back(text);
        if (place == PrincipalPlace::deny_entry) {
            // Whom the entry was meant to deny is unknown, so it denies everyone it could have
            // covered: every caller but root, until a reload resolves the name.
            warnings.push_back(where + ": " + why +
                               "; this deny entry denies everyone (fail closed) until a reload resolves the name");
            return std::optional(Policy::Principal{Kind::everyone, 0});
        }
        warnings.push_back(where + ": " + why + ", principal ignored (it matches nobody)");
        return std::optional<Policy::Principal>();
    }
    return invalid(where + ": principal '" + text + "': " + expected);
}

}  // namespace

base::Result<std::vector<Policy::Principal>> parse_principals(const json& list, const std::string& where,
                                                              std::vector<std::string>& warnings) {
    if (!list.is_array()) return invalid(where + ": expected an array of principals, got " + type_name(list));
    std::vector<Policy::Principal> out;
    std::vector<std::string> unresolved;  // dropped: the warnings say which
    for (const json& principal : list) {
        auto p = parse_principal(principal, where, PrincipalPlace::admin_list, warnings, unresolved);
        if (!p.ok()) return p.error();
        if (p.value()) out.push_back(*p.value());
    }
    return out;
}

class PolicyParser {
public:
    base::Result<std::shared_ptr<const Policy>> run(const json& security) {
        const json* root = &security;
        json defaulted;
        if (security.is_null()) {
            defaulted = json{{"Events", default_events()}, {"Admins", default_admins()}};
            root = &defaulted;
        }
        if (!root->is_object()) {
            return invalid("Security: expected an object with \"Events\" and \"Admins\", got " + type_name(*root));
        }
        for (const auto& [key, value] : root->items()) {
            if (key != "Events" && key != "Admins") {
                policy_->warnings_.push_back("Security." + key +
                                             " is not supported and is ignored "
                                             "(known keys: Events, Admins)");
            }
        }
        policy_->loaded_ns_ = wall_clock_ns();
        const json& events =
            root->contains("Events") && !(*root)["Events"].is_null() ? (*root)["Events"] : default_events();
        const json& admins =
            root->contains("Admins") && !(*root)["Admins"].is_null() ? (*root)["Admins"] : default_admins();
        if (auto status = parse_events(events); !status.ok()) return status.error();
        if (auto status = parse_admins(admins); !status.ok()) return status.error();
        return std::shared_ptr<const Policy>(std::move(policy_));
    }

private:
    base::Status parse_events(const json& events) {
        if (!events.is_object()) {
            return invalid(
                "Security.Events: expected an object mapping event type patterns to lists of "
                "entries, got " +
                type_name(events));
        }
        for (const auto& [written, entries] : events.items()) {
            if (auto problem = pattern_problem(written)) {
                return invalid("Security.Events pattern '" + written + "': " + *problem);
            }
            const std::string pattern = lower_ascii(written);
            if (policy_->events_.count(pattern) != 0) {
                return invalid("Security.Events pattern '" + written + "': given twice (patterns ignore case)");
            }
            if (!entries.is_array()) {
                return invalid("Security.Events pattern '" + written +
                               "': expected an array of entries "
                               "like {\"allow\": [\"group:adm\"]}, got " +
                               type_name(entries));
            }
            std::vector<Policy::Entry> parsed;
            for (size_t i = 0; i < entries.size(); ++i) {
                const std::string where = "Security.Events pattern '" + written + "', entry " + std::to_string(i + 1);
                auto entry = parse_entry(entries[i], where);
                if (!entry.ok()) return entry.error();
                parsed.push_back(std::move(entry.value()));
            }
            policy_->events_.emplace(pattern, std::move(parsed));
        }
        if (policy_->events_.count("*") == 0) {
            policy_->warnings_.push_back(
                "Security.Events has no \"*\" pattern: no events are visible "
                "to anyone but root (fail closed)");
        }
        return {};
    }

    base::Result<Policy::Entry> parse_entry(const json& entry, const std::string& where) {
        if (!entry.is_object()) {
            return invalid(where + ": expected an object like {\"allow\": [\"group:adm\"]}, got " + type_name(entry));
        }
        for (const auto& [key, value] : entry.items()) {
            // An unknown key may be a misspelt "fields" whose loss would widen the grant.
            if (key != "allow" && key != "deny" && key != "fields") {
                return invalid(where + ": unknown key \"" + key + "\" (valid: allow, deny, fields)");
            }
        }
        const bool allow = entry.contains("allow");
        const bool deny = entry.contains("deny");
        if (allow == deny) {
            return invalid(where + ": needs exactly one of \"allow\" or \"deny\"");
        }
        Policy::Entry parsed;
        parsed.deny = deny;
        const json& principals = entry[deny ? "deny" : "allow"];
        if (!principals.is_array()) {
            return invalid(where + ": \"" + (deny ? "deny" : "allow") + "\" takes an array of principals, got " +
                           type_name(principals));
        }
        std::vector<std::string> unresolved;
        for (const json& principal : principals) {
            auto p = parse_principal(principal, where, deny, unresolved);
            if (!p.ok()) return p.error();
            if (p.value()) parsed.principals.push_back(*p.value());
        }
        if (deny && !unresolved.empty()) {
            // For STATUS (issue 39): a deny entry that now denies everyone says so there too,
            // not only in the log of the load.
            std::string names;
            for (const std::string& name : unresolved) names += (names.empty() ? "" : " ") + name;
            policy_->failing_closed_.push_back(where + " (" + names + ")");
        }
        if (entry.contains("fields")) {
            if (deny) {
                return invalid(where + ": \"fields\" is only valid on allow entries (a deny hides whole records)");
            }
            const json& fields = entry["fields"];
            if (!fields.is_array() || fields.empty()) {
                return invalid(where +
                               ": \"fields\" takes a non-empty array of field names "
                               "(omit it to grant every field)");
            }
            std::vector<std::string> names;
            for (const json& field : fields) {
                if (!field.is_string()) {
                    return invalid(where + ": field names are strings, got " + field.dump());
                }
                std::string name = field.get<std::string>();
                if (auto problem = field_problem(name)) {
                    return invalid(where + ": field '" + name + "': " + *problem);
                }
                if (!is_header_name(name) && is_header_name(lower_ascii(name))) {
                    policy_->warnings_.push_back(where + ": field '" + name +
                                                 "' is not a header name (names are case-sensitive); "
                                                 "it is read as a payload path");
                }
                names.push_back(std::move(name));
            }
            parsed.fields = std::move(names);
        }
        return parsed;
    }

    base::Result<std::optional<Policy::Principal>> parse_principal(const json& value, const std::string& where,
                                                                   bool deny, std::vector<std::string>& unresolved) {
        auto parsed =
            access::parse_principal(value, where, deny ? PrincipalPlace::deny_entry : PrincipalPlace::allow_entry,
                                    policy_->warnings_, unresolved);
        if (parsed.ok() && parsed.value() && parsed.value()->kind == Policy::Principal::Kind::self) {
            policy_->uses_self_ = true;
        }
        return parsed;
    }

    base::Status parse_admins(const json& admins) {
        auto principals = parse_principals(admins, "Security.Admins", policy_->warnings_);
        if (!principals.ok()) return principals.error();
        policy_->admins_ = std::move(principals.value());
        return {};
    }

    std::shared_ptr<Policy> policy_ = std::make_shared<Policy>();
};

base::Result<std::shared_ptr<const Policy>> Policy::parse(const nlohmann::json& security) {
    return PolicyParser().run(security);
}

std::shared_ptr<const Policy> Policy::refused(std::string problem) {
    auto policy = std::make_shared<Policy>();
    policy->problem_ = std::move(problem);
    policy->loaded_ns_ = wall_clock_ns();
    return policy;
}

}  // namespace eventd::access
