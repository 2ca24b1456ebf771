// Writing your own store: agents report the state of objects ("site-x is
// under attack"); the store keeps every agent's latest report per object and
// decides each object's state by majority vote. It is not a key-value store,
// it knows nothing of changelogs, and its codec is all strata needs to make
// it fault tolerant.
//
// Usage: custom_store [--quick]   (--quick runs a shorter random history)

#include <strata/changelog/memory_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/serde/all.hpp>

#include <boost/container_hash/hash.hpp>
#include <boost/hana/define_struct.hpp>

#include <array>
#include <cstddef>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, std::string_view what) {
    if (!ok) {
        ++failures;
        std::cerr << "CHECK FAILED: " << what << "\n";
    }
}

// [updates]
struct report {         // agent says: object is in state
    std::string object;
    std::string agent;
    std::string state;
};
struct retract {        // agent withdraws its report on object
    std::string object;
    std::string agent;
};
struct forget_object {  // delete everything known about object
    std::string object;
};
// [updates]

struct vote_codec;

// [store]
class vote_store {
public:
    using codec_type = vote_codec;  // what `logged(log)` uses for this store

    explicit vote_store(std::string name) : name_(std::move(name)) {}
    std::string_view name() const noexcept { return name_; }

    // ---- updates, as strata sees them
    void apply(const report& u) { reports_[u.object][u.agent] = u.state; }
    void apply(const retract& u) { remove(u.object, u.agent); }
    void apply(const forget_object& u) { reports_.erase(u.object); }

    // ---- queries
    /// The state more than half of the reporting agents agree on, if any.
    std::optional<std::string> decision(const std::string& object) const {
        const auto it = reports_.find(object);
        if (it == reports_.end()) return std::nullopt;
        std::map<std::string, std::size_t> votes;
        for (const auto& [agent, state] : it->second) ++votes[state];
        for (const auto& [state, n] : votes)
            if (2 * n > it->second.size()) return state;
        return std::nullopt;  // no majority
    }
    std::optional<std::string> report_of(const std::string& object, const std::string& agent) const {
        const auto it = reports_.find(object);
        if (it == reports_.end()) return std::nullopt;
        const auto r = it->second.find(agent);
        if (r == it->second.end()) return std::nullopt;
        return r->second;
    }
    std::vector<std::string> agents_of(const std::string& object) const {
        std::vector<std::string> agents;
        if (const auto it = reports_.find(object); it != reports_.end())
            for (const auto& [agent, state] : it->second) agents.push_back(agent);
        return agents;
    }

    // ---- primitives restore uses
    void set(const std::string& object, const std::string& agent, std::string state) {
        reports_[object][agent] = std::move(state);
    }
    void remove(const std::string& object, const std::string& agent) {
        const auto it = reports_.find(object);
        if (it == reports_.end()) return;
        it->second.erase(agent);
        if (it->second.empty()) reports_.erase(it);  // no empty objects: equal states compare equal
    }

    friend bool operator==(const vote_store& a, const vote_store& b) { return a.reports_ == b.reports_; }

private:
    std::string name_;
    std::map<std::string, std::map<std::string, std::string>> reports_;  // object -> agent -> state
};
// [store]

// [codec]
/// One unit of state: one agent's report on one object.
struct vote_key {
    BOOST_HANA_DEFINE_STRUCT(vote_key, (std::string, object), (std::string, agent));
    friend bool operator==(const vote_key&, const vote_key&) = default;
    // The cache keeps dirty keys in a boost::hash map.
    friend std::size_t hash_value(const vote_key& k) {
        std::size_t h = 0;
        boost::hash_combine(h, k.object);
        boost::hash_combine(h, k.agent);
        return h;
    }
};

/// Record key: (object, agent). Record value: that agent's latest state, or
/// a tombstone once the report is gone. The decision is not logged: it is
/// derived, and restore recomputes it from the reports.
struct vote_codec {
    using key_type = vote_key;

    std::array<vote_key, 1> touched(const vote_store&, const report& u) const { return {{{u.object, u.agent}}}; }
    std::array<vote_key, 1> touched(const vote_store&, const retract& u) const { return {{{u.object, u.agent}}}; }
    // Runs before the update: afterwards the agents of the object are gone.
    std::vector<vote_key> touched(const vote_store& s, const forget_object& u) const {
        std::vector<vote_key> keys;
        for (auto& agent : s.agents_of(u.object)) keys.push_back({u.object, std::move(agent)});
        return keys;
    }

