#include "eventd/index/where_fields.hpp"

#include <algorithm>

namespace eventd::index {
namespace {

void collect(const query::Condition& c, std::vector<std::string>& out) {
    if (c.kind == query::Condition::Kind::compare) {
        out.push_back(c.comparison.field.name);
        return;
    }
    for (const query::Condition& child : c.children) collect(child, out);
}

}  // namespace

std::vector<std::string> where_fields(const query::Query& q) {
    std::vector<std::string> out;
    if (q.type_pattern) out.emplace_back("event_type");
    for (const query::Condition& c : q.where) collect(c, out);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

}  // namespace eventd::index
