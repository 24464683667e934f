// The subject of a record from its two token GUIDs (eventctl/subject_name.hpp): local account
// names, true→effective, the hex digits of a token no account has, nothing for null tokens.
#include <pwd.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "base/guid_text.hpp"
#include "base/identity_guid.hpp"
#include "eventctl/subject_name.hpp"

namespace eventctl::test {
namespace {

// The token of `uid` as eventd sends it: GUID text.
std::string token_of(uint32_t uid) { return base::guid_text(base::token_guid(uid)); }

std::vector<LocalAccount> two_accounts() { return {{0, "root"}, {1000, "alice"}}; }

}  // namespace

TEST_CASE("a subject whose true and effective tokens are one account's is its name", "[subject]") {
    SubjectNames names(two_accounts);
    CHECK(names.subject(token_of(1000), token_of(1000)) == "alice");
    CHECK(names.subject(token_of(0), token_of(0)) == "root");
}

TEST_CASE("a subject whose tokens differ is true→effective", "[subject]") {
    SubjectNames names(two_accounts);
    CHECK(names.subject(token_of(1000), token_of(0)) == "alice\xe2\x86\x92root");
    CHECK(names.subject(token_of(0), token_of(1000)) ==
          "root\xe2\x86\x92"
          "alice");
}

TEST_CASE("a token no local account has shows its GUID's first 8 hex digits", "[subject]") {
    SubjectNames names(two_accounts);
    const std::string stranger = token_of(4242);
    CHECK(names.subject(stranger, stranger) == stranger.substr(0, 8));
    CHECK(names.subject(token_of(1000), stranger) == "alice\xe2\x86\x92" + stranger.substr(0, 8));
    // Any case, braces: whatever the one GUID reader takes.
    CHECK(names.subject("{" + token_of(1000) + "}", token_of(1000)) == "alice");
}

TEST_CASE("null tokens are no subject; one token alone is the subject", "[subject]") {
    SubjectNames names(two_accounts);
    CHECK(names.subject(std::nullopt, std::nullopt) == std::nullopt);
    CHECK(names.subject(token_of(1000), std::nullopt) == "alice");
    CHECK(names.subject(std::nullopt, token_of(0)) == "root");
    // A value that is not GUID text counts as null.
    CHECK(names.subject("not a guid", "") == std::nullopt);
    CHECK(names.subject("not a guid", token_of(0)) == "root");
}

TEST_CASE("the accounts are read once, and only when a record has a token", "[subject]") {
    int reads = 0;
    SubjectNames names([&reads] {
        ++reads;
        return two_accounts();
    });
    CHECK(names.subject(std::nullopt, std::nullopt) == std::nullopt);
    CHECK(reads == 0);
    CHECK(names.subject(token_of(0), token_of(0)) == "root");
    CHECK(names.subject(token_of(4242), token_of(1000)).has_value());
    CHECK(reads == 1);
}

TEST_CASE("a uid with two names shows the first, as getpwuid does", "[subject]") {
    SubjectNames names([] { return std::vector<LocalAccount>{{0, "root"}, {0, "toor"}}; });
    CHECK(names.subject(token_of(0), token_of(0)) == "root");
}

TEST_CASE("the tokens of this machine's accounts name them: uid 0 is root", "[subject]") {
    SubjectNames names;  // the real passwd database
    CHECK(names.subject(token_of(0), token_of(0)) == "root");
    const passwd* me = getpwuid(getuid());
    REQUIRE(me != nullptr);
    const std::string expected = getuid() == 0 ? "root" : std::string(me->pw_name) + "\xe2\x86\x92root";
    CHECK(names.subject(token_of(getuid()), token_of(0)) == expected);
}

}  // namespace eventctl::test
