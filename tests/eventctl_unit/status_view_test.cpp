// `eventctl status` cells still render every value kind through the one pretty writer.
#include <catch2/catch.hpp>

#include "eventctl/status_view.hpp"

namespace eventctl::test {

TEST_CASE("status cells show values as pretty does, strings unquoted", "[status]") {
    Json record = {{"kind", "extra"}, {"name", "a\tb"}, {"ratio", 0.5}, {"n", -3}, {"list", {1, "x"}}};
    record["blob"] = Json::binary({0x01, 0xab});
    record["ext"] = Json::binary({0xff}, 7);
    const std::string text = render_status({record});
    CHECK(text.find("Other: extra") != std::string::npos);
    CHECK(text.find("a\\tb") != std::string::npos);
    CHECK(text.find("0.5") != std::string::npos);
    CHECK(text.find("-3") != std::string::npos);
    CHECK(text.find("[1,\"x\"]") != std::string::npos);
    CHECK(text.find("bin:01ab") != std::string::npos);
    CHECK(text.find("ext(7):ff") != std::string::npos);
}

}  // namespace eventctl::test
