// Sigma rules: YAML (yaml-cpp) to a compiled detection, and its evaluation on audit events.
#include "detection/sigma_rule.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "base/base64url.hpp"

namespace eventd::detection {
namespace {

using base::Error;
using base::ErrorCode;
using nlohmann::json;
using FieldTest = SigmaRule::FieldTest;
using Selection = SigmaRule::Selection;
using Alternative = SigmaRule::Alternative;
using Keywords = SigmaRule::Keywords;

Error invalid(const std::string& what) { return Error{ErrorCode::invalid, what}; }
Error unsupported(const std::string& what) { return Error{ErrorCode::not_supported, what}; }

// A scalar's text; "" for anything else, an absent key's node included (yaml-cpp's lookups of
// a key that is not there give a node that throws when asked anything but whether it is valid).
std::string scalar_text(const YAML::Node& n) { return n && n.IsScalar() ? n.Scalar() : std::string(); }

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string upper(std::string s) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
}

std::vector<uint8_t> bytes_of(std::string_view s) { return {s.begin(), s.end()}; }

// base64offset (pySigma's SigmaBase64OffsetModifier): the value's encodings at the three byte
// offsets it can have in a longer encoded text, each cut to the characters that depend on the
// value alone.
std::vector<std::string> base64_offsets(std::string_view value) {
    static constexpr size_t kStart[] = {0, 2, 3};
    static constexpr int kEnd[] = {0, -3, -2};  // 0: to the end
    std::vector<std::string> out;
    for (size_t i = 0; i < 3; ++i) {
        const std::string encoded = base::base64_encode(bytes_of(std::string(i, ' ') + std::string(value)));
        const int end = kEnd[(value.size() + i) % 3];
        const size_t stop = end == 0 ? encoded.size() : encoded.size() - static_cast<size_t>(-end);
        out.push_back(stop > kStart[i] ? encoded.substr(kStart[i], stop - kStart[i]) : std::string());
    }
    return out;
}

// windash (pySigma's SigmaWindowsDashModifier): a `-` or `/` that starts a flag (`\B[-/]\b`: no
// word character before it, one after it) may be any of the dashes Windows programs accept —
// kept for rules that use it, however rare on Linux.
std::vector<std::string> windash_variants(const std::string& value) {
    static const std::vector<std::string> kDashes = {"-", "/", "\xe2\x80\x93", "\xe2\x80\x94", "\xe2\x80\x95"};
    auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    std::vector<std::string> out = {""};
    for (size_t i = 0; i < value.size(); ++i) {
        const bool flag = (value[i] == '-' || value[i] == '/') && (i == 0 || !word(value[i - 1])) &&
                          i + 1 < value.size() && word(value[i + 1]);
        std::vector<std::string> next;
        for (const std::string& prefix : out) {
            if (flag && out.size() < 625)  // four flags in one value at most: more is no rule's
                for (const std::string& d : kDashes) next.push_back(prefix + d);
            else
                next.push_back(prefix + value[i]);
        }
        out = std::move(next);
    }
    return out;
}

struct Modifiers {
    ValuePattern::Anchor anchor = ValuePattern::Anchor::whole;
    bool all = false, cased = false, re = false, base64 = false, base64offset = false, windash = false;
    std::string re_flags;
    std::optional<FieldTest::Kind> kind;  // exists, comparisons
};

base::Result<Modifiers> parse_modifiers(const std::vector<std::string>& names, const std::string& field) {
    Modifiers m;
    for (const std::string& name : names) {
        if (name == "contains")
            m.anchor = ValuePattern::Anchor::contains;
        else if (name == "startswith")
            m.anchor = ValuePattern::Anchor::starts_with;
        else if (name == "endswith")
            m.anchor = ValuePattern::Anchor::ends_with;
        else if (name == "all")
            m.all = true;
        else if (name == "cased")
            m.cased = true;
        else if (name == "re")
            m.re = true;
        else if (m.re && (name == "i" || name == "m" || name == "s"))
            m.re_flags += name;
        else if (name == "base64")
            m.base64 = true;
        else if (name == "base64offset")
            m.base64offset = true;
        else if (name == "windash")
            m.windash = true;
        else if (name == "exists")
            m.kind = FieldTest::Kind::exists;
        else if (name == "gt")
            m.kind = FieldTest::Kind::greater;
        else if (name == "gte")
            m.kind = FieldTest::Kind::greater_equal;
        else if (name == "lt")
            m.kind = FieldTest::Kind::less;
        else if (name == "lte")
            m.kind = FieldTest::Kind::less_equal;
        else
            return unsupported("field '" + field + "': modifier '" + name + "' is not supported");
    }
    if (m.re && (m.anchor != ValuePattern::Anchor::whole || m.base64 || m.base64offset || m.windash))
        return unsupported("field '" + field + "': 're' with another value modifier is not supported");
    return m;
}

// The patterns of one value under `m` (a value list makes several; base64offset and windash
// expand one value into several, any of which matches).
base::Result<std::vector<ValuePattern>> patterns_of(const std::string& value, const Modifiers& m,
                                                    const std::string& field) {
    if (m.re) {
        auto p = ValuePattern::regex(value, m.re_flags);
        if (!p) return Error{p.error().code, "field '" + field + "': " + p.error().message};
        return std::vector<ValuePattern>{std::move(*p)};
    }
    std::vector<std::string> values = m.windash ? windash_variants(value) : std::vector<std::string>{value};
    std::vector<ValuePattern> out;
    for (const std::string& v : values) {
        if (m.base64offset) {
            for (const std::string& e : base64_offsets(v)) out.push_back(ValuePattern::literal(e, m.anchor, true));
        } else if (m.base64) {
            out.push_back(ValuePattern::literal(base::base64_encode(bytes_of(v)), m.anchor, true));
        } else {
            out.push_back(ValuePattern::glob(v, m.anchor, m.cased));
        }
    }
    return out;
}

class Compiler {
public:
    base::Result<Selection> selection(const std::string& name, const YAML::Node& node) {
        Selection s;
        if (node.IsMap()) {
            auto a = alternative(name, node);
            if (!a) return a.error();
            s.alternatives.push_back(std::move(*a));
            return s;
        }
        if (!node.IsSequence() || node.size() == 0)
            return invalid("detection '" + name + "': a map of fields, a list of maps or a list of keywords expected");
        if (node[0].IsMap()) {
            for (const YAML::Node& item : node) {
                if (!item.IsMap()) return invalid("detection '" + name + "': a list mixing maps and values");
                auto a = alternative(name, item);
                if (!a) return a.error();
                s.alternatives.push_back(std::move(*a));
            }
            return s;
        }
        auto k = keywords(name, node, {});
        if (!k) return k.error();
        s.alternatives.push_back(Alternative{{}, {std::move(*k)}});
        return s;
    }

