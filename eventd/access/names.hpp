// User and group name lookups for the access policy (DESIGN.md §2: principals user:NAME,
// group:NAME) and for caller names in logs. Thread-safe (the *_r functions).
//
// A name lookup has three outcomes, and the policy treats them differently (issue 39,
// ACCESS-CONTROL.md "Names that do not resolve"): the id; no such name (nullopt); or the lookup
// itself failed (an error: EMFILE, EIO, an NSS service such as SSSD or LDAP down) — then
// nobody knows whether the name exists, so a deny naming it must not simply vanish.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "base/result.hpp"

namespace eventd::access {

base::Result<std::optional<uid_t>> uid_of_user(const std::string& name);
base::Result<std::optional<gid_t>> gid_of_group(const std::string& name);
// For logs only: nullopt when the id has no entry or the lookup fails.
std::optional<std::string> user_name_of(uid_t uid);

}  // namespace eventd::access
