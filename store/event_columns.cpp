#include "event_columns.hpp"

namespace eventd::store {

const std::string& event_select_list() {
    static const std::string list = [] {
        std::string s;
        for (const EventColumnSpec& c : kEventColumns) {
            if (!s.empty()) s += ", ";
            s += c.name;
        }
        return s;
    }();
    return list;
}

const std::string& create_events_sql() {
    static const std::string sql = [] {
        std::string s = "CREATE TABLE events (";
        for (const EventColumnSpec& c : kEventColumns) {
            if (c.column != EventColumn::id) s += ", ";
            s += c.name;
            s += ' ';
            s += c.sql_type;
            if (c.column == EventColumn::id) s += " PRIMARY KEY";
            if (c.not_null) s += " NOT NULL";
        }
        return s + ")";
    }();
    return sql;
}

const std::string& insert_event_sql() {
    static const std::string sql = [] {
        std::string columns, values;
        int n = 0;
        for (const EventColumnSpec& c : kEventColumns) {
            if (c.column == EventColumn::id) continue;
            if (n++) {
                columns += ", ";
                values += ", ";
            }
            columns += c.name;
            values += "?" + std::to_string(n);
        }
        // The id last, at ?kEventColumnCount: the writer assigns it (shard_db.hpp next_id_).
        return "INSERT INTO events (" + columns + ", id) VALUES (" + values + ", ?" + std::to_string(kEventColumnCount) +
               ")";
    }();
    return sql;
}

}  // namespace eventd::store