    std::vector<std::pair<std::string, AuditField>> field_refs() const { return {fields_.begin(), fields_.end()}; }

private:
    // A list of keywords (any value of the event contains one; all of them with `all`).
    base::Result<Keywords> keywords(const std::string& name, const YAML::Node& node,
                                    const std::vector<std::string>& modifiers) {
        Keywords k;
        for (const std::string& m : modifiers) {
            if (m != "all") return unsupported("detection '" + name + "': keywords with modifier '" + m + "'");
            k.all = true;
        }
        std::vector<YAML::Node> items;
        if (node.IsSequence())
            for (const YAML::Node& item : node) items.push_back(item);
        else
            items.push_back(node);
        for (const YAML::Node& item : items) {
            if (!item.IsScalar()) return invalid("detection '" + name + "': a list mixing keywords and maps");
            k.patterns.push_back(ValuePattern::glob(item.Scalar(), ValuePattern::Anchor::contains, false));
        }
        if (k.patterns.empty()) return invalid("detection '" + name + "': an empty keyword list");
        return k;
    }

    base::Result<Alternative> alternative(const std::string& name, const YAML::Node& map) {
        // `type`'s values first: in a selection on SYSCALL records alone, a0… are that record's.
        std::vector<std::string> types;
        for (const auto& entry : map) {
            if (scalar_text(entry.first) != "type") continue;
            if (entry.second.IsScalar()) types.push_back(upper(entry.second.Scalar()));
            if (entry.second.IsSequence())
                for (const YAML::Node& v : entry.second) types.push_back(upper(scalar_text(v)));
        }
        Alternative out;
        std::vector<FieldTest>& tests = out.tests;
        for (const auto& entry : map) {
            const std::string key = scalar_text(entry.first);
            if (key.empty()) return invalid("detection '" + name + "': a field name expected");
            std::vector<std::string> parts;
            for (size_t start = 0;;) {
                const size_t bar = key.find('|', start);
                parts.push_back(key.substr(start, bar == std::string::npos ? std::string::npos : bar - start));
                if (bar == std::string::npos) break;
                start = bar + 1;
            }
            const std::string field = parts[0];
            if (field.empty()) {  // '|all': [...] — keywords, with their modifiers
                auto k = keywords(name, entry.second, {parts.begin() + 1, parts.end()});
                if (!k) return k.error();
                out.keywords.push_back(std::move(*k));
                continue;
            }
            auto m = parse_modifiers({parts.begin() + 1, parts.end()}, field);
            if (!m) return m.error();
            FieldTest t;
            t.field = map_audit_field(field, types);
            t.all = m->all;
            fields_.emplace(field, t.field);
            std::vector<YAML::Node> values;
            if (entry.second.IsSequence())
                for (const YAML::Node& v : entry.second) values.push_back(v);
            else
                values.push_back(entry.second);
            if (values.empty()) values.push_back(YAML::Node(YAML::NodeType::Null));  // [] is a null check
            if (m->kind == FieldTest::Kind::exists) {
                const std::string v = lower(scalar_text(values[0]));
                if (values.size() != 1 || (v != "true" && v != "false"))
                    return invalid("field '" + field + "': exists takes true or false");
                t.kind = FieldTest::Kind::exists;
                t.exists = v == "true";
                tests.push_back(std::move(t));
                continue;
            }
            if (m->kind) {
                t.kind = *m->kind;
                try {
                    t.number = std::stod(scalar_text(values.at(0)));
                } catch (const std::exception&) {
                    return invalid("field '" + field + "': a comparison takes a number, not '" +
                                   scalar_text(values[0]) + "'");
                }
                tests.push_back(std::move(t));
                continue;
            }
            bool null_value = false;
            for (const YAML::Node& v : values) {
                if (v.IsNull()) {
                    null_value = true;
                    continue;
                }
                if (!v.IsScalar()) return invalid("field '" + field + "': a value must be a string, number or null");
                auto p = patterns_of(v.Scalar(), *m, field);
                if (!p) return p.error();
                t.patterns.push_back(std::move(*p));
            }
            if (null_value && t.patterns.empty()) {
                t.kind = FieldTest::Kind::absent;
            } else if (null_value) {
                return unsupported("field '" + field + "': null among other values is not supported");
            }
            tests.push_back(std::move(t));
        }
        return out;
    }

