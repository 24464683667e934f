// User and group name lookups for the access policy (DESIGN.md §2: principals user:NAME,
// group:NAME) and for caller names in logs. Thread-safe (the *_r functions); nullopt when the
// name or id has no entry or the lookup fails — callers treat that as "no such principal".
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace eventd::access {

std::optional<uid_t> uid_of_user(const std::string& name);
std::optional<gid_t> gid_of_group(const std::string& name);
std::optional<std::string> user_name_of(uid_t uid);

}  // namespace eventd::access
