#include "eventd/index/admin_sd.hpp"

#include <algorithm>

#include "eventd/index/meta_db.hpp"

namespace eventd::index {

base::Result<AdminSd> AdminSd::parse(std::string_view text, std::vector<std::string>& warnings) {
    const nlohmann::json list = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (list.is_discarded())
        return base::Error{EINVAL, "admin_sd: not JSON (expected an array such as [\"group:adm\", \"user:alice\"])"};
    auto principals = access::parse_principals(list, "admin_sd", warnings);
    if (!principals) return principals.error();
    AdminSd sd;
    sd.principals_ = std::move(*principals);
    return sd;
}

AdminSd AdminSd::defaults() {
    std::vector<std::string> ignored;  // an absent adm group only narrows it to root
    auto sd = parse(kDefaultAdminSd, ignored);
    return sd ? std::move(*sd) : AdminSd{};
}

bool AdminSd::allows(const access::Caller& caller) const {
    if (caller.is_root()) return true;  // SYSTEM is always allowed (§3.3.9 default)
    return std::any_of(principals_.begin(), principals_.end(),
                       [&](const access::Policy::Principal& p) { return p.matches(caller, false); });
}

}  // namespace eventd::index
