#pragma once
// The shared-state service's data: agents' reports as they travel on the
// reports topic (JSON, so that agents in any language can write them), what
// the service keeps per object, and the rule that decides an object's state.

#include <boost/hana/define_struct.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace shared_state {

/// One record of the reports topic, keyed by object id. Its value is JSON:
///   {"agent": "a7", "state": "under_attack", "time_ms": 1796100000000}
///   {"agent": "operator", "delete": true, "time_ms": ...}   forgets the object
struct report {
    std::string agent;
    std::string state;       // empty for a delete
    std::int64_t time_ms = 0;  // when the agent observed it
    bool forget = false;     // DELETE /objects/{id}: every report on the object so far is dropped

    /// @throws std::invalid_argument the bytes are not a report
    static report parse(const std::string& text) {
        const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
        if (j.is_discarded() || !j.is_object()) throw std::invalid_argument("a report is a JSON object");
        report r;
        if (!j.contains("agent") || !j["agent"].is_string() || j["agent"].get<std::string>().empty())
            throw std::invalid_argument("a report needs a non-empty string \"agent\"");
        r.agent = j["agent"].get<std::string>();
        if (!j.contains("time_ms") || !j["time_ms"].is_number_integer())
            throw std::invalid_argument("a report needs an integer \"time_ms\"");
        r.time_ms = j["time_ms"].get<std::int64_t>();
        r.forget = j.value("delete", false);
        if (!r.forget) {
            if (!j.contains("state") || !j["state"].is_string() || j["state"].get<std::string>().empty())
                throw std::invalid_argument("a report needs a non-empty string \"state\"");
            r.state = j["state"].get<std::string>();
        }
        return r;
    }

    [[nodiscard]] std::string to_json_text() const {
        nlohmann::json j{{"agent", agent}, {"time_ms", time_ms}};
        if (forget) j["delete"] = true;
        else j["state"] = state;
        return j.dump();
    }
};

/// An agent's latest report on one object.
struct agent_report {
    BOOST_HANA_DEFINE_STRUCT(agent_report, (std::string, agent), (std::string, state), (std::int64_t, time_ms));
};

/// Every agent's latest report on one object (the "reports" store's value).
struct object_reports {
    BOOST_HANA_DEFINE_STRUCT(object_reports, (std::vector<agent_report>, latest));

    /// Takes an agent's report unless it already has a newer one (reports
    /// may arrive out of order); true if it changed anything.
    bool take(const report& r) {
        for (agent_report& a : latest) {
            if (a.agent != r.agent) continue;
            if (a.time_ms > r.time_ms) return false;
            const bool changed = a.state != r.state || a.time_ms != r.time_ms;
            a.state = r.state;
            a.time_ms = r.time_ms;
            return changed;
        }
        latest.push_back({r.agent, r.state, r.time_ms});
        return true;
    }

    /// The time of the agent's latest report, if it made one.
    [[nodiscard]] std::optional<std::int64_t> time_of(const std::string& agent) const {
        for (const agent_report& a : latest)
            if (a.agent == agent) return a.time_ms;
        return std::nullopt;
    }

    /// Drops the agent's report if it is the one of time `time_ms`; true if it did.
    bool expire(const std::string& agent, std::int64_t time_ms) {
        return std::erase_if(latest, [&](const agent_report& a) { return a.agent == agent && a.time_ms == time_ms; }) > 0;
    }
};

/// What the service decided about an object (the "states" store's value).
struct decided_state {
    BOOST_HANA_DEFINE_STRUCT(decided_state,
                             (std::string, state),
                             (std::int64_t, votes),    // agents whose latest report says `state`
                             (std::int64_t, voters),   // agents with a current report on the object
                             (std::int64_t, decided_ms));  // the time of the report that decided it
    friend bool operator==(const decided_state& a, const decided_state& b) {
        return a.state == b.state && a.votes == b.votes && a.voters == b.voters;
    }
};

inline void to_json(nlohmann::json& j, const decided_state& d) {
    j = nlohmann::json{{"state", d.state}, {"votes", d.votes}, {"voters", d.voters}, {"decided_ms", d.decided_ms}};
}

/// The majority vote over the agents' latest reports: the state most agents
/// report. A tie goes to the state whose newest report is the most recent
/// (the freshest evidence); a tie in that too, to the smallest state name.
/// Nothing when no agent has a current report.
inline std::optional<decided_state> vote(const object_reports& o) {
    struct tally {
        std::int64_t votes = 0;
        std::int64_t newest = 0;
    };
    std::map<std::string, tally> t;  // ordered: the smallest name wins the last tie
    for (const agent_report& a : o.latest) {
        tally& x = t[a.state];
        ++x.votes;
        x.newest = std::max(x.newest, a.time_ms);
    }
    std::optional<decided_state> best;
    std::int64_t best_newest = 0;
    for (const auto& [state, x] : t) {
        if (best && (x.votes < best->votes || (x.votes == best->votes && x.newest <= best_newest))) continue;
        best = decided_state{state, x.votes, static_cast<std::int64_t>(o.latest.size()), x.newest};
        best_newest = x.newest;
    }
    return best;
}

}  // namespace shared_state
