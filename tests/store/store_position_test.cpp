// A stream's cursor (store_position.hpp) and the base64url it is written in.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>

#include "base/base64url.hpp"
#include "store/store_identity.hpp"
#include "store/store_position.hpp"
#include "store_test_util.hpp"
#include "support/temp_dir.hpp"

using eventd::store::decode_cursor;
using eventd::store::encode_cursor;
using eventd::store::FileId;
using eventd::store::StorePosition;

namespace {

std::vector<uint8_t> bytes_of(std::string_view s) { return {s.begin(), s.end()}; }

FileId file_id(uint8_t first) {
    FileId id{};
    id[0] = first;
    id[15] = 0xee;
    return id;
}

}  // namespace

TEST_CASE("base64url: the RFC 4648 test vectors, without padding", "[cursor]") {
    CHECK(base::base64url_encode(bytes_of("")) == "");
    CHECK(base::base64url_encode(bytes_of("f")) == "Zg");
    CHECK(base::base64url_encode(bytes_of("fo")) == "Zm8");
    CHECK(base::base64url_encode(bytes_of("foo")) == "Zm9v");
    CHECK(base::base64url_encode(bytes_of("foob")) == "Zm9vYg");
    CHECK(base::base64url_encode(bytes_of("fooba")) == "Zm9vYmE");
    CHECK(base::base64url_encode(bytes_of("foobar")) == "Zm9vYmFy");
    CHECK(base::base64url_encode(std::vector<uint8_t>{0xfb, 0xff}) == "-_8");  // the url-safe characters
    CHECK(base::base64url_decode("Zm9vYmE") == bytes_of("fooba"));
    CHECK(base::base64url_decode("-_8") == std::vector<uint8_t>{0xfb, 0xff});
}

TEST_CASE("base64url: what no encoder writes is refused", "[cursor]") {
    CHECK_FALSE(base::base64url_decode("Zm9vYg=="));  // padding
    CHECK_FALSE(base::base64url_decode("Zm9v+g"));    // the standard alphabet's '+'
    CHECK_FALSE(base::base64url_decode("Zm9vY"));     // 4k+1 characters
    CHECK_FALSE(base::base64url_decode("Zh"));        // "f" is "Zg": bits left over in the tail
}

TEST_CASE("base64url: random bytes round-trip", "[cursor]") {
    std::mt19937 rng(7);
    for (int n = 0; n < 200; ++n) {
        std::vector<uint8_t> b(size_t(rng() % 70));
        for (auto& x : b) x = uint8_t(rng());
        INFO("length " << b.size());
        CHECK(base::base64url_decode(base::base64url_encode(b)) == b);
    }
}

TEST_CASE("a cursor round-trips a store position, files in any order", "[cursor]") {
    StorePosition p;
    p.store.fill(0x5a);
    CHECK(decode_cursor(encode_cursor(p)).value() == p);  // nothing delivered yet

    p.last_id[file_id(9)] = 1;
    p.last_id[file_id(3)] = 123456789012345;
    p.last_id[file_id(200)] = INT64_MAX;
    const std::string text = encode_cursor(p);
    CHECK(text.rfind("1.", 0) == 0);
    CHECK(text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", 2) ==
          std::string::npos);
    auto back = decode_cursor(text);
    REQUIRE(back);
    CHECK(*back == p);
}

TEST_CASE("a cursor eventd did not write is refused with a reason, never misread", "[cursor]") {
    StorePosition p;
    p.store.fill(1);
    p.last_id[file_id(1)] = 10;
    p.last_id[file_id(2)] = 20;
    const std::string good = encode_cursor(p);

    auto refused = [](std::string_view text) {
        auto r = decode_cursor(text);
        INFO(std::string(text));
        REQUIRE_FALSE(r);
        CHECK(r.error().code == base::ErrorCode::invalid);
        return r.error().message;
    };
    CHECK_THAT(refused(""), Catch::Contains("not a cursor"));
    CHECK_THAT(refused("garbage"), Catch::Contains("not a cursor"));
    CHECK_THAT(refused("2." + good.substr(2)), Catch::Contains("newer eventd"));
    CHECK_THAT(refused(good.substr(0, good.size() - 3)), Catch::Contains("not a cursor"));  // cut short
    CHECK_THAT(refused(good + "AAAA"), Catch::Contains("not a cursor"));                    // 3 stray bytes
    CHECK_THAT(refused("1.!!!!"), Catch::Contains("not base64url"));

    // Files out of order, or a row id of 0: the encoder never writes them.
    std::vector<uint8_t> raw(16, 1);
    for (const uint8_t first : {2, 1}) {
        const FileId f = file_id(first);
        raw.insert(raw.end(), f.begin(), f.end());
        for (int i = 0; i < 8; ++i) raw.push_back(i == 0 ? 5 : 0);
    }
    CHECK_THAT(refused("1." + base::base64url_encode(raw)), Catch::Contains("out of order"));
    std::vector<uint8_t> zero(16, 1);
    const FileId f = file_id(1);
    zero.insert(zero.end(), f.begin(), f.end());
    zero.insert(zero.end(), 8, 0);
    CHECK_THAT(refused("1." + base::base64url_encode(zero)), Catch::Contains("below 1"));
}

TEST_CASE("a store id is created once, durably, and read back the same", "[cursor]") {
    test_support::TempDir dir;
    auto missing = eventd::store::read_store_id(dir.path());
    REQUIRE_FALSE(missing);
    CHECK(missing.error().code == base::ErrorCode::not_found);

    auto created = eventd::store::load_or_create_store_id(dir.path());
    REQUIRE(created);
    CHECK(std::filesystem::exists(dir / "store-id"));
    CHECK_FALSE(std::filesystem::exists(dir / "store-id.tmp"));
    CHECK(eventd::store::load_or_create_store_id(dir.path()).value() == *created);
    CHECK(eventd::store::read_store_id(dir.path()).value() == *created);

    test_support::TempDir other;
    CHECK(eventd::store::load_or_create_store_id(other.path()).value() != *created);
}

TEST_CASE("a store-id file that holds no GUID is reported, not replaced", "[cursor]") {
    test_support::TempDir dir;
    { std::ofstream(dir / "store-id") << "not a guid\n"; }
    auto r = eventd::store::load_or_create_store_id(dir.path());
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("store-id") && Catch::Contains("does not hold a store id"));
    std::ifstream in(dir / "store-id");
    std::string line;
    std::getline(in, line);
    CHECK(line == "not a guid");
}
