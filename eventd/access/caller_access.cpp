// CallerAccess: one caller's view of the policy for one query or stream — cached verdicts per
// event type (PSD-008 §9.2 caching), field filtering of records (§9.2 step 6) and the
// up-front rejection of queries that would filter, sort or aggregate on an unreadable field
// (§9.2 step 5, extended by the issue to WHERE, SINCE and UNTIL: no inference via filters).
#include <algorithm>
#include <cerrno>
#include <set>

#include <cstring>

#include "base/identity_guid.hpp"
#include "eventd/access/fields.hpp"
#include "eventd/access/policy.hpp"

namespace eventd::access {
namespace {

using query::Aggregation;
using query::Condition;
using query::FieldRef;
using query::Query;

bool starts_with(std::string_view text, std::string_view prefix) {
    return text.size() >= prefix.size() && text.compare(0, prefix.size(), prefix) == 0;
}

// Is there a string matched by both globs? Both lower case; '*' = any run of characters, the
// only wildcard (§8.2.2). Breadth-first search over pairs of positions (product automaton).
bool globs_intersect(std::string_view a, std::string_view b) {
    const size_t n = a.size(), m = b.size();
    std::vector<char> seen((n + 1) * (m + 1), 0);
    std::vector<std::pair<size_t, size_t>> todo{{0, 0}};
    auto push = [&](size_t i, size_t j) {
        char& s = seen[i * (m + 1) + j];
        if (!s) {
            s = 1;
            todo.emplace_back(i, j);
        }
    };
    seen[0] = 1;
    while (!todo.empty()) {
        const auto [i, j] = todo.back();
        todo.pop_back();
        if (i == n && j == m) return true;
        const bool star_a = i < n && a[i] == '*';
        const bool star_b = j < m && b[j] == '*';
        if (star_a) {
            push(i + 1, j);             // the star matches nothing more
            if (j < m) push(i, j + 1);  // the star swallows b's next character
        }
        if (star_b) {
            push(i, j + 1);
            if (i < n) push(i + 1, j);
        }
        if (i < n && j < m && !star_a && !star_b && a[i] == b[j]) push(i + 1, j + 1);
    }
    return false;
}

struct FieldUse {
    const FieldRef* field;
    std::string clause;
};

void collect_where(const Condition& condition, std::vector<FieldUse>& out) {
    if (condition.kind == Condition::Kind::compare) {
        out.push_back({&condition.comparison.field, "WHERE"});
        return;
    }
    for (const Condition& child : condition.children) collect_where(child, out);
}

const char* fn_name(query::AggregateFn fn) {
    switch (fn) {
        case query::AggregateFn::count:
            return "count";
        case query::AggregateFn::sum:
            return "sum";
        case query::AggregateFn::avg:
            return "avg";
        case query::AggregateFn::min:
            return "min";
        case query::AggregateFn::max:
            return "max";
    }
    return "count";
}

// The output key an aggregate query adds besides its group fields ("count", "sum", …); a SORT
// on it sorts results, it reads no field of the events.
std::optional<std::string> aggregate_output_key(const Aggregation& a) {
    switch (a.kind) {
        case Aggregation::Kind::none:
        case Aggregation::Kind::distinct:
            return std::nullopt;
        case Aggregation::Kind::count:
        case Aggregation::Kind::count_by:
        case Aggregation::Kind::top_by:
            return std::string("count");
        case Aggregation::Kind::group:
            return std::string(fn_name(a.fn));
    }
    return std::nullopt;
}

std::string upper(std::string text) {
    for (char& c : text) c = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
    return text;
}

}  // namespace

CallerAccess::CallerAccess(Caller caller, std::shared_ptr<const Policy> policy)
    : caller_(std::move(caller)),
      policy_(policy ? std::move(policy) : Policy::deny_all()),
      token_(base::token_guid(caller_.uid)) {
    sees_every_record_ = sees_every_record(*policy_, caller_);
}

void CallerAccess::reset(std::shared_ptr<const Policy> policy) {
    policy_ = policy ? std::move(policy) : Policy::deny_all();
    sees_every_record_ = sees_every_record(*policy_, caller_);
    cache_.clear();
}

// Every event type resolves to some pattern when "*" exists (§9.1.5); if each pattern makes
// records visible to the caller, so does every type. Records visible only through `self` do
// not count: every other subject's records of that type are hidden.
bool CallerAccess::sees_every_record(const Policy& policy, const Caller& caller) {
    const std::vector<std::string> patterns = policy.patterns();
    if (std::find(patterns.begin(), patterns.end(), "*") == patterns.end()) return false;
    return std::all_of(patterns.begin(), patterns.end(),
                       [&](const std::string& p) { return policy.grant_pattern(caller, p, false).visible; });
}

CallerAccess::GrantView CallerAccess::view_of(TypeGrant grant) {
    GrantView view;
    view.grant = std::move(grant);
    if (!view.grant.visible || view.grant.all_fields) return view;
    for (const std::string& field : view.grant.fields) {
        if (is_header_name(field)) {
            view.headers.push_back(field);
            continue;
        }
        if (view.grant.all_payload) continue;
        PathNode* node = &view.payload;
        size_t begin = 0;
        while (!node->whole) {
            const size_t dot = field.find('.', begin);
            const std::string part = field.substr(begin, dot == std::string::npos ? dot : dot - begin);
            auto child = std::find_if(node->children.begin(), node->children.end(),
                                      [&](const PathNode& c) { return c.name == part; });
            if (child == node->children.end()) {
                node->children.push_back(PathNode{part, false, {}});
                child = std::prev(node->children.end());
            }
            node = &*child;
            if (dot == std::string::npos) {
                node->whole = true;  // the whole value at this path
                node->children.clear();
                break;
            }
            begin = dot + 1;
        }
    }
    return view;
}

const CallerAccess::CachedGrant& CallerAccess::cached(std::string_view event_type) {
    if (auto found = cache_.find(event_type); found != cache_.end()) return found->second;
    CachedGrant entry;
    entry.others = view_of(policy_->grant(caller_, event_type, false));
    entry.own = policy_->uses_self() ? view_of(policy_->grant(caller_, event_type, true)) : entry.others;
    // A stream over very many distinct types must not grow without bound: past the cap the
    // cache starts over (verdicts are re-evaluated from the same policy, so nothing changes but
    // the cost). No reference into the cache is held across calls.
    if (cache_.size() >= kMaxCachedTypes) cache_.clear();
    return cache_.emplace(std::string(event_type), std::move(entry)).first->second;
}

CallerAccess::Visibility CallerAccess::visibility(std::string_view event_type) {
    if (unrestricted()) return Visibility::all;
    const CachedGrant& entry = cached(event_type);
    if (entry.others.grant.visible) return Visibility::all;
    return entry.own.grant.visible ? Visibility::own_records : Visibility::none;
}

bool CallerAccess::owns(std::span<const uint8_t> effective_token, std::span<const uint8_t> true_token) const {
    if (!policy_->uses_self()) return false;
    auto is_callers = [&](std::span<const uint8_t> token) {
        return token.size() == token_.size() && std::memcmp(token.data(), token_.data(), token_.size()) == 0;
    };
    return is_callers(effective_token) || is_callers(true_token);
}

bool CallerAccess::visible(std::string_view event_type, std::span<const uint8_t> effective_token,
                           std::span<const uint8_t> true_token) {
    if (unrestricted()) return true;
    const CachedGrant& entry = cached(event_type);
    // The common case first: a verdict for the whole type, no token compared.
    if (entry.others.grant.visible == entry.own.grant.visible) return entry.others.grant.visible;
    return entry.of(owns(effective_token, true_token)).grant.visible;
}

void CallerAccess::filter_payload(const PathNode& node, nlohmann::json& object) {
    for (auto it = object.begin(); it != object.end();) {
        const auto child = std::find_if(node.children.begin(), node.children.end(),
                                        [&](const PathNode& c) { return c.name == it.key(); });
        bool keep = false;
        if (child != node.children.end()) {
            if (child->whole) {
                keep = true;
            } else if (it->is_object()) {
                // Only the granted members of a nested map survive; an emptied map goes.
                filter_payload(*child, *it);
                keep = !it->empty();
            }
        }
        it = keep ? std::next(it) : object.erase(it);
    }
}

bool CallerAccess::reads_all_fields(std::string_view event_type, bool own_record) {
    if (unrestricted()) return true;
    const GrantView& entry = cached(event_type).of(own_record);
    return entry.grant.visible && entry.grant.all_fields;
}

void CallerAccess::filter_fields(std::string_view event_type, bool own_record, nlohmann::json& record) {
    if (unrestricted()) return;
    const GrantView& entry = cached(event_type).of(own_record);
    if (!entry.grant.visible || !record.is_object()) {
        record = nlohmann::json::object();  // fail closed: nothing of an invisible record
        return;
    }
    if (entry.grant.all_fields) return;
    for (auto it = record.begin(); it != record.end();) {
        bool keep = false;
        if (is_header_name(it.key())) {
            keep = std::find(entry.headers.begin(), entry.headers.end(), it.key()) != entry.headers.end();
        } else if (entry.grant.all_payload) {
            keep = true;
        } else {
            const auto child = std::find_if(entry.payload.children.begin(), entry.payload.children.end(),
                                            [&](const PathNode& c) { return c.name == it.key(); });
            if (child != entry.payload.children.end()) {
                if (child->whole) {
                    keep = true;
                } else if (it->is_object()) {
                    filter_payload(*child, *it);
                    keep = !it->empty();
                }
            }
        }
        it = keep ? std::next(it) : record.erase(it);
    }
}

namespace {

bool field_granted(const TypeGrant& grant, const FieldRef& field) {
    if (grant.all_fields) return true;
    const bool header = field.header.has_value() || is_header_name(field.name);
    if (header) return std::find(grant.fields.begin(), grant.fields.end(), field.name) != grant.fields.end();
    if (grant.all_payload) return true;
    // A granted path covers itself and everything inside it ("source" covers "source.name"),
    // never its parent (granting "source.name" does not make all of "source" readable).
    return std::any_of(grant.fields.begin(), grant.fields.end(), [&](const std::string& granted) {
        return !is_header_name(granted) && (field.name == granted || starts_with(field.name, granted + "."));
    });
}

// Policy patterns whose records can match the query's type pattern (§8.2.2), conservatively:
// a pattern is left out only when no event type matched by the query resolves to it.
std::vector<std::string> candidate_patterns(const Policy& policy, const std::optional<std::string>& type_pattern) {
    std::vector<std::string> all = policy.patterns();
    if (!type_pattern) return all;
    const std::string glob = lower_ascii(*type_pattern);
    const size_t star = glob.find('*');
    if (star == std::string::npos) {
        // Exact type: exactly one pattern governs it.
        auto resolved = policy.resolve(glob);
        if (!resolved) return {};
        return {*resolved};
    }
    // Every matching type starts with the literal prefix; if that prefix lies below a pattern
    // R ("kacs.a*" below "kacs"), every matching type resolves to R or a pattern under it.
    const std::string prefix = glob.substr(0, star);
    std::string floor;
    for (const std::string& p : all) {
        if (p != "*" && starts_with(prefix, p + ".") && p.size() > floor.size()) floor = p;
    }
    std::vector<std::string> out;
    for (const std::string& p : all) {
        if (!floor.empty() && p != floor && !starts_with(p, floor + ".")) continue;
        if (p == "*") {
            out.push_back(p);  // its scope is "everything else": assume it overlaps
            continue;
        }
        if (globs_intersect(glob, p) || globs_intersect(glob, p + ".*")) out.push_back(p);
    }
    return out;
}

}  // namespace

bool CallerAccess::may_read_any(const Query& q) const {
    if (unrestricted()) return true;
    const std::vector<std::string> patterns = candidate_patterns(*policy_, q.type_pattern);
    return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) {
        return policy_->grant_pattern(caller_, p, false).visible ||
               (policy_->uses_self() && policy_->grant_pattern(caller_, p, true).visible);
    });
}