    void write_key(const vote_key& k, strata::byte_buffer& out) const { strata::encode(k, out); }

    bool write_value(const vote_store& s, const vote_key& k, strata::byte_buffer& out) const {
        const auto state = s.report_of(k.object, k.agent);
        if (!state) return false;  // tombstone
        strata::encode(*state, out);
        return true;
    }

    void restore(vote_store& s, const strata::record_view& r) const {
        const auto k = strata::decode<vote_key>(r.key);
        if (r.is_tombstone()) s.remove(k.object, k.agent);
        else s.set(k.object, k.agent, strata::decode<std::string>(*r.value));
    }
};
// [codec]

/// A random history of reports, retractions and deletions over a few objects
/// and agents, applied to any stack over a vote_store.
template <class Store>
void random_history(Store& s, int steps, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> object(0, 9), agent(0, 6), state(0, 2), op(0, 99);
    const char* const states[] = {"ok", "degraded", "under attack"};
    for (int i = 0; i < steps; ++i) {
        const std::string o = "site-" + std::to_string(object(rng));
        const std::string a = "agent-" + std::to_string(agent(rng));
        const int roll = op(rng);
        if (roll < 85) s.apply(report{o, a, states[state(rng)]});
        else if (roll < 97) s.apply(retract{o, a});
        else s.apply(forget_object{o});
        if (i % 97 == 0) s.flush();
    }
}

}  // namespace

int main(int argc, char** argv) try {
    bool quick = false;
    for (int i = 1; i < argc; ++i) {
        if (std::string_view(argv[i]) == "--quick") quick = true;
        else throw std::invalid_argument("usage: custom_store [--quick]");
    }

    strata::metrics::registry registry;
    strata::memory_log log;

    // [stack]
    auto store = vote_store("site-state")
               | strata::logged(log)  // vote_store::codec_type names the codec
               | strata::cached()
               | strata::metered(registry);

    store.apply(report{"site-x", "agent-1", "under attack"});
    store.apply(report{"site-x", "agent-2", "under attack"});
    store.apply(report{"site-x", "agent-3", "ok"});
    const auto state = store.query([](const vote_store& s) { return s.decision("site-x"); });
    // [stack]
    check(state == "under attack", "two of three agents decide");

    // [coalesce]
    // agent-3 changes its mind five times before the commit: one record.
    for (const char* s : {"degraded", "ok", "degraded", "ok", "under attack"})
        store.apply(report{"site-x", "agent-3", s});
    store.flush();
    // [coalesce]
    check(log.append_count() == 3, "three units of state, three records");

    // [delete]
    store.apply(forget_object{"site-x"});  // a tombstone per (site-x, agent)
    store.flush();
    // [delete]
    check(log.append_count() == 6, "forget_object logs one tombstone per report it removes");
    check(!store.query([](const vote_store& s) { return s.decision("site-x"); }), "site-x is forgotten");

    // A longer history, then restore into a fresh stack: from the whole log,
    // and from the log compacted to the latest record of each key.
    random_history(store, quick ? 2'000 : 100'000, 42);
    store.flush();

    // [restore]
    auto fresh = vote_store("site-state") | strata::logged(log) | strata::cached();
    fresh.restore();
    check(strata::innermost(fresh) == strata::innermost(store), "restore rebuilds every report");

    log.compact();  // keeps the latest record per (object, agent)
    auto from_compacted = vote_store("site-state") | strata::logged(log) | strata::cached();
    from_compacted.restore();
    check(strata::innermost(from_compacted) == strata::innermost(store), "so does a compacted log");
    // [restore]

    for (int i = 0; i < 10; ++i) {
        const std::string o = "site-" + std::to_string(i);
        const auto a = store.query([&](const vote_store& s) { return s.decision(o); });
        const auto b = from_compacted.query([&](const vote_store& s) { return s.decision(o); });
        check(a == b, "decisions agree after restore");
        std::cout << o << ": " << a.value_or("(no majority)") << "\n";
    }
    std::cout << "changelog: " << log.append_count() << " records appended, " << log.size()
              << " left after compaction\n";

    std::cout << (failures == 0 ? "custom_store: all checks passed\n" : "custom_store: CHECKS FAILED\n");
    return failures == 0 ? 0 : 1;
} catch (const std::exception& e) {
    std::cerr << "custom_store: " << e.what() << "\n";
    return 2;
}