    std::map<std::string, AuditField> fields_;  // first use of each
};

bool compare(const FieldTest& t, const EventView& event) {
    return any_value(event, t.field, [&](std::string_view text) {
        double v = 0;
        try {
            size_t used = 0;
            v = std::stod(std::string(text), &used);
            if (used != text.size()) return false;
        } catch (const std::exception&) {
            return false;
        }
        switch (t.kind) {
            case FieldTest::Kind::greater:
                return v > t.number;
            case FieldTest::Kind::greater_equal:
                return v >= t.number;
            case FieldTest::Kind::less:
                return v < t.number;
            case FieldTest::Kind::less_equal:
                return v <= t.number;
            default:
                return false;
        }
    });
}

bool test_holds(const FieldTest& t, const EventView& event) {
    switch (t.kind) {
        case FieldTest::Kind::exists:
            return has_field(event, t.field) == t.exists;
        case FieldTest::Kind::absent:
            return !has_field(event, t.field);
        case FieldTest::Kind::patterns:
            break;
        default:
            return compare(t, event);
    }
    auto matched = [&](const std::vector<ValuePattern>& group) {
        return any_value(event, t.field, [&](std::string_view text) {
            return std::any_of(group.begin(), group.end(), [&](const ValuePattern& p) { return p.matches(text); });
        });
    };
    return t.all ? std::all_of(t.patterns.begin(), t.patterns.end(), matched)
                 : std::any_of(t.patterns.begin(), t.patterns.end(), matched);
}

}  // namespace

