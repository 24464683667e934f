#include "protocol/status.hpp"

namespace protocol::status {

std::string kind_of(const nlohmann::json& record) {
    const auto it = record.find("kind");
    return it != record.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace protocol::status