base::Status CallerAccess::check_query(const Query& q) const {
    if (unrestricted() || q.mode != query::Mode::events) return {};

    // Every field the query reads to decide which records or groups come out.
    std::vector<FieldUse> uses;
    for (const Condition& condition : q.where) collect_where(condition, uses);
    FieldRef timestamp;
    timestamp.name = "timestamp";
    timestamp.header = query::HeaderField::timestamp;
    if (q.since_ns) uses.push_back({&timestamp, "SINCE"});
    if (q.until_ns) uses.push_back({&timestamp, "UNTIL"});
    const Aggregation& a = q.aggregation;
    std::string clause;
    switch (a.kind) {
        case Aggregation::Kind::none:
        case Aggregation::Kind::count:
            break;
        case Aggregation::Kind::count_by:
            clause = "COUNT BY";
            break;
        case Aggregation::Kind::top_by:
            clause = "TOP " + std::to_string(a.top_n) + " BY";
            break;
        case Aggregation::Kind::distinct:
            clause = "DISTINCT";
            break;
        case Aggregation::Kind::group:
            clause = "GROUP";
            break;
    }
    for (const FieldRef& f : a.fields) uses.push_back({&f, clause});
    if (a.kind == Aggregation::Kind::group && a.fn_field) {
        uses.push_back({&*a.fn_field, "GROUP ... " + upper(fn_name(a.fn))});
    }
    const auto output_key = aggregate_output_key(a);
    for (const query::SortKey& key : q.sort) {
        if (output_key && key.field.name == *output_key) continue;  // sorts results, reads no field
        uses.push_back({&key.field, "SORT"});
    }
    if (uses.empty()) return {};

    // Patterns that can contribute records: overlapping the type pattern and visible to this
    // caller (a pattern that hides its records contributes nothing to infer from). Under
    // `self`, the caller's own records and the others' are two grants; a field must be
    // readable under each that makes records visible.
    std::vector<std::pair<std::string, TypeGrant>> relevant;
    for (const std::string& pattern : candidate_patterns(*policy_, q.type_pattern)) {
        for (const bool own_record : {false, true}) {
            if (own_record && !policy_->uses_self()) break;
            TypeGrant grant = policy_->grant_pattern(caller_, pattern, own_record);
            if (grant.visible) relevant.emplace_back(pattern, std::move(grant));
        }
    }
    for (const FieldUse& use : uses) {
        for (const auto& [pattern, grant] : relevant) {
            if (field_granted(grant, *use.field)) continue;
            return base::Error{EACCES, "access denied: field '" + use.field->name + "' cannot be used in " +
                                           use.clause + " for events of pattern '" + pattern + "'"};
        }
    }
    return {};
}

}  // namespace eventd::access
