// The access-policy parser (eventd/access/policy_parse.cpp, PSD-008 §9.1) over arbitrary JSON
// text as the `Security` object of eventd.json, then the parsed policy evaluated for a few
// callers. Checked besides "no crash": a refused policy says why; root sees everything of
// every type; a resolved pattern is one of the policy's patterns; filtering a record for a
// caller never adds a field.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "check.hpp"
#include "eventd/access/policy.hpp"

namespace {

using eventd::access::Caller;
using nlohmann::json;

Caller caller(uid_t uid, std::vector<gid_t> groups) {
    Caller c;
    c.uid = uid;
    c.gid = groups.empty() ? uid : groups.front();
    c.groups = std::move(groups);
    return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const json security = json::parse(text, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
    if (security.is_discarded()) return 0;
    auto parsed = eventd::access::Policy::parse(security);
    if (!parsed) {
        FUZZ_CHECK(!parsed.error().message.empty());
        return 0;
    }
    const eventd::access::Policy& policy = *parsed.value();
    const std::vector<std::string> patterns = policy.patterns();

    std::vector<std::string> types = {"app.login", "kacs.access_check", "x", "", "*", "a.b.c.d"};
    for (const std::string& p : patterns) {
        types.push_back(p);
        types.push_back(p + ".child");
    }
    const Caller callers[] = {caller(0, {0}), caller(1000, {1000, 4}), caller(65534, {65534})};
    for (const Caller& who : callers) {
        (void)policy.is_admin(who);
        for (const std::string& type : types) {
            for (const bool own_record : {false, true}) {
                const eventd::access::TypeGrant grant = policy.grant(who, type, own_record);
                if (who.is_root()) FUZZ_CHECK(grant.visible && grant.all_fields);
                // `self` is the only thing that tells own records apart.
                if (!policy.uses_self()) FUZZ_CHECK(grant.visible == policy.grant(who, type, !own_record).visible);
            }
            if (auto pattern = policy.resolve(type)) {
                FUZZ_CHECK(std::find(patterns.begin(), patterns.end(), *pattern) != patterns.end());
            }
            eventd::access::CallerAccess access(who, parsed.value());
            json record = {{"timestamp", 1}, {"event_type", type}, {"user", "alice"},
                           {"source", {{"name", "n"}, {"ip", "i"}}}, {"list", {1, 2}}};
            const size_t before = record.size();
            for (const bool own_record : {false, true}) {
                json copy = record;
                access.filter_fields(type, own_record, copy);
                FUZZ_CHECK(copy.is_object() && copy.size() <= before);
            }
        }
    }
    return 0;
}
