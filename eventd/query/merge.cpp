// Shard results combined at the coordinator (PSD-008 §8.6.4); see merge.hpp.
#include "eventd/query/merge.hpp"

#include "base/guid_text.hpp"

#include "store/sql_functions.hpp"

#include <algorithm>
#include <limits>

#include "kmes/guid.hpp"

namespace eventd::query {
namespace {

const char* fn_key(const Aggregation& a) {
    if (a.kind != Aggregation::Kind::group) return "count";
    switch (a.fn) {
        case AggregateFn::count:
            return "count";
        case AggregateFn::sum:
            return "sum";
        case AggregateFn::avg:
            return "avg";
        case AggregateFn::min:
            return "min";
        case AggregateFn::max:
            return "max";
    }
    return "count";
}

bool is_guid_field(const FieldRef& f) { return f.header && is_guid_column(*f.header); }

}  // namespace

nlohmann::json to_json(const SqlValue& v, const FieldRef* field) {
    switch (v.type) {
        case store::ValueType::integer:
            return v.i;
        case store::ValueType::real:
            return v.d;
        case store::ValueType::text:
            return v.bytes;
        case store::ValueType::blob: {
            const bool guid = field && is_guid_field(*field);
            const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(v.bytes.data()), v.bytes.size());
            if (field && !field->header) return extracted_value(bytes);
            if (guid && v.bytes.size() == 16)
                return base::guid_text(
                    std::span<const uint8_t, 16>(reinterpret_cast<const uint8_t*>(v.bytes.data()), 16));
            return nlohmann::json::binary(std::vector<uint8_t>(v.bytes.begin(), v.bytes.end()));
        }
        case store::ValueType::null:
            return nullptr;
    }
    return nullptr;
}

// --- AggregateMerger ------------------------------------------------------------------------

bool AggregateMerger::KeyLess::operator()(const std::vector<SqlValue>& a, const std::vector<SqlValue>& b) const {
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
        const int c = compare_values(a[i], b[i], false);
        if (c != 0) return c < 0;
    }
    return a.size() < b.size();
}

AggregateMerger::AggregateMerger(const Query& q, const Plan& plan, uint64_t group_budget_bytes)
    : query_(q), group_columns_(plan.group_columns), group_budget_bytes_(group_budget_bytes) {}

uint64_t AggregateMerger::group_cost(const std::vector<SqlValue>& key) {
    // What glibc's malloc takes for n bytes: a size word, rounded up to 16, at least 32.
    auto chunk = [](uint64_t n) { return std::max<uint64_t>(32, (n + sizeof(size_t) + 15) & ~uint64_t{15}); };
    // A std::map node is the red-black links (three pointers and a colour) and the pair.
    constexpr uint64_t kNodeLinks = 4 * sizeof(void*);
    using Node = std::pair<const std::vector<SqlValue>, Partial>;
    // finish() sorts an entry per group: a pointer to the keys and the value.
    constexpr uint64_t kSortEntry = sizeof(const void*) + sizeof(SqlValue);
    uint64_t bytes = chunk(kNodeLinks + sizeof(Node)) + chunk(key.capacity() * sizeof(SqlValue)) + kSortEntry;
    for (const SqlValue& v : key)
        if (v.bytes.capacity() > std::string().capacity()) bytes += chunk(v.bytes.capacity() + 1);  // past the SSO
    return bytes;
}

base::Status AggregateMerger::add_row(const store::RowView& row) {
    const Aggregation& a = query_.aggregation;
    if (a.kind == Aggregation::Kind::count) {
        total_count_ += row.integer(0);
        return {};
    }
    std::vector<SqlValue> key;
    key.reserve(group_columns_);
    for (size_t i = 0; i < group_columns_; ++i) key.push_back(store::value_at(row, static_cast<int>(i)));
    auto found = groups_.lower_bound(key);
    if (found == groups_.end() || groups_.key_comp()(key, found->first)) {
        // Issue 40: a new group is checked against the budget before it is made, so one query
        // (and with MaxRunningQueriesPerUser, one user) cannot take eventd's memory from the
        // drains and writers; the groups so far are freed with the merger.
        const uint64_t cost = group_cost(key);
        if (group_budget_bytes_ != 0 && group_bytes_ + cost > group_budget_bytes_)
            return base::Error{base::ErrorCode::no_memory,
                               "query holds more than MaxQueryGroupBytes (" + std::to_string(group_budget_bytes_) +
                                   " bytes) of groups after " + std::to_string(groups_.size()) +
                                   " groups; narrow it (WHERE, fewer GROUP fields, a time range) or ask the "
                                   "administrator to raise MaxQueryGroupBytes"};
        group_bytes_ += cost;
        found = groups_.emplace_hint(found, std::move(key), Partial{});
    }
    Partial& p = found->second;
    const int count_col = static_cast<int>(group_columns_);
    p.count += row.integer(count_col);
    if (a.kind != Aggregation::Kind::group || a.fn == AggregateFn::count) return {};
    const int partial_col = count_col + 1;
    if (a.fn == AggregateFn::sum || a.fn == AggregateFn::avg) {
        const auto s = store::NumSumPartial::from(row.blob(partial_col));
        p.int_sum += s.integer_sum();
        p.int_count += s.int_count;
        p.real_sum += s.real_sum;
        p.real_count += s.real_count;
        return {};
    }
    SqlValue v = store::value_at(row, partial_col);
    if (!v.is_numeric()) return {};
    if (p.extreme.type == store::ValueType::null) {
        p.extreme = v;
        return {};
    }
    const int c = store::compare_numeric(v, p.extreme);
    if (a.fn == AggregateFn::min ? c < 0 : c > 0) p.extreme = v;
    return {};
}

