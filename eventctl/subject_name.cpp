#include "subject_name.hpp"

#include <pwd.h>

#include "base/guid_text.hpp"
#include "base/identity_guid.hpp"

namespace eventctl {
namespace {

// "→" (U+2192): between the true and the effective account when they differ.
constexpr std::string_view kArrow = "\xe2\x86\x92";

// How many hex digits of a token no local account has are shown: enough to tell tokens apart
// within one result, short enough to leave the line to the payload.
constexpr std::size_t kUnknownTokenDigits = 8;

}  // namespace

std::vector<LocalAccount> read_local_accounts() {
    std::vector<LocalAccount> accounts;
    setpwent();
    while (const passwd* pw = getpwent()) accounts.push_back({static_cast<uint32_t>(pw->pw_uid), pw->pw_name});
    endpwent();
    return accounts;
}

std::optional<std::string> SubjectNames::subject(std::optional<std::string_view> true_token,
                                                 std::optional<std::string_view> effective_token) {
    const auto guid_of = [](std::optional<std::string_view> text) -> std::optional<Guid> {
        if (!text) return std::nullopt;
        return base::parse_guid(*text);
    };
    const std::optional<Guid> real = guid_of(true_token);
    const std::optional<Guid> effective = guid_of(effective_token);
    if (!real && !effective) return std::nullopt;
    if (!real) return name_of(*effective);
    if (!effective || *effective == *real) return name_of(*real);
    std::string both = name_of(*real);
    both += kArrow;
    both += name_of(*effective);
    return both;
}

std::string SubjectNames::name_of(const Guid& token) {
    if (!loaded_) {
        loaded_ = true;
        for (LocalAccount& account : accounts_())
            names_.try_emplace(base::token_guid(account.uid), std::move(account.name));  // a uid's first name
    }
    if (const auto it = names_.find(token); it != names_.end()) return it->second;
    return base::guid_text(token).substr(0, kUnknownTokenDigits);
}

}  // namespace eventctl
