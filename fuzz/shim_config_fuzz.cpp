// kmes-shimd's configuration parser (kmes-shim/shimd/config.hpp, PSD-003 §6.1) over arbitrary
// text, read the way load_config reads /etc/kmes/kmes.json (JSON with comments), applied over
// the compiled-in defaults; and the same text as a `--generate` argument. Checked besides
// "no crash": every rejection names its key; a refused --generate says why.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "check.hpp"
#include "shimd/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const nlohmann::json document =
        nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
    if (!document.is_discarded()) {
        const kmes::shim::ConfigLoad load = kmes::shim::apply_config(document, kmes::shim::ShimConfig{});
        for (const kmes::shim::Rejection& rejection : load.rejections) FUZZ_CHECK(!rejection.key.empty());
        // Applied again over its own result: a reload of an unchanged file.
        (void)kmes::shim::apply_config(document, load.config);
    }
    std::string error;
    if (!kmes::shim::parse_generator_flag(text, &error)) FUZZ_CHECK(!error.empty());
    return 0;
}