base::Status AggregateMerger::finish(const RecordEmitter& emit) const {
    const Aggregation& a = query_.aggregation;
    const uint64_t skip = query_.skip.value_or(0);
    const uint64_t take = query_.take.value_or(std::numeric_limits<uint64_t>::max());

    auto select = [&](Record& r) {
        if (query_.select.empty()) return;
        Record kept = Record::object();
        for (const FieldRef& f : query_.select) {
            auto it = r.find(f.name);
            if (it != r.end()) kept[f.name] = *it;
        }
        r = std::move(kept);
    };

    if (a.kind == Aggregation::Kind::count) {
        if (skip == 0 && take > 0) {
            Record r = {{"count", total_count_}};
            select(r);
            return emit(r);
        }
        return {};
    }

    // One output row per group: its keys and the aggregate value.
    struct Row {
        const std::vector<SqlValue>* keys;
        SqlValue value;
    };
    const bool counts = a.kind == Aggregation::Kind::count_by || a.kind == Aggregation::Kind::top_by ||
                        (a.kind == Aggregation::Kind::group && a.fn == AggregateFn::count);
    std::vector<Row> rows;
    rows.reserve(groups_.size());
    for (const auto& [keys, p] : groups_) {
        Row row{&keys, {}};
        if (counts) {
            row.value = SqlValue::integer(p.count);
        } else if (a.kind == Aggregation::Kind::group) {
            const int64_t n = p.int_count + p.real_count;
            switch (a.fn) {
                case AggregateFn::sum:
                    if (n == 0) break;
                    if (p.real_count == 0 && p.int_sum >= std::numeric_limits<int64_t>::min() &&
                        p.int_sum <= std::numeric_limits<int64_t>::max()) {
                        row.value = SqlValue::integer(static_cast<int64_t>(p.int_sum));
                    } else {
                        row.value =
                            SqlValue::real(static_cast<double>(static_cast<long double>(p.int_sum) + p.real_sum));
                    }
                    break;
                case AggregateFn::avg:
                    if (n == 0) break;
                    row.value = SqlValue::real(static_cast<double>((static_cast<long double>(p.int_sum) + p.real_sum) /
                                                                   static_cast<long double>(n)));
                    break;
                default:
                    row.value = p.extreme;
                    break;
            }
        }
        rows.push_back(std::move(row));
    }

    // Keys ascending (NOCASE for text), then exactly, so "Foo" and "foo" keep a fixed order.
    auto keys_ascending = [](const Row& x, const Row& y) {
        for (int pass = 0; pass < 2; ++pass) {
            for (size_t i = 0; i < x.keys->size(); ++i) {
                const int c = compare_values((*x.keys)[i], (*y.keys)[i], pass == 0);
                if (c != 0) return c;
            }
        }
        return 0;
    };
    auto default_order = [&](const Row& x, const Row& y) {
        if (counts) {
            const int c = compare_values(x.value, y.value, false);
            if (c != 0) return c > 0;  // count descending
        }
        return keys_ascending(x, y) < 0;
    };
    std::sort(rows.begin(), rows.end(), default_order);
    if (a.kind == Aggregation::Kind::top_by && rows.size() > a.top_n) rows.resize(a.top_n);

    if (!query_.sort.empty()) {
        // Explicit SORT on output keys (validated by the planner); the default order breaks ties.
        struct Term {
            int key;  // group key index, or -1 for the aggregate value
            bool descending;
        };
        std::vector<Term> terms;
        for (const SortKey& k : query_.sort) {
            int index = -1;
            for (size_t i = 0; i < a.fields.size(); ++i) {
                if (a.fields[i].name == k.field.name) {
                    index = static_cast<int>(i);
                    break;
                }
            }
            terms.push_back({index, k.descending});
        }
        std::stable_sort(rows.begin(), rows.end(), [&](const Row& x, const Row& y) {
            for (const Term& t : terms) {
                const SqlValue& vx = t.key < 0 ? x.value : (*x.keys)[static_cast<size_t>(t.key)];
                const SqlValue& vy = t.key < 0 ? y.value : (*y.keys)[static_cast<size_t>(t.key)];
                int c = compare_values(vx, vy, true);
                if (t.descending) c = -c;
                if (c != 0) return c < 0;
            }
            return false;
        });
    }

    const char* value_key = fn_key(a);
    uint64_t emitted = 0;
    for (size_t i = static_cast<size_t>(std::min<uint64_t>(skip, rows.size())); i < rows.size(); ++i) {
        if (emitted++ >= take) break;
        const Row& row = rows[i];
        Record r = Record::object();
        for (size_t k = 0; k < a.fields.size() && k < row.keys->size(); ++k) {
            r[a.fields[k].name] = to_json((*row.keys)[k], &a.fields[k]);
        }
        if (a.kind != Aggregation::Kind::distinct) r[value_key] = to_json(row.value, nullptr);
        select(r);
        if (auto st = emit(r); !st) return st;
    }
    return {};
}

}  // namespace eventd::query
