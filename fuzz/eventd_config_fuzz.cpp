// eventd's configuration parser (eventd/config.hpp, PSD-008 §12.1) over arbitrary text, read
// the way load_eventd_config reads /etc/eventd/eventd.json (JSON with comments). Checked
// besides "no crash": a refusal names a key or says what is wrong; reading the same document
// again with its own result in force (a reload of an unchanged file) changes nothing.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "check.hpp"
#include "eventd/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const nlohmann::json document =
        nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
    if (document.is_discarded()) return 0;
    auto first = eventd::parse_eventd_config(document);
    if (!first) {
        FUZZ_CHECK(!first.error().message.empty());
        return 0;
    }
    for (const eventd::ConfigProblem& problem : first->problems) FUZZ_CHECK(!problem.message.empty());
    auto reload = eventd::parse_eventd_config(document, first->config);
    FUZZ_CHECK(reload.ok());
    std::vector<std::string> restart_only;
    const auto changes = eventd::tuning_changes(first.value(), reload.value(), &restart_only);
    FUZZ_CHECK_MSG(changes.empty(), changes.empty() ? "" : changes.front().key);
    FUZZ_CHECK(restart_only.empty());
    return 0;
}
