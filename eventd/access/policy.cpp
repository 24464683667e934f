// Evaluating the read-path policy: pattern resolution (PSD-008 §9.1.5) and the verdict for
// one caller (deny wins, allows' fields unite) — DESIGN.md §2's stand-in for an SD access
// check. Parsing the configuration is policy_parse.cpp.
#include "eventd/access/policy.hpp"

#include <algorithm>

#include "eventd/access/fields.hpp"

namespace eventd::access {

bool Policy::Principal::matches(const Caller& caller, bool own_record) const {
    switch (kind) {
        case Kind::everyone:
            return true;
        case Kind::self:
            return own_record;
        case Kind::uid:
            return caller.uid == id;
        case Kind::gid:
            return caller.in_group(id);
    }
    return false;
}

std::shared_ptr<const Policy> Policy::deny_all() { return std::make_shared<const Policy>(); }

std::optional<std::string> Policy::resolve(std::string_view event_type) const {
    // (1) the exact type, (2) its parents, dropping the last dot-separated component each
    // time — so "kacs" covers "kacs" and "kacs.x" but never "kacs_extended" — (3) "*".
    std::string candidate = lower_ascii(event_type);
    for (;;) {
        if (events_.find(candidate) != events_.end()) return candidate;
        const size_t dot = candidate.rfind('.');
        if (dot == std::string::npos) break;
        candidate.resize(dot);
    }
    if (events_.find("*") != events_.end()) return std::string("*");
    return std::nullopt;  // no catch-all: fail closed (§9.1.7)
}

std::vector<std::string> Policy::patterns() const {
    std::vector<std::string> out;
    out.reserve(events_.size());
    for (const auto& [pattern, entries] : events_) out.push_back(pattern);
    return out;
}

TypeGrant Policy::grant_pattern(const Caller& caller, std::string_view pattern, bool own_record) const {
    TypeGrant grant;
    if (caller.is_root()) {
        grant.visible = grant.all_fields = grant.all_payload = true;
        return grant;
    }
    // §9.1.7 / issue 4: the "*" default MUST exist; without it the whole event policy is
    // considered missing and nobody but root sees any event (fail closed, DESIGN.md §3.6).
    if (events_.find("*") == events_.end()) return grant;
    const auto found = events_.find(pattern);
    if (found == events_.end()) return grant;

    bool allowed = false;
    std::vector<std::string> fields;
    for (const Entry& entry : found->second) {
        const bool applies = std::any_of(entry.principals.begin(), entry.principals.end(),
                                         [&](const Principal& p) { return p.matches(caller, own_record); });
        if (!applies) continue;
        if (entry.deny) return TypeGrant{};  // deny wins, whatever the order of entries
        allowed = true;
        if (!entry.fields) {
            grant.all_fields = true;
        } else {
            fields.insert(fields.end(), entry.fields->begin(), entry.fields->end());
        }
    }
    if (!allowed) return grant;
    grant.visible = true;
    if (grant.all_fields) {
        grant.all_payload = true;
        return grant;
    }
    grant.all_payload = std::find(fields.begin(), fields.end(), "payload") != fields.end();
    std::sort(fields.begin(), fields.end());
    fields.erase(std::unique(fields.begin(), fields.end()), fields.end());
    if (grant.all_payload) {
        // "payload" subsumes every payload path; keep only the header names.
        fields.erase(
            std::remove_if(fields.begin(), fields.end(), [](const std::string& f) { return !is_header_name(f); }),
            fields.end());
        if (fields.size() == kHeaderFieldCount) grant.all_fields = true;
    }
    grant.fields = std::move(fields);
    return grant;
}

TypeGrant Policy::grant(const Caller& caller, std::string_view event_type, bool own_record) const {
    if (caller.is_root()) return grant_pattern(caller, "*", own_record);  // root: everything, even without "*"
    const auto pattern = resolve(event_type);
    if (!pattern) return TypeGrant{};
    return grant_pattern(caller, *pattern, own_record);
}

bool Policy::is_admin(const Caller& caller) const {
    if (caller.is_root()) return true;
    return std::any_of(admins_.begin(), admins_.end(), [&](const Principal& p) { return p.matches(caller, false); });
}

}  // namespace eventd::access
