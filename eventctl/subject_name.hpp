// The subject of a record as a person reads it, for the default pretty view (issue 24 item 5;
// compact_record.hpp). A record's subject is its header's true and effective token GUIDs (the
// real and effective uid of the process it is about, DESIGN.md §2). A token is derived from its
// uid (base::token_guid, base/identity_guid.hpp) and cannot be inverted, so eventctl derives the
// tokens of the local accounts and looks the record's tokens up among them:
//
//   true token       effective token     subject
//   alice's          alice's             alice
//   alice's          root's              alice→root            true→effective
//   no account's     root's              8d2f61a0→root         the GUID's first 8 hex digits
//   null             null                (none: a kernel event without a subject)
//   alice's          null                alice                 the one that is there
//
// The accounts are read once (getpwent: /etc/passwd and whatever NSS adds), when the first
// record with a token needs them: a result without tokens never reads them. A uid with two
// names gets the first, as getpwuid(3) would. Names are taken from this machine: a store read
// on another machine, or an account deleted since, shows the hex digits.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace eventctl {

struct LocalAccount {
    uint32_t uid = 0;
    std::string name;
};

// Every account of the passwd database, in its order (setpwent, getpwent, endpwent).
std::vector<LocalAccount> read_local_accounts();

class SubjectNames {
public:
    using AccountSource = std::function<std::vector<LocalAccount>()>;
    explicit SubjectNames(AccountSource accounts = read_local_accounts) : accounts_(std::move(accounts)) {}

    // The subject of the header values `true_token` and `effective_token` (GUID text as eventd
    // sends it; nullopt for null). A value that is not GUID text counts as null. nullopt when
    // both are null: the record has no subject.
    std::optional<std::string> subject(std::optional<std::string_view> true_token,
                                       std::optional<std::string_view> effective_token);

private:
    using Guid = std::array<uint8_t, 16>;
    std::string name_of(const Guid& token);

    AccountSource accounts_;
    bool loaded_ = false;
    std::map<Guid, std::string> names_;  // token GUID → account name
};

}  // namespace eventctl