base::Result<SigmaRule> SigmaRule::compile(std::string_view text) {
    std::vector<YAML::Node> documents;
    try {
        documents = YAML::LoadAll(std::string(text));
    } catch (const YAML::Exception& e) {
        return invalid("not YAML: line " + std::to_string(e.mark.line + 1) + ", column " +
                       std::to_string(e.mark.column + 1) + ": " + e.msg);
    }
    if (documents.size() != 1)
        return unsupported(documents.empty() ? "empty file"
                                             : "rule collections (several YAML documents) are not supported");
    const YAML::Node& doc = documents[0];
    if (!doc.IsMap()) return invalid("a rule is a YAML map");
    SigmaRule rule;
    try {
        rule.info_.id = scalar_text(doc["id"]);
        rule.info_.title = scalar_text(doc["title"]);
        rule.info_.level = lower(scalar_text(doc["level"]));
        rule.info_.status = scalar_text(doc["status"]);
        rule.info_.description = scalar_text(doc["description"]);
        if (const YAML::Node tags = doc["tags"]; tags && tags.IsSequence())
            for (const YAML::Node& t : tags) rule.info_.tags.push_back(scalar_text(t));
        if (rule.info_.id.empty()) return invalid("no id: every rule needs one (its alerts carry it)");
        if (rule.info_.title.empty()) return invalid("no title");
        if (rule.info_.level.empty()) rule.info_.level = "medium";  // Sigma leaves it optional
        static const std::set<std::string> kLevels = {"informational", "low", "medium", "high", "critical"};
        if (!kLevels.count(rule.info_.level)) return invalid("level '" + rule.info_.level + "' is not a Sigma level");

        const YAML::Node logsource = doc["logsource"];
        const bool has_logsource = logsource && logsource.IsMap();
        const std::string product = has_logsource ? lower(scalar_text(logsource["product"])) : "";
        const std::string service = has_logsource ? lower(scalar_text(logsource["service"])) : "";
        const std::string category = has_logsource ? lower(scalar_text(logsource["category"])) : "";
        if (product != "linux" || service != "auditd") {
            std::string source = "product '" + product + "'";
            if (!service.empty()) source += ", service '" + service + "'";
            if (!category.empty()) source += ", category '" + category + "'";
            return unsupported("logsource " + source +
                               ": eventd evaluates Sigma rules on its audit events (product linux, service auditd)");
        }

        const YAML::Node detection = doc["detection"];
        if (!detection || !detection.IsMap()) return invalid("no detection");
        Compiler compiler;
        std::set<std::string> identifiers;
        for (const auto& entry : detection) {
            const std::string name = scalar_text(entry.first);
            if (name == "condition") continue;
            if (name == "timeframe") return unsupported("timeframe (a correlation over time) is not supported");
            auto s = compiler.selection(name, entry.second);
            if (!s) return s.error();
            rule.selections_.emplace(name, std::move(*s));
            identifiers.insert(name);
        }
        const YAML::Node condition = detection["condition"];
        if (!condition) return invalid("detection has no condition");
        std::vector<std::string> conditions;
        if (condition.IsSequence())
            for (const YAML::Node& c : condition) conditions.push_back(scalar_text(c));
        else
            conditions.push_back(scalar_text(condition));
        // Several conditions: any of them (the specification's older form).
        std::string text;
        for (const std::string& c : conditions) text += (text.empty() ? "(" : " or (") + c + ")";
        auto parsed = parse_condition(text, identifiers);
        if (!parsed) return parsed.error();
        rule.condition_ = std::move(*parsed);
        rule.field_refs_ = compiler.field_refs();
        for (const auto& [name, ref] : rule.field_refs_) rule.fields_.push_back(name);
    } catch (const YAML::Exception& e) {
        return invalid("line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
    }
    return rule;
}

bool SigmaRule::matches(const json& event) const { return matches(EventView(event)); }

bool SigmaRule::matches(const EventView& event) const { return holds(*condition_, event); }

bool SigmaRule::holds(const Condition& c, const EventView& event) const {
    switch (c.kind) {
        case Condition::Kind::identifier:
            return selected(selections_.at(c.name), event);
        case Condition::Kind::not_:
            return !holds(*c.operands[0], event);
        case Condition::Kind::and_:
            return std::all_of(c.operands.begin(), c.operands.end(), [&](const auto& o) { return holds(*o, event); });
        case Condition::Kind::or_:
            return std::any_of(c.operands.begin(), c.operands.end(), [&](const auto& o) { return holds(*o, event); });
        case Condition::Kind::all_of:
            return std::all_of(c.names.begin(), c.names.end(),
                               [&](const auto& n) { return selected(selections_.at(n), event); });
        case Condition::Kind::any_of:
            return std::any_of(c.names.begin(), c.names.end(),
                               [&](const auto& n) { return selected(selections_.at(n), event); });
    }
    return false;
}

bool SigmaRule::selected(const Selection& s, const EventView& event) const {
    // Keywords search every value of the event, as they search the whole log line in a SIEM.
    auto keywords_hold = [&](const Keywords& k) {
        auto found = [&](const ValuePattern& p) {
            const auto all = event.all_values();
            return std::any_of(all.begin(), all.end(), [&](std::string_view v) { return p.matches(v); });
        };
        return k.all ? std::all_of(k.patterns.begin(), k.patterns.end(), found)
                     : std::any_of(k.patterns.begin(), k.patterns.end(), found);
    };
    return std::any_of(s.alternatives.begin(), s.alternatives.end(), [&](const Alternative& a) {
        return std::all_of(a.tests.begin(), a.tests.end(), [&](const FieldTest& t) { return test_holds(t, event); }) &&
               std::all_of(a.keywords.begin(), a.keywords.end(), keywords_hold);
    });
}

}  // namespace eventd::detection
