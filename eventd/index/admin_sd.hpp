// Who may administer adaptive indexing (`EVENTS INDEX`, PSD-008 §3.3.9 admin_sd, §8.2.7).
// The spec's admin_sd is a self-relative SD checked with kacs_access_check; on Linux
// (DESIGN.md §2) it is the meta row `admin_sd` of eventd-meta.db holding a JSON array of
// principals in the Security.Admins syntax — "uid:N", "user:NAME", "gid:N", "group:NAME",
// "everyone" — parsed by the one principal parser (access::parse_principals). Default
// ["group:adm"] (the Linux stand-in for Administrators); root (SYSTEM) is always allowed.
// Matched against the caller captured at connect (SO_PEERCRED + supplementary groups).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "eventd/access/caller.hpp"
#include "eventd/access/policy.hpp"

namespace eventd::index {

class AdminSd {
public:
    // The text of the meta row. Errors: not JSON, not an array, a malformed principal (the
    // message says which); unknown user/group names only drop their principal (warnings).
    static base::Result<AdminSd> parse(std::string_view text, std::vector<std::string>& warnings);
    static AdminSd defaults();  // ["group:adm"]

    bool allows(const access::Caller& caller) const;

private:
    std::vector<access::Policy::Principal> principals_;
};

}  // namespace eventd::index
